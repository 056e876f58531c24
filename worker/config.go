package worker

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/field"
)

// Defaults for the zero fields of Config.
const (
	DefaultMaxInFlight        = 64
	DefaultMaxAttempts        = 4
	DefaultBackoffBase        = time.Second
	DefaultBackoffCap         = 30 * time.Second
	DefaultMaxDeliveries      = 10
	DefaultMaxRedeliveryDelay = 10 * time.Minute
	DefaultRejectedDelay      = 2 * time.Second
	DefaultShutdownTimeout    = 30 * time.Second
	DefaultAckWait            = 30 * time.Second
	DefaultBodyExcerptBytes   = 1024
	DefaultSettleTimeout      = 30 * time.Second
)

// Upper bounds of the counts in Config: larger values are errors, since
// they only stall the worker (a slot loop of billions of turns, a job
// retried for days) or exhaust its memory.
const (
	MaxMaxInFlight      = 10000
	MaxMaxAttempts      = 100
	MaxMaxDeliveries    = 1000
	MaxBodyExcerptBytes = 1 << 20
)

// MaxRedeliveryDelay is the longest Config.MaxRedeliveryDelay Validate
// accepts.
const MaxRedeliveryDelay = 12 * time.Hour

// Config holds the worker's options. The zero value takes every default.
type Config struct {
	// ID names this worker in dead-letter records and logs; default
	// hostname-pid.
	ID string
	// MaxInFlight is the most jobs held at once (received, not settled);
	// the worker asks the source only for the room it has. Default 64.
	MaxInFlight int
	// MaxAttempts is the most calls to the target for one delivery of a
	// job. Default 4.
	MaxAttempts int
	// BackoffBase and BackoffCap shape the wait between attempts:
	// exponential with full jitter, a random time in
	// [0, min(BackoffCap, BackoffBase·2^(n-1))] after the n-th attempt, and
	// never less than the response's Retry-After. No wait between two
	// attempts exceeds BackoffCap: a longer Retry-After hands the job back
	// to the queue with that delay (capped at MaxRedeliveryDelay), freeing
	// its slot. Defaults 1s and 30s.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// MaxDeliveries: a job whose attempts all fail with a throttle, a 5xx
	// or a network error is dead-lettered once its delivery count reaches
	// MaxDeliveries; before that it is naked with a delay of
	// max(Retry-After, backoff by delivery count) capped at
	// MaxRedeliveryDelay. Defaults 10 and 10m.
	MaxDeliveries      int
	MaxRedeliveryDelay time.Duration
	// RejectedDelay is the Nak delay of a job the limiter rejected.
	// Default 2s.
	RejectedDelay time.Duration
	// ShutdownTimeout is how long requests already sent may run on after
	// Run's context is done. Default 30s.
	ShutdownTimeout time.Duration
	// AckWait is the source's ack deadline; the worker extends the
	// deadline of every job it holds every AckWait/3. Default 30s.
	AckWait time.Duration
	// SettleTimeout bounds each Ack, Nak, Term and output publish; one
	// on a job's path may get as little as 15/16 of it (a handler's jobs
	// share a context while it has that much left). Default 30s.
	SettleTimeout time.Duration
	// ResultHeaders are the response headers copied into result records.
	ResultHeaders []string
	// SuccessStatuses are the 3xx statuses that count as a success
	// (target.success_statuses). Redirects are never followed: any other
	// 3xx is dead-lettered with ReasonRedirect, since the target never
	// handled the job.
	SuccessStatuses []int
	// BodyExcerptBytes is the length of the response body excerpt in a
	// dead-letter record. Default 1024.
	BodyExcerptBytes int
	// Jobs says how messages are decoded.
	Jobs JobsConfig
	// ExitWhenEmpty makes Run return once a receive finds nothing, the
	// worker holds no job and, when the source can report its state, the
	// queue holds none (none waiting, none delivered and unsettled): for
	// batch runs (`sluice run --exit-when-empty`).
	ExitWhenEmpty bool
}

func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	defInt := func(i *int, v int) {
		if *i == 0 {
			*i = v
		}
	}
	if c.ID == "" {
		host, _ := os.Hostname()
		if host == "" {
			host = "worker"
		}
		c.ID = host + "-" + strconv.Itoa(os.Getpid())
	}
	defInt(&c.MaxInFlight, DefaultMaxInFlight)
	defInt(&c.MaxAttempts, DefaultMaxAttempts)
	defInt(&c.MaxDeliveries, DefaultMaxDeliveries)
	defInt(&c.BodyExcerptBytes, DefaultBodyExcerptBytes)
	def(&c.BackoffBase, DefaultBackoffBase)
	def(&c.BackoffCap, DefaultBackoffCap)
	def(&c.MaxRedeliveryDelay, DefaultMaxRedeliveryDelay)
	def(&c.RejectedDelay, DefaultRejectedDelay)
	def(&c.ShutdownTimeout, DefaultShutdownTimeout)
	def(&c.AckWait, DefaultAckWait)
	def(&c.SettleTimeout, DefaultSettleTimeout)
	c.Jobs = c.Jobs.withDefaults()
	return c
}

// Validate reports every option that breaks its rule, each as a
// *field.Error named as in the config file's worker section; the jobs
// options are under "jobs." and ResultHeaders is "result_headers".
func (c Config) Validate() error {
	var errs []error
	neg := func(name string, v int64, shown any) {
		if v < 0 {
			errs = append(errs, field.Invalid(name, "must be > 0, got %v", shown))
		}
	}
	neg("max_in_flight", int64(c.MaxInFlight), c.MaxInFlight)
	neg("max_attempts", int64(c.MaxAttempts), c.MaxAttempts)
	neg("max_deliveries", int64(c.MaxDeliveries), c.MaxDeliveries)
	neg("body_excerpt_bytes", int64(c.BodyExcerptBytes), c.BodyExcerptBytes)
	for _, b := range []struct {
		field  string
		v, max int
	}{
		{"max_in_flight", c.MaxInFlight, MaxMaxInFlight}, {"max_attempts", c.MaxAttempts, MaxMaxAttempts},
		{"max_deliveries", c.MaxDeliveries, MaxMaxDeliveries}, {"body_excerpt_bytes", c.BodyExcerptBytes, MaxBodyExcerptBytes},
	} {
		if b.v > b.max {
			errs = append(errs, field.Invalid(b.field, "must be <= %d, got %d", b.max, b.v))
		}
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"backoff.base", c.BackoffBase}, {"backoff.cap", c.BackoffCap},
		{"max_redelivery_delay", c.MaxRedeliveryDelay}, {"rejected_delay", c.RejectedDelay},
		{"shutdown_timeout", c.ShutdownTimeout}, {"ack_wait", c.AckWait}, {"settle_timeout", c.SettleTimeout},
	} {
		neg(d.field, int64(d.v), d.v)
	}
	if c.BackoffBase > 0 && c.BackoffCap > 0 && c.BackoffCap < c.BackoffBase {
		errs = append(errs, field.Invalid("backoff.cap", "must be >= backoff.base (%v), got %v", c.BackoffBase, c.BackoffCap))
	}
	if c.MaxRedeliveryDelay > MaxRedeliveryDelay {
		errs = append(errs, field.Invalid("max_redelivery_delay", "must be <= %v, got %v", MaxRedeliveryDelay, c.MaxRedeliveryDelay))
	}
	for i, h := range c.ResultHeaders {
		if !httpguts.ValidHeaderFieldName(h) {
			errs = append(errs, field.Invalid(fmt.Sprintf("result_headers[%d]", i), "must be a header name, got %q", h))
		}
	}
	errs = append(errs, field.Under("jobs", c.Jobs.Validate()))
	return errors.Join(errs...)
}
