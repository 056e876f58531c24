package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
)

// delivery is the state of one message while the worker holds it.
type delivery struct {
	msg        sources.Message
	job        Job
	received   time.Time
	attempts   int
	lastStatus int
	lastBody   []byte
	lastErr    error
	// invalid is the detail of an invalid job (with Decision.Reason).
	invalid string
	// reason is why the job was dead-lettered, once it is.
	reason Reason
	// trace is the delivery's trace; zero for a message handed back
	// unread.
	trace jobTrace
	// typeLabel is the job's type as metrics label it (see typeLabel).
	typeLabel string
	// log is the job's logger, built by jobLog on the first line.
	log *slog.Logger
	// dec and resp: the decision taken on the last attempt, and the
	// response that settling the job uses.
	dec     Decision
	resp    call.Response
	sendErr error // what Target.Send returned with resp
	// keep: the delivery's place in the keeper's list (keepalive.go).
	keep keepEntry
	// settleCtx is the handler's settle context, nil outside a handler.
	settleCtx *settleContext
}

// handle takes one message from receipt to settlement: it decides, with
// the ack deadline kept alive, then performs the decision once.
//
// The functions between a handler and the target's Send (handle, deliver,
// attempt) keep small frames, and the steps that need room (decoding,
// checks, recording an attempt, settling) run in functions of their own
// that return before the call: the deepest path of a job, a JSON decode or
// net/http's round trip, needs about 5 KB of stack, and a handler's 8 KB
// (see handlers) holds it. With the frames of a call stacked on those of
// decoding and settling it needed more than 8 KB, and each handler copied
// its stack to one of 16 KB.
func (w *Worker) handle(ctx context.Context, h *handler, m sources.Message) {
	d := w.begin(m)
	d.settleCtx = &h.settle
	w.deliver(ctx, h.reqCtx, d)
	w.finish(ctx, d)
}

// begin starts the delivery of m: its trace, and its ack deadline kept
// alive until finish.
//
//go:noinline
func (w *Worker) begin(m sources.Message) *delivery {
	now := time.Now()
	d := &delivery{msg: m, received: now, trace: w.startJob(m.ID(), m.Headers(), m.DeliveryCount())}
	w.keeper.add(d, now)
	return d
}

// finish stops keeping d alive and performs the decision taken on it.
//
//go:noinline
func (w *Worker) finish(ctx context.Context, d *delivery) {
	w.keeper.remove(d)
	w.settleWith(ctx, d, d.dec, d.resp)
}

// deliver decodes and checks the job, then runs its attempts until a
// decision settles it, in d.dec. Only the waits and the calls happen here.
func (w *Worker) deliver(ctx, reqCtx context.Context, d *delivery) {
	if !w.accept(d) {
		return
	}
	for w.attempt(ctx, reqCtx, d) && w.backOff(ctx, d) {
	}
}

// accept decodes d's job and checks that it can be sent; if not, d.dec
// dead-letters it.
//
//go:noinline
func (w *Worker) accept(d *delivery) bool {
	job, err := w.dec.Decode(d.msg.ID(), d.msg.Headers(), d.msg.Data())
	d.job = job
	d.typeLabel = w.typeLabel(job.Type)
	d.trace.setJob(job.ID, d.typeLabel)
	if err == nil {
		if c, ok := w.deps.Target.(Checker); ok {
			err = c.Check(job.request())
		}
	}
	if err == nil {
		if err = w.checkCost(job); err != nil {
			w.jobLog(d).Warn("job cost above the limiter's cost bound; dead-lettering it", "units", job.Cost, "err", err)
		}
	}
	if err != nil {
		d.dec = w.invalid(d, err)
		return false
	}
	return true
}

// backOff waits d.dec.Delay before the next attempt. If the worker stops
// meanwhile, it decides again, shutting down, and returns false.
//
//go:noinline
func (w *Worker) backOff(ctx context.Context, d *delivery) bool {
	if w.debug() {
		w.jobLog(d).Debug("backing off", "attempt", d.attempts, "status", d.resp.Status, "wait", d.dec.Delay)
	}
	t := time.NewTimer(d.dec.Delay)
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		t.Stop()
		d.dec = Decide(w.cfg, w.facts(ctx, d, StepCalled, d.resp.Outcome)) // shutting down
		return false
	}
}

// attempt waits for the job's units and calls the target once, then
// decides on the facts of the attempt (d.dec, d.resp). It
// reports whether to retry after d.dec.Delay.
func (w *Worker) attempt(ctx, reqCtx context.Context, d *delivery) bool {
	ticket, ok := w.grant(ctx, d)
	if !ok {
		return false
	}
	d.attempts++
	start := time.Now()
	actx, endSpan := d.trace.startAttempt(reqCtx, d.attempts, d.job.Method)
	d.resp, d.sendErr = w.deps.Target.Send(actx, d.job.request())
	return w.called(ctx, d, ticket, start, endSpan)
}

// grant waits for the units of d's job. When the limiter rejects the job
// (or the worker stops meanwhile), d.dec says what to do with it.
//
//go:noinline
func (w *Worker) grant(ctx context.Context, d *delivery) (limiter.Ticket, bool) {
	lim := w.deps.Limiter
	if lim == nil {
		return limiter.Ticket{}, true
	}
	ticket, err := lim.Wait(ctx, d.job.Cost)
	if err == nil {
		return ticket, true
	}
	if ctx.Err() == nil && w.debug() {
		w.jobLog(d).Debug("limiter rejected the job", "units", d.job.Cost, "err", err)
	}
	d.resp, d.sendErr = call.Response{}, nil
	d.dec = Decide(w.cfg, w.facts(ctx, d, StepRejected, call.Outcome{}))
	return ticket, false
}

// called records the attempt that started at start, whose response and
// error Send left in d, and decides on it (see attempt).
//
//go:noinline
func (w *Worker) called(ctx context.Context, d *delivery, ticket limiter.Ticket, start time.Time, endSpan func(status int, result string, err error)) bool {
	resp, err := &d.resp, d.sendErr
	var se *call.StatusError
	switch {
	case isInvalid(err):
		// Never sent, so there is no outcome to report.
		endSpan(0, ReasonInvalidRequest.String(), err)
		d.dec = w.invalid(d, err)
		*resp = call.Response{}
		return false
	case err != nil && !errors.As(err, &se):
		// No usable answer; the status stays when the headers arrived
		// before the failure (a body that stalled).
		*resp = call.Response{Status: resp.Status, Outcome: call.Outcome{Kind: call.NetworkError}}
	default:
		err = nil // the response says it all
	}
	endSpan(resp.Status, resp.Outcome.Kind.String(), err)
	if lim := w.deps.Limiter; lim != nil {
		lim.Observe(ticket, resp.Outcome)
	}
	end := time.Now()
	w.attempted(resp.Outcome.Kind, resp.Status, end.Sub(start).Seconds())
	if n, ok := w.health.observe(end, resp.Outcome.Kind, resp.Status, err); ok {
		n.log(w.log)
	}
	d.lastStatus, d.lastBody, d.lastErr = resp.Status, resp.Body, err
	if w.debug() {
		w.jobLog(d).Debug("attempt", "attempt", d.attempts, "status", resp.Status, "result", resp.Outcome.Kind.String(), "units", d.job.Cost)
	}
	d.dec = Decide(w.cfg, w.facts(ctx, d, StepCalled, resp.Outcome))
	return d.dec.Action == ActionRetry
}

// facts are the facts of d's delivery after a step.
func (w *Worker) facts(ctx context.Context, d *delivery, step Step, o call.Outcome) Facts {
	return Facts{Step: step, Call: o, Attempts: d.attempts, Deliveries: d.msg.DeliveryCount(),
		ShuttingDown: ctx.Err() != nil, Jitter: w.jitter()}
}

// costBounder is a limiter that tells the most units one request may
// take (*limiter.Limiter: max_units_per_minute over max_wait).
type costBounder interface {
	CostBound() float64
}

// checkCost returns a bad_cost *InvalidJobError for a job that costs more
// than the limiter's cost bound: it could never be paid for within
// max_wait, and would hold every later job back.
func (w *Worker) checkCost(job Job) error {
	cb, ok := w.deps.Limiter.(costBounder)
	if !ok {
		return nil
	}
	if bound := cb.CostBound(); job.Cost > bound {
		return &InvalidJobError{Reason: ReasonBadCost,
			Detail: fmt.Sprintf("cost %g is above the limiter's cost bound %g (max_units_per_minute over max_wait)", job.Cost, bound)}
	}
	return nil
}

// isInvalid reports whether err says that a request cannot be made.
func isInvalid(err error) bool {
	if err == nil {
		return false
	}
	var ij *InvalidJobError
	return errors.As(err, &ij) || errors.Is(err, call.ErrInvalidRequest)
}

// invalid decides on a job that cannot be sent: its reason and detail come
// from an *InvalidJobError, else the target refused it (invalid_request).
func (w *Worker) invalid(d *delivery, err error) Decision {
	var ij *InvalidJobError
	reason, detail := ReasonInvalidRequest, err.Error()
	if errors.As(err, &ij) {
		reason, detail = ij.Reason, ij.Detail
	}
	d.invalid = detail
	return Decide(w.cfg, Facts{Step: StepInvalid, Reason: reason})
}

func (j Job) request() call.Request {
	return call.Request{ID: j.ID, Method: j.Method, Path: j.Path, Header: j.Header, Body: j.Body}
}

// jobLog is the logger of the lines about d's job: its id, type and trace
// id. It is built on the first line about the job, once the job is
// decoded: most jobs write none.
func (w *Worker) jobLog(d *delivery) *slog.Logger {
	if d.log != nil {
		return d.log
	}
	id := d.job.ID
	if id == "" {
		id = d.msg.ID()
	}
	if tid := d.trace.traceID(); tid != "" {
		d.log = w.log.With("job", id, "type", d.job.Type, "trace_id", tid)
	} else {
		d.log = w.log.With("job", id, "type", d.job.Type)
	}
	return d.log
}

// debug reports whether debug lines are written, so that a line on every
// job's path costs nothing (its arguments included) when they are not.
func (w *Worker) debug() bool {
	return w.log.Enabled(context.Background(), slog.LevelDebug)
}
