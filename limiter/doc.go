// Package limiter is an adaptive, client-side rate limiter for calls to an
// API with a quota it does not publish: a FIFO token bucket whose rate a
// controller (AIMD or CUBIC) lowers on throttles and raises while requests
// queue, with Retry-After pauses and a share of one budget per instance.
//
// # Units and rates
//
// A request costs units (any finite number >= 0; see CheckCost), and rates are in
// units per minute. The options in Config describe the whole budget; with N
// instances each Limiter takes 1/N of it (see SetInstanceCount and
// SetShare): initial, min and max rates, AIMD's increase step and CUBIC's
// scale constant are all divided by N.
//
// # The bucket
//
// The bucket holds max(1, rate/60 · Burst) units, fills at rate/60 units per
// second and starts full. A request is granted at once when nobody waits,
// the limiter is not paused and the bucket holds its units. A request larger
// than the bucket is granted when the bucket is full, and takes it below
// zero, so it still pays its full cost. Any other request joins a FIFO queue
// of at most QueueLimit requests (beyond that it is rejected at once,
// ReasonQueueFull); the head is granted as soon as the same rules hold, so a
// large head holds back the small requests behind it. A request that has
// waited MaxWait is rejected (ReasonMaxWait); one whose context ends leaves
// the queue (ReasonCanceled). A request of zero units is always granted at
// once and its outcome changes nothing. When the rate changes the bucket
// keeps its tokens up to the new capacity, and the queue stays.
//
// # Throttles, pauses and raises
//
// Observe reports the Outcome of a granted request (see Classifier). On a
// throttle the increase clock restarts and the record that a request waited
// is cleared; then the rate is cut if this is the first throttle, or if
// DecreaseCooldown has passed since the last cut and the throttled request
// was sent after it (so one burst of 429s gives one cut); then, if the
// response had a Retry-After and MaxPause > 0, the limiter pauses for the
// Retry-After, capped at MaxPause. Nothing is granted and no tokens accrue
// during a pause, and the bucket is empty when it ends. A success (or a 4xx
// that is not a throttle) outside a pause lets the controller raise the
// rate, but only if some request had to wait since the last change: a
// client that sends less than its rate does not climb. Server errors that
// are not throttles and network errors change nothing. The rate always stays
// within [min, max].
//
// AIMD (the default) cuts to rate·DecreaseFactor (0.7) and raises by
// IncreaseStep/N (120/N) at most once per IncreaseInterval (10 s). CUBIC
// follows RFC 8312's window curve W(t) = C_N·(t − cut_time − K)³ + w_max,
// where w_max is the rate at the last cut (or the measured send rate of the
// last 10 s, if lower), K = ∛(w_max·(1−β)/C_N), C_N = ScaleConstant/N
// (default DefaultCUBICScaleConstant) and a cut goes to w_max·β (β = 0.7).
//
// # Defaults
//
// DefaultConfig: 600 units/min initially, between 60 and 60000; a 10 s
// burst; 500 waiting requests at most, each for at most 100 s; 5 s between
// cuts; pauses of at most 30 s; AIMD; one instance. With Disabled set, every
// request is granted at once and the rate never changes, but units and
// throttles are still counted in the Metrics.
//
// # Structure and concurrency
//
// The rate rules themselves (cuts, raises, AIMD, CUBIC) are Rules applied
// to an Adapt, a plain value with absolute times: a Core keeps one for its
// part of the budget, and a fleet controller (package cluster) keeps one for
// the whole budget and makes each instance's Core follow it (Core.Follow;
// Core.Lead runs the local rules again, below the last fleet rate).
//
// Core is the deterministic state machine: it takes the current time as an
// argument and holds no goroutine, timer or lock, so the trace replay
// (Replay, `sluice limiter replay`) and the simulator drive it in virtual
// time and its tests step through fixed instants. Limiter wraps a Core for
// concurrent use on the real clock with one timer; all its methods are safe
// for concurrent use, and the grant-at-once path does not allocate. A Core
// is not safe for concurrent use. The outcome of a call (call.Outcome) is
// classified by a call.Classifier from the response.
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
