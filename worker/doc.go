// Package worker is sluice's pipeline: it pulls jobs from a durable queue,
// decodes them, waits on the limiter for each attempt's units, calls the
// target API, and settles each job by the decision table:
//
//   - success (status < 400): publish the result (when configured), then Ack;
//   - a 4xx that is not a throttle: dead-letter, then Term (retrying cannot help);
//   - throttle, 5xx, network error or timeout after MaxAttempts attempts:
//     Nak with delay max(Retry-After, backoff by delivery count), capped at
//     MaxRedeliveryDelay; dead-letter once deliveries reach MaxDeliveries;
//   - limiter rejected (queue full, max wait): Nak with RejectedDelay;
//   - invalid job: dead-letter at once with the reason;
//   - shutdown while the job waits or backs off: Nak with no delay.
//
// Delivery is at-least-once: a job is acked (or terminated) only after
// success, or after its dead-letter record has been published and
// confirmed. A Worker holds at most MaxInFlight jobs and asks the source
// only for as many as it has room for, so its memory is bounded whatever the
// backlog. While a job waits (in the limiter's queue or in backoff) the
// worker extends its ack deadline every AckWait/3.
//
// Decide is the decision table as a pure function: it takes the Facts of a
// delivery (what happened, the attempt and delivery counts, the shutdown
// state) and returns a Decision (ack, retry after a wait, nak with a delay,
// dead letter with a typed Reason, release); the worker performs it in one
// place. Outcomes and Reasons are typed; their String is the label value
// of sluice_jobs_total and the reason of dead-letter records.
//
// Metrics is a prometheus.Collector that the caller builds with NewMetrics,
// registers, and passes in Deps. Worker.Stats returns a typed snapshot of
// the same counts (jobs by outcome, attempts by result class, jobs in
// flight, messages received), kept whether or not there are Metrics, for
// a UI that shows the worker's state.
//
// The worker depends on small interfaces declared here (Source, Target,
// Limiter, Output) and speaks the call package's types (call.Request,
// call.Response, call.Outcome), so *httpapi.Sink is a Target as it
// stands; cmd/sluice wires the real queue, HTTP sink, limiter and outputs
// into them.
package worker
