package call

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/field"
)

// RetryAfterHeader names a response header that tells how long to wait
// before retrying, and the unit its value is in.
type RetryAfterHeader struct {
	Name string // e.g. "x-ms-retry-after-ms"; matched case-insensitively
	Unit HeaderUnit
}

// Classifier turns a response, or its absence, into an Outcome.
//
// The zero value is the default: a 429 is a throttle, and so is a 503 that
// carries a wait (Retry-After or a configured header); any other status of
// 500 or above is a ServerError, a 4xx is a ClientError, and anything below
// 400 is a Success. With RateLimitHeaders set, every outcome carries the
// quota its headers announce. For responses of 400 and above the wait is read from
// RetryAfterHeaders in order, then from Retry-After; the first header that
// is present with a valid value wins. Success outcomes carry no wait.
//
// A Classifier is a value: it holds no state and is safe for concurrent use.
type Classifier struct {
	// RetryAfterHeaders are checked, in order, before Retry-After.
	RetryAfterHeaders []RetryAfterHeader

	// ThrottleStatuses are always a throttle. Nil means [429]; an empty,
	// non-nil slice means none.
	ThrottleStatuses []int

	// ThrottleStatusesWithWait are a throttle only when the response
	// carries a valid wait header (even one of 0). Nil means [503]; an
	// empty, non-nil slice means none.
	ThrottleStatusesWithWait []int

	// MaxRetryAfter caps every wait read from a response. 0 means
	// DefaultMaxRetryAfter (24h).
	MaxRetryAfter time.Duration

	// RateLimitHeaders selects the quota headers read into
	// Outcome.Quota, whatever the status. The zero value reads none.
	RateLimitHeaders RateLimitHeaders
}

var (
	defaultThrottleStatuses         = []int{http.StatusTooManyRequests}
	defaultThrottleStatusesWithWait = []int{http.StatusServiceUnavailable}
)

// Validate reports bad header names, units, statuses and caps, each as a
// *field.Error named as in the config file (relative to the section that
// holds the classifier), joined with errors.Join.
func (c Classifier) Validate() error {
	var errs []error
	for i, h := range c.RetryAfterHeaders {
		if !httpguts.ValidHeaderFieldName(h.Name) {
			errs = append(errs, field.Invalid(fmt.Sprintf("retry_after_headers[%d].name", i), "must be a valid header name, got %q", h.Name))
		}
		if h.Unit < UnitSeconds || h.Unit > UnitUnixTime {
			errs = append(errs, field.Invalid(fmt.Sprintf("retry_after_headers[%d].unit", i), "must be seconds, milliseconds or unix, got %v", h.Unit))
		}
	}
	for i, s := range c.ThrottleStatuses {
		if s < 100 || s > 599 {
			errs = append(errs, field.Invalid(fmt.Sprintf("throttle_statuses[%d]", i), "must be an HTTP status in [100, 599], got %d", s))
		}
	}
	for i, s := range c.ThrottleStatusesWithWait {
		if s < 100 || s > 599 {
			errs = append(errs, field.Invalid(fmt.Sprintf("throttle_statuses_with_wait[%d]", i), "must be an HTTP status in [100, 599], got %d", s))
		}
	}
	if err := c.RateLimitHeaders.Validate(); err != nil {
		errs = append(errs, err)
	}
	if c.MaxRetryAfter < 0 {
		errs = append(errs, field.Invalid("max_retry_after", "must be >= 0, got %v", c.MaxRetryAfter))
	}
	return errors.Join(errs...)
}

// Classify classifies a response with status and headers h, received at
// now (HTTP-dates and reset times are taken relative to it).
func (c Classifier) Classify(status int, h http.Header, now time.Time) Outcome {
	o := Outcome{Status: status}
	if c.RateLimitHeaders.Format != RateLimitNone {
		o.Quota = c.RateLimitHeaders.Parse(h, now)
	}
	if status < 400 {
		o.Kind = Success
		return o
	}
	wait, hasWait, beyond := c.wait(h, now)
	o.RetryAfter, o.WaitBeyondCap = wait, beyond

	throttle := c.ThrottleStatuses
	if throttle == nil {
		throttle = defaultThrottleStatuses
	}
	withWait := c.ThrottleStatusesWithWait
	if withWait == nil {
		withWait = defaultThrottleStatusesWithWait
	}
	switch {
	case slices.Contains(throttle, status), hasWait && slices.Contains(withWait, status):
		o.Kind = Throttle
	case status >= 500:
		o.Kind = ServerError
	default:
		o.Kind = ClientError
	}
	return o
}

// ClassifyResponse classifies the result of an HTTP round trip at
// time.Now. A non-nil err (connection refused, timeout, reset) or a nil
// response is a NetworkError. It does not read or close the body.
func (c Classifier) ClassifyResponse(resp *http.Response, err error) Outcome {
	if err != nil || resp == nil {
		return Outcome{Kind: NetworkError}
	}
	return c.Classify(resp.StatusCode, resp.Header, time.Now())
}

// wait returns the first valid wait among the configured headers and
// Retry-After, capped at MaxRetryAfter; whether there was one; and whether
// it asked for more than the cap.
func (c Classifier) wait(h http.Header, now time.Time) (d time.Duration, ok, beyond bool) {
	max := c.MaxRetryAfter
	if max <= 0 {
		max = DefaultMaxRetryAfter
	}
	// Parsed against a cap one second higher, a wait beyond the cap shows.
	over := max
	if max <= math.MaxInt64-time.Second {
		over = max + time.Second
	}
	for _, rh := range c.RetryAfterHeaders {
		for _, v := range h.Values(rh.Name) {
			if d, ok := parseWait(v, rh.Unit, now, over); ok {
				return min(d, max), true, d > max
			}
		}
	}
	for _, v := range h.Values("Retry-After") {
		if d, ok := parseWait(v, UnitSeconds, now, over); ok {
			return min(d, max), true, d > max
		}
	}
	return 0, false, false
}
