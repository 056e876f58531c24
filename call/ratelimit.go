package call

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/field"
)

// RateLimitFormat names a family of quota headers.
type RateLimitFormat int

const (
	// RateLimitNone reads no quota header.
	RateLimitNone RateLimitFormat = iota
	// RateLimitIETF reads the fields of draft-ietf-httpapi-ratelimit-headers:
	// RateLimit-Policy ("name";q=100;w=60, or the older 100;w=60) and
	// RateLimit ("name";r=50;t=30), and the older RateLimit-Limit,
	// RateLimit-Remaining and RateLimit-Reset (delta seconds).
	RateLimitIETF
	// RateLimitX reads X-RateLimit-Limit, X-RateLimit-Remaining and
	// X-RateLimit-Reset (delta seconds, or a Unix time with UnitUnixTime).
	RateLimitX
)

var formatNames = [...]string{"none", "ietf", "x-ratelimit"}

// String returns the format's name as spelled in the config file.
func (f RateLimitFormat) String() string {
	if f < 0 || int(f) >= len(formatNames) {
		return fmt.Sprintf("RateLimitFormat(%d)", int(f))
	}
	return formatNames[f]
}

// ParseRateLimitFormat is the inverse of RateLimitFormat.String.
func ParseRateLimitFormat(s string) (RateLimitFormat, error) {
	for i, n := range formatNames {
		if s == n {
			return RateLimitFormat(i), nil
		}
	}
	return 0, fmt.Errorf(`call: rate_limit_headers: must be "none", "ietf" or "x-ratelimit", got %q`, s)
}

// RateLimitHeaders says which quota headers the target sends. The zero
// value reads none.
type RateLimitHeaders struct {
	Format RateLimitFormat
	// Reset is the unit of X-RateLimit-Reset: UnitSeconds (delta seconds,
	// the default) or UnitUnixTime (GitHub). Only RateLimitX reads it.
	Reset HeaderUnit
}

// Validate reports a format or reset unit out of range, as a *field.Error.
func (r RateLimitHeaders) Validate() error {
	if r.Format < RateLimitNone || r.Format > RateLimitX {
		return field.Invalid("rate_limit_headers.format", "must be none, ietf or x-ratelimit, got %v", r.Format)
	}
	if r.Reset != UnitSeconds && r.Reset != UnitUnixTime {
		return field.Invalid("rate_limit_headers.reset", "must be delta or unix, got %v", r.Reset)
	}
	if r.Reset == UnitUnixTime && r.Format != RateLimitX {
		return field.Invalid("rate_limit_headers.reset", "unix applies to x-ratelimit only, got format %v", r.Format)
	}
	return nil
}

// Parse reads the quota that the headers h announce, received at now.
// A header that is missing, malformed, negative, not finite or absurd
// (a reset or window beyond MaxQuotaSpan, a Unix reset in the past) is
// left out of the result; with nothing usable the result is the zero
// Quota. Parse never panics.
func (r RateLimitHeaders) Parse(h http.Header, now time.Time) Quota {
	var q Quota
	switch r.Format {
	case RateLimitIETF:
		q = parseIETF(h)
	case RateLimitX:
		q = parseX(h, r.Reset, now)
	}
	return q.Sanitized()
}

// policy is one quota policy of the IETF fields, or the legacy triple.
type policy struct {
	name         string
	limit        float64 // 0 when not known
	window       time.Duration
	remaining    float64
	hasRemaining bool
	reset        time.Duration
}

// parseIETF reads the RateLimit and RateLimit-Policy fields and the legacy
// RateLimit-Limit/-Remaining/-Reset; with several policies, the most
// restrictive one wins (mostRestrictive). It takes time linear in the
// fields' length: policies are matched by name through a map.
func parseIETF(h http.Header) Quota {
	var ps []policy
	if items, err := parseSFList(h.Values("RateLimit-Policy")); err == nil {
		for _, it := range items {
			p := policy{}
			switch it.kind {
			case sfInteger, sfDecimal: // the older form: 100;w=60
				p.limit = it.num
			case sfString, sfToken:
				p.name = it.str
				p.limit, _ = it.param("q")
			default:
				continue
			}
			p.window = secondsParam(it, "w")
			ps = append(ps, p)
		}
	}
	if items, err := parseSFList(h.Values("RateLimit")); err == nil {
		byName := make(map[string]int, len(ps))
		for i := len(ps) - 1; i >= 0; i-- { // the first policy of a name wins
			byName[ps[i].name] = i
		}
		for _, it := range items {
			if it.kind != sfString && it.kind != sfToken {
				continue
			}
			i, ok := byName[it.str]
			if !ok {
				i = len(ps)
				ps = append(ps, policy{name: it.str})
				byName[it.str] = i
			}
			p := &ps[i]
			p.remaining, p.hasRemaining = it.param("r")
			p.reset = secondsParam(it, "t")
		}
	}
	if legacy, ok := parseLegacyIETF(h); ok {
		ps = append(ps, legacy)
	}
	return mostRestrictive(ps)
}

// parseLegacyIETF reads RateLimit-Limit (its first member; a w parameter,
// on it or on a later member of the same quota, gives the window),
// RateLimit-Remaining and RateLimit-Reset (delta seconds).
func parseLegacyIETF(h http.Header) (policy, bool) {
	var p policy
	found := false
	if items, err := parseSFList(h.Values("RateLimit-Limit")); err == nil && len(items) > 0 {
		if v, ok := items[0].number(); ok {
			p.limit, found = v, true
			for _, it := range items {
				if n, ok := it.number(); ok && n == v && p.window == 0 {
					p.window = secondsParam(it, "w")
				}
			}
		}
	}
	if v, ok := firstNumber(h.Values("RateLimit-Remaining")); ok {
		p.remaining, p.hasRemaining, found = v, true, true
	}
	if v, ok := firstNumber(h.Values("RateLimit-Reset")); ok {
		p.reset, found = secondsOf(v), true
	}
	return p, found
}

// firstNumber returns the first member of a List field if it is a number.
func firstNumber(lines []string) (float64, bool) {
	items, err := parseSFList(lines)
	if err != nil || len(items) == 0 {
		return 0, false
	}
	return items[0].number()
}

// secondsParam reads a parameter in seconds; 0 when missing or bad.
func secondsParam(it sfItem, key string) time.Duration {
	v, ok := it.param(key)
	if !ok {
		return 0
	}
	return secondsOf(v)
}

// secondsOf converts seconds to a Duration; values that are not in
// (0, MaxQuotaSpan] give 0 (ignored).
func secondsOf(v float64) time.Duration {
	if !(v > 0) || v > MaxQuotaSpan.Seconds() {
		return 0
	}
	return time.Duration(math.Round(v * 1e9))
}

// mostRestrictive merges the policies into one Quota: the remaining and
// reset of the policy with the fewest units left (at a tie, the later
// reset), and the limit and window of the policy with the lowest limit per
// second, or, when no policy gives both, the limit of the policy whose
// remaining was taken.
func mostRestrictive(ps []policy) Quota {
	var q Quota
	bi, li := -1, -1
	for i, p := range ps {
		p.limit = validNumber(p.limit)
		if p.hasRemaining && !(p.remaining >= 0 && p.remaining <= MaxQuotaUnits) {
			p.hasRemaining = false
		}
		if p.window < MinQuotaWindow {
			p.window = 0
		}
		ps[i] = p
		if p.hasRemaining && p.reset > 0 &&
			(bi < 0 || p.remaining < ps[bi].remaining || (p.remaining == ps[bi].remaining && p.reset > ps[bi].reset)) {
			bi = i
		}
		if p.limit > 0 && p.window > 0 &&
			(li < 0 || p.limit/p.window.Seconds() < ps[li].limit/ps[li].window.Seconds()) {
			li = i
		}
	}
	if bi >= 0 {
		b := ps[bi]
		q.Remaining, q.HasRemaining, q.Reset = b.remaining, true, b.reset
		q.Limit = b.limit
	}
	if li >= 0 {
		q.Limit, q.Window = ps[li].limit, ps[li].window
	} else if bi < 0 {
		// Only limits, or a remaining with no reset: keep the first usable.
		for _, p := range ps {
			if p.limit > 0 || p.reset > 0 {
				q.Limit, q.Reset = p.limit, p.reset
				break
			}
		}
	}
	return q
}

// validNumber returns v if it is a number in (0, MaxQuotaUnits], else 0.
func validNumber(v float64) float64 {
	if !(v > 0 && v <= MaxQuotaUnits) {
		return 0
	}
	return v
}

// parseX reads the X-RateLimit-* headers: numbers as the first member of
// the value (so Envoy's "10, 10;w=60" reads as 10 with a window of 60 s).
func parseX(h http.Header, reset HeaderUnit, now time.Time) Quota {
	var q Quota
	if v, ok := xNumber(h.Get("X-RateLimit-Limit")); ok {
		q.Limit = validNumber(v)
		// Envoy appends its policies: "10, 10;w=60".
		if items, err := parseSFList(h.Values("X-RateLimit-Limit")); err == nil {
			for _, it := range items {
				if n, ok := it.number(); ok && n == v && q.Window == 0 {
					q.Window = secondsParam(it, "w")
				}
			}
		}
	}
	if v, ok := xNumber(h.Get("X-RateLimit-Remaining")); ok {
		q.Remaining, q.HasRemaining = v, true
	}
	if v, ok := xNumber(h.Get("X-RateLimit-Reset")); ok {
		if reset == UnitUnixTime {
			// Whole seconds of a Unix time: subtract in float, the Unix
			// time is at most a few times 1e9.
			v -= float64(now.UnixNano()) / 1e9
		}
		q.Reset = secondsOf(v)
	}
	return q
}

// xNumber reads the first member of an X-RateLimit-* value as a decimal
// number ("60", "1.5", "-3"; no exponent, no NaN or Inf).
func xNumber(v string) (float64, bool) {
	if i := strings.IndexAny(v, ",;"); i >= 0 {
		v = v[:i]
	}
	v = strings.Trim(v, " \t")
	neg := strings.HasPrefix(v, "-")
	if neg {
		v = v[1:]
	}
	if _, _, ok := parseDecimal(v); !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil { // out of range: +Inf, dropped later
		return math.Inf(1), true
	}
	if neg {
		f = -f
	}
	return f, true
}
