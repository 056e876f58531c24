package worker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
)

// Source is what the worker needs of a durable queue.
type Source interface {
	// Receive returns at most max messages; see sources.Source.
	Receive(ctx context.Context, max int) ([]sources.Message, error)
}

// Request is one call to the target API. Path is relative to the target's
// base URL.
type Request struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
}

// Response is the target's answer, classified.
type Response struct {
	Status  int
	Header  http.Header
	Body    []byte // capped by the target
	Outcome limiter.Outcome
}

// Target calls the API. Send returns an error only when there is no
// response: an *InvalidJobError when the request cannot be made on this
// target (it was not sent; the job is dead-lettered), any other error is a
// network error or a timeout (the job is retried).
type Target interface {
	Send(ctx context.Context, req Request) (Response, error)
}

// Checker is implemented by targets that can tell, without sending it,
// that a request cannot be made (a path that would leave the target, a
// header that cannot be sent). The worker checks each job before it waits
// for units; an error dead-letters the job with ReasonInvalidRequest.
type Checker interface {
	Check(req Request) error
}

// Limiter grants units before each attempt; *limiter.Limiter is one. Wait
// blocks until the units are granted, or fails: with ctx done (the worker
// is shutting down), or because the limiter rejected the request (queue
// full, waited too long). Observe reports the outcome of the call a ticket
// allowed.
type Limiter interface {
	Wait(ctx context.Context, units float64) (limiter.Ticket, error)
	Observe(t limiter.Ticket, o limiter.Outcome)
}

// Output receives result and dead-letter records. Publish returns once the
// record is durably accepted. The key is the message id.
type Output interface {
	Publish(ctx context.Context, key string, data []byte) error
}

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
	// never less than the response's Retry-After. Defaults 1s and 30s.
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
	// SettleTimeout bounds each Ack, Nak, Term and output publish.
	// Default 30s.
	SettleTimeout time.Duration
	// ResultHeaders are the response headers copied into result records.
	ResultHeaders []string
	// BodyExcerptBytes is the length of the response body excerpt in a
	// dead-letter record. Default 1024.
	BodyExcerptBytes int
	// Jobs says how messages are decoded.
	Jobs JobsConfig
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

// Validate reports every option that breaks its rule. Field names are as
// in the config file.
func (c Config) Validate() error {
	var errs []error
	neg := func(field string, v int64, shown any) {
		if v < 0 {
			errs = append(errs, fmt.Errorf("worker: %s: must be > 0, got %v", field, shown))
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
			errs = append(errs, fmt.Errorf("worker: %s: must be <= %d, got %d", b.field, b.max, b.v))
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
		errs = append(errs, fmt.Errorf("worker: backoff.cap: must be >= backoff.base (%v), got %v", c.BackoffBase, c.BackoffCap))
	}
	for i, h := range c.ResultHeaders {
		if !httpguts.ValidHeaderFieldName(h) {
			errs = append(errs, fmt.Errorf("worker: result_headers[%d]: must be a header name, got %q", i, h))
		}
	}
	if err := c.Jobs.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Deps are the worker's collaborators. Source and Target are required.
// Limiter nil grants every attempt at once; Results nil publishes no
// results; DeadLetters nil makes a dead letter a Term with its reason
// (the record is only logged). Log nil discards; Metrics nil records
// nothing.
type Deps struct {
	Source      Source
	Target      Target
	Limiter     Limiter
	Results     Output
	DeadLetters Output
	Log         *slog.Logger
	Metrics     *Metrics
}

// Worker drains a source into a target. Build it with New and run it with
// Run; it is not reusable after Run returns.
type Worker struct {
	cfg     Config
	dec     *Decoder
	deps    Deps
	log     *slog.Logger
	metrics *Metrics

	// jitter returns a random duration in [0, n]; replaced in tests.
	jitter func(n time.Duration) time.Duration
}

// New checks cfg and returns a worker.
func New(cfg Config, deps Deps) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Source == nil || deps.Target == nil {
		return nil, errors.New("worker: a source and a target are required")
	}
	cfg = cfg.withDefaults()
	dec, err := NewDecoder(cfg.Jobs)
	if err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Worker{
		cfg:     cfg,
		dec:     dec,
		deps:    deps,
		log:     log.With("worker", cfg.ID),
		metrics: deps.Metrics,
		jitter: func(n time.Duration) time.Duration {
			if n <= 0 {
				return 0
			}
			return time.Duration(rand.Int64N(int64(n) + 1))
		},
	}, nil
}

// Config returns the worker's configuration with defaults applied.
func (w *Worker) Config() Config { return w.cfg }

// Run pulls and handles jobs until ctx is done, then shuts down: it stops
// pulling, lets requests already sent finish for up to ShutdownTimeout,
// naks with no delay the jobs still waiting (for units or in backoff), and
// returns nil once every job it held is settled. It returns an error only
// if the worker cannot run at all.
func (w *Worker) Run(ctx context.Context) error {
	// Requests in flight outlive ctx by ShutdownTimeout.
	reqCtx, cancelReqs := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelReqs()
	var grace *time.Timer
	var graceMu sync.Mutex
	stopAfter := context.AfterFunc(ctx, func() {
		graceMu.Lock()
		grace = time.AfterFunc(w.cfg.ShutdownTimeout, cancelReqs)
		graceMu.Unlock()
	})
	defer func() {
		stopAfter()
		graceMu.Lock()
		if grace != nil {
			grace.Stop()
		}
		graceMu.Unlock()
	}()

	slots := make(chan struct{}, w.cfg.MaxInFlight) // one token per job held
	// Pull in batches of at least half of MaxInFlight: one receive
	// per freed slot would cost a round trip to the queue per job.
	batch := max(1, w.cfg.MaxInFlight/2)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		// Wait for room for a batch, then take all the room there is.
		room := 0
		for room < batch {
			select {
			case slots <- struct{}{}:
				room++
			case <-ctx.Done():
				for range room {
					<-slots
				}
				return nil
			}
		}
	fill:
		for room < w.cfg.MaxInFlight {
			select {
			case slots <- struct{}{}:
				room++
			default:
				break fill
			}
		}
		msgs, err := w.deps.Source.Receive(ctx, room)
		for range room - min(room, len(msgs)) {
			<-slots
		}
		if len(msgs) > room {
			// The source broke its contract: hand the extra messages back.
			w.log.Error("source returned more messages than asked", "asked", room, "got", len(msgs))
			for _, m := range msgs[room:] {
				w.release(&delivery{msg: m, job: Job{ID: m.ID()}}, w.log)
			}
			msgs = msgs[:room]
		}
		for _, m := range msgs {
			w.metrics.addInFlight(1)
			wg.Go(func() {
				defer func() { <-slots }()
				defer w.metrics.addInFlight(-1)
				w.handle(ctx, reqCtx, m)
			})
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			w.log.Warn("receive failed; retrying", "err", err)
			select {
			case <-time.After(w.cfg.BackoffBase):
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// delivery is the state of one message while the worker holds it.
type delivery struct {
	msg        sources.Message
	job        Job
	received   time.Time
	attempts   int
	lastStatus int
	lastBody   []byte
	lastErr    error
	retryAfter time.Duration
}

// handle takes one message from receipt to settlement.
func (w *Worker) handle(ctx, reqCtx context.Context, m sources.Message) {
	d := &delivery{msg: m, received: time.Now()}
	stopKeepAlive := w.keepAlive(m)

	job, err := w.dec.Decode(m.ID(), m.Headers(), m.Data())
	d.job = job
	if err != nil {
		stopKeepAlive()
		w.deadLetter(ctx, d, err)
		return
	}
	if c, ok := w.deps.Target.(Checker); ok {
		if err := c.Check(job.request()); err != nil {
			stopKeepAlive()
			var ij *InvalidJobError
			if !errors.As(err, &ij) {
				err = &InvalidJobError{Reason: ReasonInvalidRequest, Detail: err.Error()}
			}
			w.deadLetter(ctx, d, err)
			return
		}
	}
	w.attemptLoop(ctx, reqCtx, d, stopKeepAlive)
}

func (j Job) request() Request {
	return Request{Method: j.Method, Path: j.Path, Header: j.Header, Body: j.Body}
}

// attemptLoop runs the attempts of one delivery and settles it.
func (w *Worker) attemptLoop(ctx, reqCtx context.Context, d *delivery, stopKeepAlive func()) {
	job := d.job
	log := w.log.With("job", job.ID, "type", job.Type)
	for {
		var observe func(limiter.Outcome)
		if lim := w.deps.Limiter; lim != nil {
			ticket, err := lim.Wait(ctx, job.Cost)
			if err != nil {
				stopKeepAlive()
				if ctx.Err() != nil {
					w.release(d, log)
					return
				}
				log.Debug("limiter rejected the job", "units", job.Cost, "err", err)
				w.nak(ctx, d, w.cfg.RejectedDelay, OutcomeRejected, log)
				return
			}
			observe = func(o limiter.Outcome) { lim.Observe(ticket, o) }
		}
		d.attempts++
		start := time.Now()
		resp, err := w.deps.Target.Send(reqCtx, job.request())
		var ij *InvalidJobError
		if errors.As(err, &ij) {
			// Never sent, so there is no outcome to report: dead-letter the job.
			stopKeepAlive()
			w.deadLetter(ctx, d, err)
			return
		}
		if err != nil {
			resp = Response{Outcome: limiter.Outcome{Kind: limiter.NetworkError}}
		}
		if observe != nil {
			observe(resp.Outcome)
		}
		w.metrics.attempt(resp.Outcome.Kind.String(), resp.Status, time.Since(start).Seconds())
		d.lastStatus, d.lastBody, d.lastErr, d.retryAfter = resp.Status, resp.Body, err, resp.Outcome.RetryAfter
		log.Debug("attempt", "attempt", d.attempts, "status", resp.Status, "result", resp.Outcome.Kind.String(), "units", job.Cost)

		switch resp.Outcome.Kind {
		case limiter.Success:
			stopKeepAlive()
			w.succeed(ctx, d, resp, log)
			return
		case limiter.ClientError:
			stopKeepAlive()
			w.deadLetter(ctx, d, fmt.Errorf("worker: target answered %d", resp.Status))
			return
		}
		// Throttle, 5xx, network error or timeout: retry, redeliver or give up.
		if ctx.Err() != nil {
			stopKeepAlive()
			w.release(d, log)
			return
		}
		if d.attempts >= w.cfg.MaxAttempts {
			stopKeepAlive()
			w.redeliver(ctx, d, log)
			return
		}
		wait := max(d.retryAfter, w.backoff(d.attempts, w.cfg.BackoffCap))
		log.Debug("backing off", "attempt", d.attempts, "status", resp.Status, "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			stopKeepAlive()
			w.release(d, log)
			return
		}
	}
}

// backoff is exponential with full jitter: a random duration in
// [0, min(limit, BackoffBase·2^(n-1))].
func (w *Worker) backoff(n int, limit time.Duration) time.Duration {
	ceil := w.cfg.BackoffBase
	for i := 1; i < n && ceil < limit; i++ {
		ceil *= 2
	}
	return w.jitter(min(ceil, limit))
}

// keepAlive extends m's ack deadline every AckWait/3 until the returned
// function is called; once that returns, no further InProgress is made.
func (w *Worker) keepAlive(m sources.Message) (stop func()) {
	interval := w.cfg.AckWait / 3
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	defer mu.Unlock()
	t = time.AfterFunc(interval, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), interval)
		if err := m.InProgress(ctx); err != nil {
			w.log.Warn("extending the ack deadline failed", "job", m.ID(), "err", err)
		}
		cancel()
		t.Reset(interval)
	})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			stopped = true
			t.Stop()
		}
	}
}

func (w *Worker) settleCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), w.cfg.SettleTimeout)
}

// typeLabel bounds the type label to the configured types.
func (w *Worker) typeLabel(t string) string {
	if _, ok := w.cfg.Jobs.Types[t]; ok || t == w.cfg.Jobs.DefaultType {
		return t
	}
	return "other"
}

// succeed publishes the result (when configured), then acks.
func (w *Worker) succeed(ctx context.Context, d *delivery, resp Response, log *slog.Logger) {
	sctx, cancel := w.settleCtx(ctx)
	defer cancel()
	if w.deps.Results != nil {
		res := newResult(d.job, resp, w.cfg.ResultHeaders)
		data, err := json.Marshal(res)
		if err == nil {
			data, err = fitResult(w.deps.Results, recordKey(d.msg), &res, resp.Body, data)
		}
		if err == nil {
			err = w.deps.Results.Publish(sctx, recordKey(d.msg), data)
		}
		if err != nil {
			log.Error("publishing the result failed; the job will be redelivered", "status", resp.Status, "err", err)
			w.nakAfterOutputFailure(sctx, d, log)
			return
		}
	}
	if err := d.msg.Ack(sctx); err != nil {
		log.Error("ack failed; the queue will redeliver the job", "status", resp.Status, "err", err)
		w.metrics.job(OutcomeUnsettled, w.typeLabel(d.job.Type))
		return
	}
	log.Debug("job done", "status", resp.Status, "attempts", d.attempts)
	w.metrics.job(OutcomeSucceeded, w.typeLabel(d.job.Type))
}

// redeliver naks a job whose attempts all failed with a retryable outcome,
// or dead-letters it on its last allowed delivery.
func (w *Worker) redeliver(ctx context.Context, d *delivery, log *slog.Logger) {
	if d.msg.DeliveryCount() >= w.cfg.MaxDeliveries {
		cause := fmt.Sprintf("worker: %d deliveries, last status %d", d.msg.DeliveryCount(), d.lastStatus)
		if d.lastErr != nil {
			cause = fmt.Sprintf("worker: %d deliveries, last error: %v", d.msg.DeliveryCount(), d.lastErr)
		}
		w.deadLetter(ctx, d, &deadLetterCause{reason: ReasonMaxDeliveries, detail: cause})
		return
	}
	delay := min(max(d.retryAfter, w.backoff(d.msg.DeliveryCount(), w.cfg.MaxRedeliveryDelay)), w.cfg.MaxRedeliveryDelay)
	w.nak(ctx, d, delay, OutcomeRedelivered, log)
}

// release naks a job with no delay at shutdown, so another worker takes it.
func (w *Worker) release(d *delivery, log *slog.Logger) {
	w.nak(context.Background(), d, 0, OutcomeReleased, log)
}

func (w *Worker) nak(ctx context.Context, d *delivery, delay time.Duration, outcome string, log *slog.Logger) {
	sctx, cancel := w.settleCtx(ctx)
	defer cancel()
	if err := d.msg.Nak(sctx, delay); err != nil {
		log.Error("nak failed; the queue will redeliver the job after its ack deadline", "err", err)
		w.metrics.job(OutcomeUnsettled, w.typeLabel(d.job.Type))
		return
	}
	log.Debug("job naked", "delay", delay, "status", d.lastStatus, "outcome", outcome)
	w.metrics.job(outcome, w.typeLabel(d.job.Type))
}

// nakAfterOutputFailure naks a job whose record could not be published.
func (w *Worker) nakAfterOutputFailure(ctx context.Context, d *delivery, log *slog.Logger) {
	delay := w.backoff(d.msg.DeliveryCount(), w.cfg.BackoffCap)
	if err := d.msg.Nak(ctx, delay); err != nil {
		log.Error("nak failed; the queue will redeliver the job after its ack deadline", "err", err)
	}
	w.metrics.job(OutcomeUnsettled, w.typeLabel(d.job.Type))
}

// recordKey is the output key of a message's records: its message id,
// which names this enqueued message (the job id as published, or a
// replay's own id), so that a record published again after a crash is
// deduplicated while a replayed job's record is not taken for the first.
func recordKey(m sources.Message) string { return m.ID() }

// deadLetterCause is a dead-letter reason the worker decides itself.
type deadLetterCause struct{ reason, detail string }

func (c *deadLetterCause) Error() string { return c.detail }

// deadLetter publishes the job's dead-letter record, waits for it to be
// confirmed, and only then terminates the message. If the record cannot be
// published the message is naked, so it is not lost.
func (w *Worker) deadLetter(ctx context.Context, d *delivery, cause error) {
	rec := DeadLetter{
		ID:          d.job.ID,
		Type:        d.job.Type,
		Status:      d.lastStatus,
		BodyExcerpt: excerpt(d.lastBody, w.cfg.BodyExcerptBytes),
		Attempts:    d.attempts,
		Deliveries:  d.msg.DeliveryCount(),
		FirstAt:     d.received.UTC(),
		LastAt:      time.Now().UTC(),
		Worker:      w.cfg.ID,
		Headers:     d.msg.Headers(),
	}
	if rec.ID == "" {
		rec.ID = d.msg.ID()
	}
	var ij *InvalidJobError
	var dc *deadLetterCause
	switch {
	case errors.As(cause, &ij):
		rec.Reason, rec.Detail = ij.Reason, ij.Detail
	case errors.As(cause, &dc):
		rec.Reason, rec.Detail = dc.reason, dc.detail
	default:
		rec.Reason, rec.Detail = ReasonClientError, cause.Error()
	}
	limit := w.cfg.Jobs.MaxEnvelopeBytes
	if rec.Reason == ReasonTooLarge {
		limit = min(limit, 4096)
	}
	rec.setPayload(d.msg.Data(), limit)
	log := w.log.With("job", rec.ID, "type", rec.Type)

	sctx, cancel := w.settleCtx(ctx)
	defer cancel()
	if w.deps.DeadLetters != nil {
		data, err := json.Marshal(rec)
		if err == nil {
			data, err = fitRecord(w.deps.DeadLetters, recordKey(d.msg), &rec, d.msg.Data(), data)
		}
		if err == nil {
			err = w.deps.DeadLetters.Publish(sctx, recordKey(d.msg), data)
		}
		if err != nil {
			log.Error("publishing the dead letter failed; the job will be redelivered", "reason", rec.Reason, "err", err)
			w.nakAfterOutputFailure(sctx, d, log)
			return
		}
	}
	if err := d.msg.Term(sctx, rec.Reason); err != nil {
		log.Error("term failed; the queue will redeliver the job", "reason", rec.Reason, "err", err)
		w.metrics.job(OutcomeUnsettled, w.typeLabel(rec.Type))
		return
	}
	log.Warn("job dead-lettered", "reason", rec.Reason, "status", rec.Status, "attempts", rec.Attempts, "deliveries", rec.Deliveries)
	w.metrics.job(OutcomeDeadLettered, w.typeLabel(rec.Type))
}
