package call

import "time"

// Quota is what a response announced about the API's quota: the rate-limit
// headers of docs/limiter.md ("Quota headers"), read by
// RateLimitHeaders.Parse. Numbers are in the API's units, which the limiter
// takes to be job units. The zero value announces nothing.
type Quota struct {
	// Limit is the quota: units per Window. 0 when not announced.
	Limit float64
	// Window is the span of Limit. 0 when not announced; the Core then
	// takes the longest Reset it has seen as the window.
	Window time.Duration
	// Remaining is the units left before Reset; meaningful only with
	// HasRemaining.
	Remaining    float64
	HasRemaining bool
	// Reset is the time from the response until the quota resets (or
	// until more of it is free). 0 when not announced.
	Reset time.Duration
}

// MaxQuotaSpan bounds the reset and the window of a Quota: a longer one (a
// reset years ahead) is ignored, so that a hostile or mistaken header never
// plans further than a daily quota.
const MaxQuotaSpan = 24 * time.Hour

// MinQuotaWindow is the shortest window a Quota keeps: a limit "per
// nanosecond" is no rate a limiter can plan with, and multiplies any limit
// into an absurd one.
const MinQuotaWindow = time.Second

// MaxQuotaUnits bounds the limit and the remaining of a Quota: a larger
// one is ignored. It is the limiter's bound on a job's cost (control.MaxUnits):
// no quota a limiter can spend is larger.
const MaxQuotaUnits = 1e12

// Present reports whether q announces anything.
func (q Quota) Present() bool { return q.Limit != 0 || q.HasRemaining || q.Reset != 0 || q.Window != 0 }

// Sanitized returns q with every value that breaks its rule dropped: a
// limit that is not a number in (0, MaxQuotaUnits], a remaining that is
// not in [0, MaxQuotaUnits], a reset that is not in (0, MaxQuotaSpan], a
// window that is not in [MinQuotaWindow, MaxQuotaSpan]. A remaining above
// the limit is taken as the limit. (Whether a limit is plausible for the
// rates configured, at most max_units_per_minute over its window, is the
// limiter's to judge: a Quota carries the limit and the window for it.)
func (q Quota) Sanitized() Quota {
	if !(q.Limit > 0 && q.Limit <= MaxQuotaUnits) {
		q.Limit = 0
	}
	if q.HasRemaining && !(q.Remaining >= 0 && q.Remaining <= MaxQuotaUnits) {
		q.HasRemaining, q.Remaining = false, 0
	}
	if q.HasRemaining && q.Limit > 0 && q.Remaining > q.Limit {
		q.Remaining = q.Limit
	}
	if q.Reset <= 0 || q.Reset > MaxQuotaSpan {
		q.Reset = 0
	}
	if q.Window < MinQuotaWindow || q.Window > MaxQuotaSpan {
		q.Window = 0
	}
	return q
}
