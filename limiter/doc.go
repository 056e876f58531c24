// Package limiter is an adaptive, client-side rate limiter for calls to an
// API with a quota it does not publish: a pacer (a FIFO token bucket)
// whose rate follows one model of the API, with Retry-After pauses and a
// share of one budget per instance.
//
// # What the default does
//
// The adaptive law (docs/limiter.md, "The adaptive law"; control.Law)
// keeps a record of the units sent and accepted, by send time, and three
// numbers: the rate, the bound (what the API was seen to accept) and the
// ceiling (the upper bound a refusal set). Until the first 429 the rate
// doubles every 2 s while requests wait. At a 429 it estimates what the
// API accepted over the spans that end at the refused request (a leaky
// bucket's rate, a window's quota over its window) and paces at 0.98 of
// that; then it climbs back toward the ceiling and probes above it, at
// intervals that double while the probes find nothing more. Controller
// only shapes the probes: linear (aimd) or cubic. Quota headers set the
// bound directly. The bucket holds 10 ms of the rate, so nothing leaves as
// a burst.
//
// With SlowStart false the classic rules run instead: AIMD cuts to
// rate·DecreaseFactor and raises by IncreaseStep/N at most once per
// IncreaseInterval; CUBIC follows RFC 8312's window curve W(t) =
// C_N·(t − cut_time − K)³ + w_max. A cut needs DecreaseCooldown since the
// last one and a request sent after it (one burst of 429s, one cut). A
// fleet (package cluster) runs those rules on one shared state.
//
// # Units and rates
//
// A request costs units (any finite number >= 0; see control.CheckCost),
// and rates are in units per minute. The options in Config describe the
// whole budget; with N instances each Limiter takes 1/N of it (see
// SetInstanceCount and SetShare).
//
// # The bucket
//
// The bucket holds max(1, rate/60 · b) units (b = Burst, or at most 10 ms
// under the adaptive law), fills at rate/60 units per second and starts
// at InitialFill of that. A request is granted at once when nobody waits,
// the limiter is not paused and the bucket holds its units. A request
// larger than the bucket is granted when the bucket is full, and takes it
// below zero, so it still pays its full cost. Any other request joins a
// FIFO queue of at most QueueLimit requests (beyond that it is rejected at
// once, ReasonQueueFull); the head is granted as soon as the same rules
// hold. A request that has waited MaxWait is rejected (ReasonMaxWait); one
// whose context ends leaves the queue (ReasonCanceled). A request of zero
// units is always granted at once and its outcome changes nothing.
//
// # Throttles and pauses
//
// Observe reports the Outcome of a granted request (see Classifier). A
// throttle moves the rate by the law (or the classic cut) and, with a
// Retry-After and MaxPause > 0, pauses for min(Retry-After, MaxPause):
// nothing is granted and no tokens accrue, and the bucket is empty when it
// ends. A success (or a 4xx that is not a throttle) outside a pause may
// raise the rate, but only if some request had to wait since the last
// change: a client that sends less than its rate does not climb. Server
// errors that are not throttles and network errors change nothing. The
// rate always stays within [min, max].
//
// # Defaults
//
// DefaultConfig: 600 units/min initially, between 60 and 10,000,000; a 10 s
// burst (the adaptive law paces with 10 ms of it); 500 waiting requests at most, each for at most 100 s; 5 s between
// cuts; pauses of at most 30 s; AIMD; one instance. With Disabled set, every
// request is granted at once and the rate never changes, but units and
// throttles are still counted in the Metrics.
//
// # Structure and concurrency
//
// Three packages, each importing only those before it. Package
// limiter/control is the pure controller: Config, the adaptive law
// (control.Law, a state machine that a Core feeds with its grants,
// answers and throttles) and the classic rules (cuts, raises, AIMD,
// CUBIC: control.Rules applied to a control.Adapt, a plain value with
// absolute times), which a Core runs for its part of the budget. Package
// limiter/fleet runs them for the whole budget on one shared state
// (fleet.State): a fleet controller (package cluster) keeps it and makes
// each instance's Core follow it (Core.Follow; Core.Lead runs the
// adaptive law again from the last fleet state (the classic rules: never
// above the last fleet rate)). Package
// limiter, this one, holds the bucket around the rules: Core and Limiter.
//
// Core is the deterministic state machine: it takes the current time as an
// argument and holds no goroutine, timer or lock, so the trace replay
// (package limiter/replay, `sluice limiter replay`) and the simulator
// drive it in virtual time through its exported API, and its tests step
// through fixed instants. Limiter wraps a Core for concurrent use on the
// real clock with one timer; all its methods are safe for concurrent use,
// and the grant-at-once path does not allocate. A Core is not safe for
// concurrent use. The outcome of a call (call.Outcome) is classified by a
// call.Classifier from the response.
//
// # Output
//
// Limiter.Stats returns a typed snapshot: the state (rate, tokens,
// capacity, queue, pause, share) and the counts since New (units granted,
// throttles by status, rejections by reason), kept whether or not there
// are Metrics, for a UI. Metrics is a prometheus.Collector the caller
// builds with NewMetrics, registers where it likes, and passes with
// WithMetrics.
package limiter
