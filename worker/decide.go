package worker

import (
	"fmt"
	"slices"
	"time"

	"github.com/sluicehq/sluice/call"
)

// Outcome is how the worker settled a job: the outcome label of
// sluice_jobs_total, and the keys of Stats.Jobs.
type Outcome int

// Job outcomes.
const (
	OutcomeSucceeded    Outcome = iota // acked after a response below 400
	OutcomeDeadLettered                // dead-lettered, then terminated
	OutcomeRedelivered                 // naked with a delay after its attempts failed
	OutcomeRejected                    // naked because the limiter rejected it
	OutcomeReleased                    // naked with no delay at shutdown
	OutcomeUnsettled                   // an output or the queue failed; the queue redelivers it
	numOutcomes
)

var outcomeNames = [...]string{"succeeded", "dead_lettered", "redelivered", "rejected", "released", "unsettled"}

// String returns the outcome's label value: "succeeded", "dead_lettered",
// "redelivered", "rejected", "released" or "unsettled".
func (o Outcome) String() string {
	if o < 0 || o >= numOutcomes {
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
	return outcomeNames[o]
}

// Finished reports whether o ends the job for good (succeeded or
// dead-lettered); the other outcomes hand it back to the queue, to come
// again.
func (o Outcome) Finished() bool { return o == OutcomeSucceeded || o == OutcomeDeadLettered }

// Reason is why a job is dead-lettered. Its String is stable: dead-letter
// records carry it and `sluice dlq replay --reason` filters on it.
type Reason int

// Reasons of an invalid job (the decoder's, and the target's refusal) and
// the reasons the worker decides itself.
const (
	ReasonTooLarge       Reason = iota + 1 // payload over MaxEnvelopeBytes
	ReasonBadJSON                          // not a JSON object, or a field of the wrong type
	ReasonUnknownType                      // strict mode and the type is not configured
	ReasonBadCost                          // cost not a finite number >= 0
	ReasonBodyConflict                     // both body and body_base64
	ReasonBadBodyBase64                    // body_base64 is not standard base64
	ReasonBadMethod                        // method is not an HTTP token
	ReasonBadPath                          // path would leave the target, or is not a path
	ReasonBadHeader                        // a header name or value that cannot be sent
	ReasonInvalidRequest                   // the target refused to build the request
	// ReasonClientError: the target answered with a 4xx that is not a
	// throttle; retrying cannot help.
	ReasonClientError
	// ReasonMaxDeliveries: the job failed with a throttle, a 5xx, a network
	// error or a timeout on its last allowed delivery.
	ReasonMaxDeliveries
	// ReasonRedirect: the target answered a 3xx that is not in
	// SuccessStatuses; redirects are not followed, so the job was not done.
	ReasonRedirect
	numReasons
)

var reasonNames = [...]string{
	"", "envelope_too_large", "bad_json", "unknown_type", "bad_cost", "body_conflict", "bad_body_base64",
	"bad_method", "bad_path", "bad_header", "invalid_request", "client_error", "max_deliveries", "redirect",
}

// String returns the reason as dead-letter records spell it, such as
// "bad_json" or "max_deliveries".
func (r Reason) String() string {
	if r <= 0 || r >= numReasons {
		return fmt.Sprintf("Reason(%d)", int(r))
	}
	return reasonNames[r]
}

// Step is what happened to a delivery, the fact a decision starts from.
type Step int

const (
	// StepInvalid: the message is not a job, or the target refused the
	// request without sending it (Facts.Reason says why).
	StepInvalid Step = iota
	// StepRejected: the limiter turned the attempt away (queue full, waited
	// too long), or its wait was cut by the shutdown.
	StepRejected
	// StepCalled: the target was called; Facts.Call classifies the result.
	StepCalled
)

// Facts are what a decision needs to know of one delivery of a job.
type Facts struct {
	Step       Step
	Reason     Reason       // with Invalid: why
	Call       call.Outcome // with StepCalled: the class of the response, and its Retry-After
	Attempts   int          // calls to the target in this delivery, the last included
	Deliveries int          // the message's delivery count
	// ShuttingDown: the worker stopped pulling; a job that would wait is
	// handed back to the queue.
	ShuttingDown bool
	// Jitter is a random number in [0, 1] drawn by the caller: a backoff
	// is Jitter times its ceiling (full jitter).
	Jitter float64
}

// Action is what the worker does with a delivery.
type Action int

const (
	// ActionAck: publish the result record (when configured), then ack.
	ActionAck Action = iota
	// ActionRetry: wait Decision.Delay, then call the target again. The only
	// action that does not settle the job.
	ActionRetry
	// ActionNak: hand the job back to the queue with Decision.Delay.
	ActionNak
	// ActionDeadLetter: publish a dead-letter record with Decision.Reason, then
	// terminate the message.
	ActionDeadLetter
	// ActionRelease: hand the job back with no delay at shutdown, so another
	// worker takes it at once.
	ActionRelease
)

var actionNames = [...]string{"ack", "retry", "nak", "dead_letter", "release"}

func (a Action) String() string {
	if a < 0 || int(a) >= len(actionNames) {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return actionNames[a]
}

// Decision is what to do with a delivery, and the outcome it settles with
// when it is carried out.
type Decision struct {
	Action  Action
	Delay   time.Duration // Retry: the wait before the next attempt; Nak: the redelivery delay
	Reason  Reason        // DeadLetter: why
	Outcome Outcome       // the job's outcome once the action is done (none for Retry)
}

// Decide applies the decision table of docs/worker.md to the facts of one
// delivery, with the limits of cfg (defaults applied). It has no side
// effects: the worker performs the decision in one place.
//
//   - StepInvalid: dead letter with the reason.
//   - StepRejected: release when shutting down, else nak with RejectedDelay.
//   - StepCalled, success (status < 400): ack; but a 3xx not in
//     SuccessStatuses is dead-lettered (redirect).
//   - StepCalled, a 4xx that is not a throttle: dead letter (client_error).
//   - StepCalled, throttle, 5xx or network error: release when shutting
//     down; retry before MaxAttempts, after max(Retry-After, backoff by attempt
//     count capped at BackoffCap), when the Retry-After is at most BackoffCap
//     (a longer one goes on to the nak below, freeing the slot); dead letter (max_deliveries) once the
//     delivery count reached MaxDeliveries; else nak with max(Retry-After,
//     backoff by delivery count), capped at MaxRedeliveryDelay.
func Decide(cfg Config, f Facts) Decision {
	switch f.Step {
	case StepInvalid:
		return Decision{Action: ActionDeadLetter, Reason: f.Reason, Outcome: OutcomeDeadLettered}
	case StepRejected:
		if f.ShuttingDown {
			return Decision{Action: ActionRelease, Outcome: OutcomeReleased}
		}
		return Decision{Action: ActionNak, Delay: cfg.RejectedDelay, Outcome: OutcomeRejected}
	}
	switch f.Call.Kind {
	case call.Success:
		if f.Call.Status >= 300 && f.Call.Status < 400 && !slices.Contains(cfg.SuccessStatuses, f.Call.Status) {
			return Decision{Action: ActionDeadLetter, Reason: ReasonRedirect, Outcome: OutcomeDeadLettered}
		}
		return Decision{Action: ActionAck, Outcome: OutcomeSucceeded}
	case call.ClientError:
		return Decision{Action: ActionDeadLetter, Reason: ReasonClientError, Outcome: OutcomeDeadLettered}
	}
	// Throttle, 5xx, network error or timeout: retry, redeliver or give up.
	switch {
	case f.ShuttingDown:
		return Decision{Action: ActionRelease, Outcome: OutcomeReleased}
	case f.Attempts < cfg.MaxAttempts && f.Call.RetryAfter <= cfg.BackoffCap:
		// Never a wait longer than BackoffCap while holding the slot: a
		// longer Retry-After falls through to a Nak with that delay.
		wait := max(f.Call.RetryAfter, backoff(cfg.BackoffBase, f.Attempts, cfg.BackoffCap, f.Jitter))
		return Decision{Action: ActionRetry, Delay: wait}
	case f.Deliveries >= cfg.MaxDeliveries:
		return Decision{Action: ActionDeadLetter, Reason: ReasonMaxDeliveries, Outcome: OutcomeDeadLettered}
	}
	delay := max(f.Call.RetryAfter, backoff(cfg.BackoffBase, f.Deliveries, cfg.MaxRedeliveryDelay, f.Jitter))
	return Decision{Action: ActionNak, Delay: min(delay, cfg.MaxRedeliveryDelay), Outcome: OutcomeRedelivered}
}

// backoff is exponential with full jitter: jitter (in [0, 1]) times
// min(limit, base·2^(n-1)).
func backoff(base time.Duration, n int, limit time.Duration, jitter float64) time.Duration {
	ceil := base
	for i := 1; i < n && ceil < limit; i++ {
		ceil *= 2
	}
	ceil = min(ceil, limit)
	return time.Duration(min(max(jitter, 0), 1) * float64(ceil))
}
