package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
)

// Source is what the worker needs of a durable queue.
type Source interface {
	// Receive returns at most max messages; see sources.Source.
	Receive(ctx context.Context, max int) ([]sources.Message, error)
}

// Target calls the API; *httpapi.Sink is one. Send returns the response,
// classified, and an error that is nil, a *call.StatusError (the response
// has a status of 400 or more: it is settled by its Outcome), or says that
// there is no response: an error wrapping call.ErrInvalidRequest (or an
// *InvalidJobError) when the request cannot be made on this target (it was
// not sent; the job is dead-lettered), any other error is a network error
// or a timeout (the job is retried).
type Target interface {
	Send(ctx context.Context, req call.Request) (call.Response, error)
}

// Checker is implemented by targets that can tell, without sending it,
// that a request cannot be made (a path that would leave the target, a
// header that cannot be sent). The worker checks each job before it waits
// for units; an error dead-letters the job with ReasonInvalidRequest (or
// the Reason of an *InvalidJobError).
type Checker interface {
	Check(req call.Request) error
}

// Limiter grants units before each attempt; *limiter.Limiter is one. Wait
// blocks until the units are granted, or fails: with ctx done (the worker
// is shutting down), or because the limiter rejected the request (queue
// full, waited too long). Observe reports the outcome of the call a ticket
// allowed.
type Limiter interface {
	Wait(ctx context.Context, units float64) (limiter.Ticket, error)
	Observe(t limiter.Ticket, o call.Outcome)
}

// Output receives result and dead-letter records. Publish returns once the
// record is durably accepted. The key is the message id.
type Output interface {
	Publish(ctx context.Context, key string, data []byte) error
}

// Deps are the worker's collaborators. Source and Target are required.
// Limiter nil grants every attempt at once; Results nil publishes no
// results; DeadLetters nil makes a dead letter a Term with its reason
// (the record is only logged). Log nil discards; Metrics nil records no
// Prometheus metrics (Stats counts either way). Tracer nil records no span:
// attempts still carry the producer's trace context, or a new trace's, to
// the target (see Tracer).
type Deps struct {
	Source      Source
	Target      Target
	Limiter     Limiter
	Results     Output
	DeadLetters Output
	Log         *slog.Logger
	Metrics     *Metrics
	// Tracer records a span per delivery of a job (a child of the
	// producer's span when the message carries a traceparent header or
	// attribute) and a child span per attempt; the attempt's context
	// goes to Target.Send, whose trace context the target propagates.
	// trace.Tracer of OpenTelemetry; internal/tracing builds one.
	Tracer trace.Tracer
}

// Worker drains a source into a target. Build it with New and run it with
// Run; it is not reusable after Run returns.
type Worker struct {
	cfg     Config
	dec     *Decoder
	deps    Deps
	log     *slog.Logger
	metrics *Metrics
	stats   counters
	// types and children: the metrics' children by label, looked up once.
	types    typeLabels
	children children
	health   targetHealth
	keeper   keeper
	drain    drain // used by Run's goroutine only

	// jitter returns a random number in [0, 1]; replaced in tests.
	jitter func() float64
}

// New checks cfg and returns a worker.
func New(cfg Config, deps Deps) (*Worker, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("worker: %w", err)
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
	w := &Worker{
		cfg:     cfg,
		dec:     dec,
		deps:    deps,
		log:     log.With("worker", cfg.ID),
		metrics: deps.Metrics,
		types:   newTypeLabels(cfg.Jobs),
		jitter:  rand.Float64,
	}
	w.keeper.init(cfg.AckWait/3, w.log)
	w.children.jobs = make([][numOutcomes]lazyCounter, len(w.types.names))
	w.children.finished = make([][numOutcomes]lazyCounter, len(w.types.names))
	return w, nil
}

// Config returns the worker's configuration with defaults applied.
func (w *Worker) Config() Config { return w.cfg }

// Run pulls and handles jobs until ctx is done, then shuts down: it stops
// pulling, lets requests already sent finish for up to ShutdownTimeout,
// naks with no delay the jobs still waiting (for units or in backoff), and
// returns nil once every job it held is settled. With ExitWhenEmpty it
// also returns nil once a receive finds nothing and the queue is empty
// with nothing in flight (see empty). It logs "drained N jobs in T" when
// it first sees the queue empty after a drain, and a summary line when it
// returns. It returns an error only if the worker cannot run at all.
func (w *Worker) Run(ctx context.Context) error {
	start := time.Now()
	defer func() { w.summary(start, time.Now()) }() // after every job is settled
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

	// The keeper outlives the handlers: jobs in flight after ctx is done
	// are kept alive until they are settled.
	defer w.startKeeper()()

	slots := make(chan struct{}, w.cfg.MaxInFlight) // one token per job held
	// Pull in batches of at least half of MaxInFlight: one receive
	// per freed slot would cost a round trip to the queue per job.
	batch := max(1, w.cfg.MaxInFlight/2)
	hs := &handlers{work: make(chan sources.Message), ctx: ctx, reqCtx: reqCtx, timeout: w.cfg.SettleTimeout, handle: func(h *handler, m sources.Message) {
		w.handle(ctx, h, m)
		w.held(-1)
		<-slots
	}}
	defer hs.stop()
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
		w.stats.received.Add(int64(len(msgs)))
		for range room - min(room, len(msgs)) {
			<-slots
		}
		if len(msgs) > 0 {
			w.received(time.Now())
		} else if err == nil && ctx.Err() == nil && w.empty(ctx, time.Now()) && w.cfg.ExitWhenEmpty {
			w.log.Info("queue empty and nothing in flight; exiting (exit when empty)")
			return nil
		}
		if len(msgs) > room {
			// The source broke its contract: hand the extra messages back.
			w.log.Error("source returned more messages than asked", "asked", room, "got", len(msgs))
			for _, m := range msgs[room:] {
				w.settle(&delivery{msg: m, job: Job{ID: m.ID()}}, Decision{Action: ActionRelease, Outcome: OutcomeReleased})
			}
			msgs = msgs[:room]
		}
		for _, m := range msgs {
			w.held(1)
			hs.give(m)
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

// startKeeper starts the keeper's goroutine; stop ends it and waits.
func (w *Worker) startKeeper() (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.keeper.run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

// handlers run the jobs that Run hands them, one at a time each, and live
// until Run returns: at most MaxInFlight of them, each started when a job
// finds none idle. A goroutine per job would grow a new stack for every
// job, as deep as decoding and an HTTP call need (new goroutines start
// smaller), and so would a handler that returned when idle, since Run
// hands out jobs in batches.
type handlers struct {
	work chan sources.Message
	// ctx is Run's; reqCtx is the parent of each handler's own context
	// for requests, so that each request's context joins and leaves the
	// children of its handler's, not those of one context that all
	// handlers share. timeout is the SettleTimeout.
	ctx, reqCtx context.Context
	timeout     time.Duration
	handle      func(h *handler, m sources.Message) // the job's whole path, slot freed
	wg          sync.WaitGroup
}

// handler is what a handler keeps from one job to the next.
type handler struct {
	reqCtx context.Context // see handlers.reqCtx
	settle settleContext
}

// give hands m, which holds a slot, to an idle handler or a new one.
func (h *handlers) give(m sources.Message) {
	select {
	case h.work <- m:
		return
	default:
	}
	first := m // m itself would move to the heap on every call
	h.wg.Go(func() {
		reqCtx, cancel := context.WithCancel(h.reqCtx)
		st := &handler{reqCtx: reqCtx, settle: settleContext{parent: h.ctx, timeout: h.timeout}}
		defer func() {
			st.settle.stop()
			cancel()
		}()
		h.handle(st, first)
		for {
			m, ok := h.next()
			if !ok {
				return
			}
			h.handle(st, m)
		}
	})
}

// idleFrame is the stack a waiting handler holds: the garbage collector
// halves the stack of a goroutine that uses less than a quarter of it
// (less the runtime's 800 bytes), and a handler's next job would grow it
// again. 1.5 KB keeps a handler's 8 KB, which the whole path of a job
// fits in; a handler whose stack grew larger for a
// rare job gives the excess back.
const idleFrame = 1536

// next waits for the next job, with a frame of idleFrame bytes; false
// once stop was called.
//
//go:noinline
func (h *handlers) next() (sources.Message, bool) {
	var frame [idleFrame]byte
	holdFrame(&frame)
	m, ok := <-h.work
	return m, ok
}

// holdFrame makes the compiler keep its argument on the caller's stack.
//
//go:noinline
func holdFrame(*[idleFrame]byte) {}

// stop lets each handler finish its job and waits for them to return.
func (h *handlers) stop() {
	close(h.work)
	h.wg.Wait()
}
