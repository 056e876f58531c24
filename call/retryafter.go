package call

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"
)

// DefaultMaxRetryAfter caps every wait read from a response: a value beyond
// it (a hostile "Retry-After: 99999999999", a reset a century away) reads as
// DefaultMaxRetryAfter. The limiter caps its pause further (max_pause).
const DefaultMaxRetryAfter = 24 * time.Hour

// HeaderUnit says how the value of a wait header reads.
type HeaderUnit int

const (
	// UnitSeconds reads the value as Retry-After does: delta-seconds
	// ("120", a decimal fraction such as "1.5" is accepted) or an
	// HTTP-date relative to now. The IETF RateLimit-Reset header is in
	// this unit.
	UnitSeconds HeaderUnit = iota
	// UnitMilliseconds reads the value as a delay in milliseconds, as
	// in x-ms-retry-after-ms ("1500"; a decimal fraction is accepted).
	UnitMilliseconds
	// UnitUnixTime reads the value as the absolute time the limit resets,
	// in seconds since the Unix epoch, as in GitHub's X-RateLimit-Reset
	// ("1767225600"). The wait is that time minus now, 0 if it has passed.
	UnitUnixTime
)

var unitNames = [...]string{"seconds", "milliseconds", "unix"}

// String returns the unit's name as spelled in the config file: "seconds",
// "milliseconds" or "unix".
func (u HeaderUnit) String() string {
	if u < 0 || int(u) >= len(unitNames) {
		return fmt.Sprintf("HeaderUnit(%d)", int(u))
	}
	return unitNames[u]
}

// ParseHeaderUnit is the inverse of HeaderUnit.String. It also accepts
// "s", "ms" and "unix_seconds".
func ParseHeaderUnit(s string) (HeaderUnit, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "seconds", "s":
		return UnitSeconds, nil
	case "milliseconds", "ms":
		return UnitMilliseconds, nil
	case "unix", "unix_seconds":
		return UnitUnixTime, nil
	}
	return 0, fmt.Errorf("call: header unit: must be \"seconds\", \"milliseconds\" or \"unix\", got %q", s)
}

// ParseRetryAfter reads a Retry-After value: delta-seconds, or an HTTP-date
// (any of the three formats of http.ParseTime) taken relative to now.
// Surrounding spaces are ignored, and a decimal fraction of a second is
// accepted ("1.5") since some servers send one.
//
// ok is false when the value is not one of those forms (empty, negative,
// "NaN", "1e3", garbage); the duration is then 0. A date in the past gives
// (0, true). A value beyond DefaultMaxRetryAfter gives DefaultMaxRetryAfter,
// however large it is. ParseRetryAfter never panics.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	return parseWait(v, UnitSeconds, now, DefaultMaxRetryAfter)
}

// parseWait reads v in unit u, relative to now, capped at max.
func parseWait(v string, u HeaderUnit, now time.Time, max time.Duration) (time.Duration, bool) {
	v = strings.Trim(v, " \t")
	if v == "" {
		return 0, false
	}
	switch u {
	case UnitSeconds:
		if isDigit(v[0]) {
			return parseDelay(v, time.Second, max)
		}
		t, err := http.ParseTime(v)
		if err != nil {
			return 0, false
		}
		return clampWait(t.Sub(now), max), true
	case UnitMilliseconds:
		return parseDelay(v, time.Millisecond, max)
	case UnitUnixTime:
		sec, nanos, ok := parseDecimal(v)
		if !ok {
			return 0, false
		}
		// Beyond this (about 35,000 years) time.Unix would overflow; any
		// such reset is far past the cap anyway.
		const farFuture = 1 << 40
		if sec > farFuture {
			return max, true
		}
		return clampWait(time.Unix(int64(sec), nanos).Sub(now), max), true
	}
	return 0, false
}

// parseDelay reads a non-negative decimal number of unit, capped at max.
func parseDelay(v string, unit, max time.Duration) (time.Duration, bool) {
	whole, nanos, ok := parseDecimal(v)
	if !ok {
		return 0, false
	}
	if whole > uint64(max/unit) {
		return max, true
	}
	// whole*unit ≤ max; the fraction adds less than one unit.
	d := time.Duration(whole)*unit + time.Duration(float64(nanos)/1e9*float64(unit))
	return clampWait(d, max), true
}

// parseDecimal reads digits with an optional fraction ("12", "12.5"). The
// whole part saturates at math.MaxUint64; the fraction is returned in
// billionths (digits past the ninth are dropped).
func parseDecimal(v string) (whole uint64, nanos int64, ok bool) {
	i := 0
	for ; i < len(v) && isDigit(v[i]); i++ {
		d := uint64(v[i] - '0')
		if whole > (math.MaxUint64-d)/10 {
			whole = math.MaxUint64
		} else {
			whole = whole*10 + d
		}
	}
	if i == 0 {
		return 0, 0, false
	}
	if i == len(v) {
		return whole, 0, true
	}
	if v[i] != '.' || i+1 == len(v) {
		return 0, 0, false
	}
	scale := int64(1e8)
	for i++; i < len(v); i++ {
		if !isDigit(v[i]) {
			return 0, 0, false
		}
		nanos += int64(v[i]-'0') * scale
		scale /= 10
	}
	return whole, nanos, true
}

func clampWait(d, max time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	if d > max {
		return max
	}
	return d
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
