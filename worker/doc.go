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
// The worker depends on small interfaces declared here (Source, Target,
// Limiter, Output); cmd/sluice wires the real queue, HTTP sink, limiter and
// outputs into them.
package worker
