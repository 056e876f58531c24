package sim

import (
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/call"
)

// QuotaState is what the model API announces in its quota headers after a
// call: the quota per window, the units left now, and the time until more
// of the quota is free (for the sliding window: until the oldest accepted
// units leave it).
type QuotaState struct {
	Limit     float64
	Window    time.Duration
	Remaining float64
	Reset     time.Duration
}

// State returns the window's QuotaState at now.
func (w *Window) State(now time.Time) QuotaState {
	w.expire(now)
	s := QuotaState{Limit: w.Quota, Window: w.span(), Remaining: math.Max(0, w.Quota-w.sum)}
	if w.head < len(w.entries) {
		s.Reset = max(0, w.entries[w.head].at.Add(w.span()).Sub(now))
	}
	return s
}

// quotaPolicy names the model API's one policy in the IETF fields.
const quotaPolicy = `"window"`

// SetQuotaHeaders writes s into h as the headers of format rl, as a real
// API would: whole units remaining (rounded down), whole seconds until the
// reset (rounded up, at least 1 while any units are in the window), a Unix
// reset time with rl.Reset UnitUnixTime. With the IETF format it sends the
// RateLimit-Policy and RateLimit fields of the current draft
// ("window";q=Q;w=60 and "window";r=R;t=T). RateLimitNone writes nothing.
func SetQuotaHeaders(h http.Header, rl call.RateLimitHeaders, s QuotaState, now time.Time) {
	if rl.Format == call.RateLimitNone {
		return
	}
	limit := strconv.FormatFloat(math.Floor(s.Limit), 'f', -1, 64)
	remaining := strconv.FormatFloat(math.Floor(s.Remaining), 'f', -1, 64)
	reset := int64(math.Ceil(s.Reset.Seconds()))
	window := int64(math.Ceil(s.Window.Seconds()))
	switch rl.Format {
	case call.RateLimitIETF:
		h.Set("RateLimit-Policy", quotaPolicy+";q="+limit+";w="+strconv.FormatInt(window, 10))
		h.Set("RateLimit", quotaPolicy+";r="+remaining+";t="+strconv.FormatInt(reset, 10))
	case call.RateLimitX:
		if rl.Reset == call.UnitUnixTime {
			reset = int64(math.Ceil(float64(now.Add(s.Reset).UnixNano()) / 1e9))
		}
		h.Set("X-RateLimit-Limit", limit)
		h.Set("X-RateLimit-Remaining", remaining)
		h.Set("X-RateLimit-Reset", strconv.FormatInt(reset, 10))
	}
}
