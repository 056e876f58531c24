// Package config is sluice's config file: its format, its defaults and the
// checks that `sluice config validate` and `sluice run` share.
//
// The file is YAML, decoded strictly by internal/schema (an unknown key is an
// error naming its line, with a suggestion). Scalar values may use ${VAR} and
// ${VAR:-default}; $${ is a literal ${. Values taken from the environment and
// target header values are secrets: no error prints them.
//
// Each section converts to its library's config (limiter.Config is decoded
// in place), and each library's Validate holds its own rules; this package
// adds the section path and the line, and holds only the rules that span
// sections. Load runs every check at once and reports every problem.
package config

import (
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sinks/httpapi"
	"github.com/sluicehq/sluice/sinks/pubsubout"
	"github.com/sluicehq/sluice/worker"
)

// Config is the whole config file. Every section and every field is
// optional; what is missing keeps its default (Default).
type Config struct {
	Source      Source  `yaml:"source"`
	Target      Target  `yaml:"target"`
	Jobs        Jobs    `yaml:"jobs"`
	Limiter     Limiter `yaml:"limiter"`
	Worker      Worker  `yaml:"worker"`
	Results     Results `yaml:"results"`
	DeadLetters Output  `yaml:"dead_letters"`
	Metrics     Metrics `yaml:"metrics"`
	Ops         Ops     `yaml:"ops"`
	Log         Log     `yaml:"log"`
	// Observability is where spans are exported (OTLP/HTTP).
	Observability tracing.Config `yaml:"observability"`

	// Lines maps a field path ("limiter.burst") to the line it was set on.
	Lines map[string]int `yaml:"-"`
	// Secrets are values that must never be printed: target header values,
	// NATS passwords and tokens, and every value taken from the environment.
	Secrets []string `yaml:"-"`
}

// Target is the `target:` section: the API the jobs are sent to.
type Target struct {
	BaseURL          string        `yaml:"base_url"`
	Timeout          time.Duration `yaml:"timeout"`
	MaxResponseBytes int64         `yaml:"max_response_bytes"`
	// Headers are set on every request. Their values are secret: they may
	// come from ${ENV} and are never printed.
	Headers                  map[string]string  `yaml:"headers"`
	AllowJobHeaders          []string           `yaml:"allow_job_headers"`
	RetryAfterHeaders        []RetryAfterHeader `yaml:"retry_after_headers"`
	ThrottleStatuses         []int              `yaml:"throttle_statuses"`
	ThrottleStatusesWithWait []int              `yaml:"throttle_statuses_with_wait"`
	MaxRetryAfter            time.Duration      `yaml:"max_retry_after"`
	UserAgent                string             `yaml:"user_agent"`
	// RateLimitHeaders names the quota headers the limiter plans with:
	// none (default), ietf or x-ratelimit; RateLimitReset says how
	// X-RateLimit-Reset reads: delta (default) or unix.
	RateLimitHeaders string `yaml:"rate_limit_headers"`
	RateLimitReset   string `yaml:"rate_limit_reset"`
	// LogURLPath shows URL paths in logs; by default they are secret.
	LogURLPath bool `yaml:"log_url_path"`
	// SuccessStatuses are the 3xx statuses that count as a success; any
	// other 3xx is dead-lettered as redirect (worker.Config.SuccessStatuses).
	SuccessStatuses []int `yaml:"success_statuses"`
	// IdempotencyHeader carries the job id on every attempt; "" sends none.
	IdempotencyHeader string `yaml:"idempotency_header"`
}

// RetryAfterHeader is one entry of target.retry_after_headers.
type RetryAfterHeader struct {
	Name string `yaml:"name"`
	Unit string `yaml:"unit"` // seconds (default), milliseconds or unix
}

// Jobs is the `jobs:` section: how messages become requests.
type Jobs struct {
	Envelope         string             `yaml:"envelope"` // json or raw
	Strict           bool               `yaml:"strict"`
	TrustJobCost     bool               `yaml:"trust_job_cost"`
	MaxEnvelopeBytes int                `yaml:"max_envelope_bytes"`
	DefaultType      string             `yaml:"default_type"`
	Types            map[string]JobType `yaml:"types"`
}

// JobType is one entry of jobs.types.
type JobType struct {
	Method string   `yaml:"method"`
	Path   string   `yaml:"path"`
	Cost   *float64 `yaml:"cost"` // default 1
}

// Limiter is the `limiter:` section: the limiter's own options, and how the
// workers sharing the budget find their share of it.
type Limiter struct {
	limiter.Config `yaml:",inline"`
	Share          Share `yaml:"share"`
}

// Worker is the `worker:` section.
type Worker struct {
	ID                 string        `yaml:"id"`
	MaxInFlight        int           `yaml:"max_in_flight"`
	MaxAttempts        int           `yaml:"max_attempts"`
	Backoff            Backoff       `yaml:"backoff"`
	MaxDeliveries      int           `yaml:"max_deliveries"`
	MaxRedeliveryDelay time.Duration `yaml:"max_redelivery_delay"`
	RejectedDelay      time.Duration `yaml:"rejected_delay"`
	ShutdownTimeout    time.Duration `yaml:"shutdown_timeout"`
}

// Backoff is `worker.backoff:`.
type Backoff struct {
	Base time.Duration `yaml:"base"`
	Cap  time.Duration `yaml:"cap"`
}

// Output kinds accepted in results.kind and dead_letters.kind.
const (
	OutputNone   = "none"
	OutputNATS   = "nats"
	OutputPubSub = "pubsub"
	OutputJSONL  = "jsonl"
)

// Output is the `dead_letters:` section: where records go.
type Output struct {
	Kind    string `yaml:"kind"`
	Subject string `yaml:"subject"` // nats
	Topic   string `yaml:"topic"`   // pubsub
	// Subscription keeps a pubsub output's records (Pub/Sub drops what
	// a topic with no subscription receives); source.pubsub.setup creates
	// it with the topic. Default "<topic id>-records".
	Subscription string `yaml:"subscription"`
	Path         string `yaml:"path"` // jsonl
}

// PubSub is the library config of a pubsub output; setup creates its
// topic and subscription.
func (o Output) PubSub(setup bool) pubsubout.Config {
	return pubsubout.Config{Topic: o.Topic, Subscription: o.Subscription, CreateTopic: setup}
}

// Results is the `results:` section.
type Results struct {
	Kind         string `yaml:"kind"`
	Subject      string `yaml:"subject"`
	Topic        string `yaml:"topic"`
	Subscription string `yaml:"subscription"`
	Path         string `yaml:"path"`
	// Headers are the response headers kept in a result record.
	Headers []string `yaml:"headers"`
}

// Output is where the results go.
func (r Results) Output() Output {
	return Output{Kind: r.Kind, Subject: r.Subject, Topic: r.Topic, Subscription: r.Subscription, Path: r.Path}
}

// Log formats accepted in log.format and --log-format.
const (
	LogFormatAuto = "auto" // text on a terminal, JSON otherwise
	LogFormatText = "text"
	LogFormatJSON = "json"
)

// Log is the `log:` section.
type Log struct {
	Format string `yaml:"format"` // auto, text or json
	Level  string `yaml:"level"`  // debug, info, warn or error
}

// Defaults of the sections this package owns.
const (
	DefaultMaxInFlight = 64
	DefaultJobType     = "default"
)

// Default returns the config of an empty file.
func Default() Config {
	return Config{
		Source: defaultSource(),
		Target: Target{
			Timeout:           httpapi.DefaultTimeout,
			MaxResponseBytes:  httpapi.DefaultMaxResponseBytes,
			MaxRetryAfter:     call.DefaultMaxRetryAfter,
			UserAgent:         httpapi.DefaultUserAgent,
			IdempotencyHeader: httpapi.DefaultIdempotencyHeader,
			RateLimitHeaders:  "none",
			RateLimitReset:    "delta",
		},
		Jobs: Jobs{
			Envelope:         worker.EnvelopeJSON,
			MaxEnvelopeBytes: worker.DefaultMaxEnvelopeBytes,
			DefaultType:      DefaultJobType,
		},
		Limiter: Limiter{Config: limiter.DefaultConfig(), Share: defaultShare()},
		Worker: Worker{
			MaxInFlight:        DefaultMaxInFlight,
			MaxAttempts:        worker.DefaultMaxAttempts,
			Backoff:            Backoff{Base: worker.DefaultBackoffBase, Cap: worker.DefaultBackoffCap},
			MaxDeliveries:      worker.DefaultMaxDeliveries,
			MaxRedeliveryDelay: worker.DefaultMaxRedeliveryDelay,
			RejectedDelay:      worker.DefaultRejectedDelay,
			ShutdownTimeout:    worker.DefaultShutdownTimeout,
		},
		Results:     Results{Kind: OutputNone, Headers: []string{"Content-Type"}},
		DeadLetters: Output{Kind: OutputNATS},
		Metrics:     Metrics{Listen: DefaultOpsListen},
		Ops:         Ops{TargetUnreadyAfter: DefaultTargetUnreadyAfter},
		Log:         Log{Format: LogFormatAuto, Level: "info"},
		Lines:       map[string]int{},
	}
}
