package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicehq/sluice/call"
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
}

// handle takes one message from receipt to settlement: it decides, with
// the ack deadline kept alive, then performs the decision once.
func (w *Worker) handle(ctx, reqCtx context.Context, m sources.Message) {
	d := &delivery{msg: m, received: time.Now(), trace: w.startJob(m.ID(), m.Headers(), m.DeliveryCount())}
	stopKeepAlive := w.keepAlive(m)
	dec, resp := w.deliver(ctx, reqCtx, d)
	stopKeepAlive()
	w.settleWith(ctx, d, dec, resp)
}

// deliver decodes and checks the job, then runs its attempts until a
// decision settles it. Only the waits and the calls happen here.
func (w *Worker) deliver(ctx, reqCtx context.Context, d *delivery) (Decision, call.Response) {
	job, err := w.dec.Decode(d.msg.ID(), d.msg.Headers(), d.msg.Data())
	d.job = job
	d.typeLabel = w.typeLabel(job.Type)
	d.trace.setJob(job.ID, d.typeLabel)
	if err != nil {
		return w.invalid(d, err), call.Response{}
	}
	if c, ok := w.deps.Target.(Checker); ok {
		if err := c.Check(job.request()); err != nil {
			return w.invalid(d, err), call.Response{}
		}
	}
	if err := w.checkCost(job); err != nil {
		w.jobLog(d).Warn("job cost above the limiter's cost bound; dead-lettering it", "units", job.Cost, "err", err)
		return w.invalid(d, err), call.Response{}
	}
	for {
		f, resp := w.attempt(ctx, reqCtx, d)
		if f.Step == StepInvalid {
			return w.invalid(d, resp.err), call.Response{}
		}
		dec := Decide(w.cfg, f)
		if dec.Action != ActionRetry {
			return dec, resp.Response
		}
		w.jobLog(d).Debug("backing off", "attempt", d.attempts, "status", resp.Status, "wait", dec.Delay)
		t := time.NewTimer(dec.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			f.ShuttingDown = true
			return Decide(w.cfg, f), resp.Response
		}
	}
}

// sent is a response with the error Send returned beside it.
type sent struct {
	call.Response
	err error
}

// attempt waits for the job's units and calls the target once, and
// returns the facts of the attempt.
func (w *Worker) attempt(ctx, reqCtx context.Context, d *delivery) (Facts, sent) {
	job := d.job
	facts := func(step Step, o call.Outcome) Facts {
		return Facts{Step: step, Call: o, Attempts: d.attempts, Deliveries: d.msg.DeliveryCount(),
			ShuttingDown: ctx.Err() != nil, Jitter: w.jitter()}
	}
	var observe func(call.Outcome)
	if lim := w.deps.Limiter; lim != nil {
		ticket, err := lim.Wait(ctx, job.Cost)
		if err != nil {
			if ctx.Err() == nil {
				w.jobLog(d).Debug("limiter rejected the job", "units", job.Cost, "err", err)
			}
			return facts(StepRejected, call.Outcome{}), sent{}
		}
		observe = func(o call.Outcome) { lim.Observe(ticket, o) }
	}
	d.attempts++
	start := time.Now()
	actx, endSpan := d.trace.startAttempt(reqCtx, d.attempts, job.Method)
	resp, err := w.deps.Target.Send(actx, job.request())
	var se *call.StatusError
	switch {
	case isInvalid(err):
		// Never sent, so there is no outcome to report.
		endSpan(0, ReasonInvalidRequest.String(), err)
		return Facts{Step: StepInvalid}, sent{err: err}
	case err != nil && !errors.As(err, &se):
		// No usable answer; the status stays when the headers arrived
		// before the failure (a body that stalled).
		resp = call.Response{Status: resp.Status, Outcome: call.Outcome{Kind: call.NetworkError}}
	default:
		err = nil // the response says it all
	}
	endSpan(resp.Status, resp.Outcome.Kind.String(), err)
	if observe != nil {
		observe(resp.Outcome)
	}
	end := time.Now()
	w.attempted(resp.Outcome.Kind, resp.Status, end.Sub(start).Seconds())
	if n, ok := w.health.observe(end, resp.Outcome.Kind, resp.Status, err); ok {
		n.log(w.log)
	}
	d.lastStatus, d.lastBody, d.lastErr = resp.Status, resp.Body, err
	if w.debug() {
		w.jobLog(d).Debug("attempt", "attempt", d.attempts, "status", resp.Status, "result", resp.Outcome.Kind.String(), "units", job.Cost)
	}
	return facts(StepCalled, resp.Outcome), sent{Response: resp, err: err}
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
