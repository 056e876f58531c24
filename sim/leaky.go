package sim

import (
	"math"
	"time"
)

// Leaky is the model of a gateway's leaky bucket, as nginx limit_req runs
// one: Quota units per Span leak out at a steady rate, and a call may go
// ahead of that steady schedule by at most Burst units.
//
// The bucket holds the excess: the units accepted ahead of the schedule.
// At a call of u units the excess first leaks by the rate times the time
// since the last accepted call, down to 0, then takes the call's units:
// e = max(0, excess − rate·Δt + u). The call is accepted when e ≤ Burst,
// and the excess becomes e; otherwise it is refused and nothing changes.
// With calls of one unit this is nginx's rule: an idle bucket takes Burst+1
// calls at once, and then one call per 1/rate.
//
// Time is an argument, as for Window. A Leaky is not safe for concurrent
// use.
type Leaky struct {
	Span  time.Duration // default 60s when zero
	Quota float64       // units leaking out per Span; may change between calls
	Burst float64       // units a call may go ahead of the steady rate, >= 0
	// Delay holds an accepted call that went ahead of the steady schedule
	// until its turn, as nginx limit_req does without nodelay: it is
	// answered after its excess over the rate (Held). Without Delay it is
	// answered at once, as with nodelay.
	Delay bool

	excess float64
	last   time.Time
}

func (l *Leaky) perSecond() float64 {
	span := l.Span
	if span <= 0 {
		span = DefaultWindowSpan
	}
	return l.Quota / span.Seconds()
}

// ahead returns the excess at now with the time since the last accepted
// call leaked out, not clamped at zero: nginx adds a call's units before it
// clamps.
func (l *Leaky) ahead(now time.Time) float64 {
	if l.last.IsZero() || !now.After(l.last) {
		return l.excess
	}
	return l.excess - l.perSecond()*now.Sub(l.last).Seconds()
}

// Take asks for units at now. It accepts them (ok) when the excess with
// them stays within Burst. Otherwise wait is the exact time until it would,
// if nothing else is accepted meanwhile, or −1 with a zero rate. Zero
// units always fit.
func (l *Leaky) Take(now time.Time, units float64) (ok bool, wait time.Duration) {
	if !(units > 0) {
		return true, 0
	}
	next := l.ahead(now) + units
	if next <= l.Burst+windowEps {
		l.excess, l.last = math.Max(0, next), now
		return true, 0
	}
	rate := l.perSecond()
	if !(rate > 0) {
		return false, -1
	}
	return false, time.Duration(math.Ceil((next - l.Burst) / rate * 1e9))
}

// Held returns how long the last accepted call waits for its turn before
// it is answered: with Delay, the excess after it divided by the rate (as
// nginx delays a request by its excess); otherwise 0.
func (l *Leaky) Held() time.Duration {
	rate := l.perSecond()
	if !l.Delay || !(rate > 0) {
		return 0
	}
	return time.Duration(l.excess / rate * float64(time.Second))
}

// Excess returns the units ahead of the steady rate at now.
func (l *Leaky) Excess(now time.Time) float64 { return math.Max(0, l.ahead(now)) }

func (l *Leaky) setQuota(_ time.Time, q float64) { l.Quota = q }
