package worker

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sources"
)

// settleWith performs a decision: the one place where a job is acked,
// naked, dead-lettered or released. A release is made even after ctx is
// done (with its own settle timeout), so the job goes back to the queue
// at once.
func (w *Worker) settleWith(ctx context.Context, d *delivery, dec Decision, resp call.Response) {
	switch dec.Action {
	case ActionAck:
		w.succeed(ctx, d, resp)
	case ActionNak:
		w.nak(ctx, d, dec.Delay, dec.Outcome)
	case ActionDeadLetter:
		w.deadLetter(ctx, d, dec.Reason, w.detail(d, dec.Reason))
	case ActionRelease:
		w.nak(context.Background(), d, 0, OutcomeReleased)
	default:
		// ActionRetry is not a settlement: the attempt loop never passes
		// it here. Hand the job back rather than hold it.
		w.jobLog(d).Error("no settlement for the decision; releasing the job", "action", dec.Action.String())
		w.nak(context.Background(), d, 0, OutcomeReleased)
	}
}

// settle performs a decision on a delivery outside the attempt loop.
func (w *Worker) settle(d *delivery, dec Decision) {
	w.settleWith(context.Background(), d, dec, call.Response{})
}

// detail is the dead-letter record's detail for reason.
func (w *Worker) detail(d *delivery, reason Reason) string {
	switch reason {
	case ReasonClientError:
		return fmt.Sprintf("worker: target answered %d", d.lastStatus)
	case ReasonMaxDeliveries:
		if d.lastErr != nil {
			return fmt.Sprintf("worker: %d deliveries, last error: %v", d.msg.DeliveryCount(), d.lastErr)
		}
		return fmt.Sprintf("worker: %d deliveries, last status %d", d.msg.DeliveryCount(), d.lastStatus)
	}
	return d.invalid
}

// settleCtx is the context of one settlement of d with ctx's values and
// SettleTimeout: the handler's, when ctx is Run's.
func (w *Worker) settleCtx(ctx context.Context, d *delivery) (context.Context, context.CancelFunc) {
	if s := d.settleCtx; s != nil && ctx == s.parent {
		return s.get(), noCancel
	}
	return context.WithTimeout(context.WithoutCancel(ctx), w.cfg.SettleTimeout)
}

func noCancel() {}

// settleContext is a handler's context for settlements: its jobs use it
// again while it has at least 15/16 of the timeout left, rather than
// each making a context, and starting and stopping a timer, of its own.
// A handler settles one job at a time, so the one it replaces is no
// longer in use.
type settleContext struct {
	parent  context.Context // Run's: settlements keep its values
	timeout time.Duration
	ctx     context.Context
	cancel  context.CancelFunc
	renew   time.Time // when to make a new one
}

func (s *settleContext) get() context.Context {
	now := time.Now()
	if s.ctx == nil || !now.Before(s.renew) {
		s.stop()
		s.ctx, s.cancel = context.WithTimeout(context.WithoutCancel(s.parent), s.timeout)
		s.renew = now.Add(s.timeout / 16)
	}
	return s.ctx
}

func (s *settleContext) stop() {
	if s.cancel != nil {
		s.cancel()
	}
}

// succeed publishes the result (when configured), then acks.
func (w *Worker) succeed(ctx context.Context, d *delivery, resp call.Response) {
	sctx, cancel := w.settleCtx(ctx, d)
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
			w.jobLog(d).Error("publishing the result failed; the job will be redelivered", "status", resp.Status, "err", err)
			w.nakAfterOutputFailure(sctx, d)
			return
		}
	}
	if err := d.msg.Ack(sctx); err != nil {
		w.jobLog(d).Error("ack failed; the queue will redeliver the job", "status", resp.Status, "err", err)
		w.done(d, OutcomeUnsettled)
		return
	}
	if w.debug() {
		w.jobLog(d).Debug("job done", "status", resp.Status, "attempts", d.attempts)
	}
	w.done(d, OutcomeSucceeded)
}

func (w *Worker) nak(ctx context.Context, d *delivery, delay time.Duration, outcome Outcome) {
	sctx, cancel := w.settleCtx(ctx, d)
	defer cancel()
	if err := d.msg.Nak(sctx, delay); err != nil {
		w.jobLog(d).Error("nak failed; the queue will redeliver the job after its ack deadline", "err", err)
		w.done(d, OutcomeUnsettled)
		return
	}
	w.jobLog(d).Debug("job naked", "delay", delay, "status", d.lastStatus, "outcome", outcome.String())
	w.done(d, outcome)
}

// nakAfterOutputFailure naks a job whose record could not be published,
// with a backoff by delivery count.
func (w *Worker) nakAfterOutputFailure(ctx context.Context, d *delivery) {
	delay := backoff(w.cfg.BackoffBase, d.msg.DeliveryCount(), w.cfg.BackoffCap, w.jitter())
	if err := d.msg.Nak(ctx, delay); err != nil {
		w.jobLog(d).Error("nak failed; the queue will redeliver the job after its ack deadline", "err", err)
	}
	w.done(d, OutcomeUnsettled)
}

// done counts d's job settled with o and ends the delivery's span.
func (w *Worker) done(d *delivery, o Outcome) {
	label := d.typeLabel
	if label == "" {
		label = w.typeLabel(d.job.Type)
	}
	now := time.Now()
	w.settled(o, label, now)
	if o.Finished() {
		w.aged(sources.PublishedAt(d.msg), now)
	}
	d.trace.end(o, d.reason)
}

// recordKey is the output key of a message's records: its message id,
// which names this enqueued message (the job id as published, or a
// replay's own id), so that a record published again after a crash is
// deduplicated while a replayed job's record is not taken for the first.
func recordKey(m sources.Message) string { return m.ID() }

// deadLetter publishes the job's dead-letter record, waits for it to be
// confirmed, and only then terminates the message. If the record cannot be
// published the message is naked, so it is not lost.
func (w *Worker) deadLetter(ctx context.Context, d *delivery, reason Reason, detail string) {
	rec := DeadLetter{
		ID:          d.job.ID,
		Type:        d.job.Type,
		Reason:      reason.String(),
		Detail:      detail,
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
	limit := w.cfg.Jobs.MaxEnvelopeBytes
	if reason == ReasonTooLarge {
		limit = min(limit, 4096)
	}
	rec.setPayload(d.msg.Data(), limit)
	d.reason = reason
	log := w.jobLog(d)

	sctx, cancel := w.settleCtx(ctx, d)
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
			w.nakAfterOutputFailure(sctx, d)
			return
		}
	}
	if err := d.msg.Term(sctx, rec.Reason); err != nil {
		log.Error("term failed; the queue will redeliver the job", "reason", rec.Reason, "err", err)
		w.done(d, OutcomeUnsettled)
		return
	}
	log.Warn("job dead-lettered", "reason", rec.Reason, "status", rec.Status, "attempts", rec.Attempts, "deliveries", rec.Deliveries)
	w.done(d, OutcomeDeadLettered)
}
