package fleet

import (
	"time"

	"github.com/sluicehq/sluice/limiter/control"
)

// DefaultRemember is how long a fleet's rate is remembered after an
// instance last wrote it (limiter.share.remember).
const DefaultRemember = time.Hour

// State is the state of a fleet controller: the rate rules of the whole
// budget that many instances follow (limiter.Core.Follow), the fleet-wide
// pause, and when an instance last wrote it. Package cluster keeps it in
// NATS KV; the simulator keeps one in memory.
type State struct {
	// Adapt is the classic rules' state; with the adaptive law it mirrors
	// the law's rate, startup and last cut, for readers of the rate.
	control.Adapt
	// Law is the adaptive law's state for the whole budget (slow_start
	// true); nil with the classic rules.
	Law *control.LawState `json:"law,omitempty"`
	// PausedUntil is the end of the fleet's Retry-After pause: every
	// worker pauses until then.
	PausedUntil time.Time `json:"paused_until"`
	// Seen is when a worker last wrote the state: the age of the
	// remembered rate, and the latest time the rules have seen (a
	// decision never goes back before it).
	Seen time.Time `json:"seen"`
}

// LawState returns the law's part of s: Law, or, when s has none (a state
// a worker on its own remembered: only its rate), a law out of startup at
// that rate, which the API was seen to accept.
func (s State) LawState() control.LawState {
	if s.Law != nil {
		return *s.Law
	}
	return control.LawStateAt(s.Rate, s.IncClock, s.LastCut)
}

// View is what the workers tell a fleet's raise rule.
type View struct {
	// LastWait is the latest time any worker's requests waited.
	LastWait time.Time
	// Sent is what the deciding worker sent over the last 2 s, for the
	// whole budget (see limiter.Core.Sent); -1 when not known.
	Sent float64
	// Accepted is the units the API accepted from the whole fleet in the
	// last minute (the sum of the workers' limiter.Core.AcceptedUnits); 0
	// when not known.
	Accepted float64
	// Delay is how long a change of the state takes to reach the workers
	// (the propagation delay); 0 when it is not known.
	Delay time.Duration
}

// Report is a throttle a limiter observed, for a fleet controller that
// decides the cuts of many limiters (limiter.WithThrottleHook,
// limiter.Core.Report).
type Report struct {
	At         time.Time     // when the response arrived
	Sent       time.Time     // when its request was granted (sent_at)
	RetryAfter time.Duration // its Retry-After, 0 if none
	// Measured is this instance's send rate (units per minute, the units
	// granted in the last 10 s × 6), or -1 when unknown (see
	// limiter.Core.Measured): the classic CUBIC's cut.
	Measured float64
	// Accepted is what the adaptive law's record of this instance
	// measured for the refusal: what the API accepted per minute over the
	// best span, divided by the instance's share (the whole budget's); -1
	// when no span was long enough, with the classic rules, or for a
	// request sent before the last cut's Retry-After ran out (0 or less is
	// none: a worker at a small share may have had nothing answered in a
	// span, which is no measure of the fleet). Window is
	// the window the refusal showed, 0 for none.
	Accepted float64
	Window   time.Duration
	Part     control.Part // this instance's part of the budget at the time
}
