package sim

import (
	"math"
	"time"
)

// Bucket is the model of Envoy's local rate limit (its token bucket with a
// fill timer): a bucket of at most Burst tokens, full at Origin, that gains
// Quota × FillInterval / Span tokens at every Origin + k·FillInterval
// (k = 1, 2, …), never above Burst. A call of u units takes u tokens when
// the bucket holds them, and is refused otherwise, with nothing taken; its
// wait is the time until the fill after which the bucket would hold them.
//
// Time is an argument, as for Window. A Bucket is not safe for concurrent
// use.
type Bucket struct {
	Span         time.Duration // the span of Quota; default 60s when zero
	Quota        float64       // units per Span; may change between calls
	Burst        float64       // the most tokens the bucket holds (Envoy's max_tokens)
	FillInterval time.Duration // default 1s when zero
	// Origin is the instant the bucket starts full, and the phase of its
	// fills; zero: the instant of the first call.
	Origin time.Time

	tokens  float64
	fills   int64 // fills since Origin applied to tokens
	started bool
}

func (b *Bucket) interval() time.Duration {
	if b.FillInterval <= 0 {
		return DefaultFillInterval
	}
	return b.FillInterval
}

func (b *Bucket) perFill() float64 {
	span := b.Span
	if span <= 0 {
		span = DefaultWindowSpan
	}
	return b.Quota * b.interval().Seconds() / span.Seconds()
}

// fill applies the fills due by now.
func (b *Bucket) fill(now time.Time) {
	if !b.started {
		if b.Origin.IsZero() {
			b.Origin = now
		}
		b.tokens, b.started = b.Burst, true
	}
	if now.Before(b.Origin) {
		return
	}
	k := int64(now.Sub(b.Origin) / b.interval())
	if k > b.fills {
		b.tokens = math.Min(b.Burst, b.tokens+float64(k-b.fills)*b.perFill())
		b.fills = k
	}
}

// Take asks for units at now. It accepts them (ok) when the bucket holds
// that many tokens after the fills due by now. Otherwise wait is the exact
// time until the fill after which it would, if nothing else is taken
// meanwhile; it is −1 when units exceed Burst (or no tokens come) and can
// never fit. Zero units always fit.
func (b *Bucket) Take(now time.Time, units float64) (ok bool, wait time.Duration) {
	b.fill(now)
	if !(units > 0) {
		return true, 0
	}
	if b.tokens+windowEps >= units {
		b.tokens -= units
		return true, 0
	}
	per := b.perFill()
	if units > b.Burst+windowEps || !(per > 0) {
		return false, -1
	}
	n := int64(math.Ceil((units - b.tokens - windowEps) / per))
	return false, b.Origin.Add(time.Duration(b.fills+max(n, 1)) * b.interval()).Sub(now)
}

// Tokens returns the tokens in the bucket at now.
func (b *Bucket) Tokens(now time.Time) float64 {
	b.fill(now)
	return b.tokens
}

// setQuota applies the fills due by now at the old quota, and the next ones
// at q.
func (b *Bucket) setQuota(now time.Time, q float64) {
	b.fill(now)
	b.Quota = q
}
