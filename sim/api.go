package sim

import (
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/sluicehq/sluice/call"
)

// API names a model API.
type API string

// Model APIs.
const (
	// APIWindow accepts at most Quota units in any sliding Window (the
	// default): it absorbs bursts.
	APIWindow API = "window"
	// APILeaky is a leaky bucket, as a gateway's per-second limiter: Quota
	// units per Window leak out at a steady rate and BurstUnits may go
	// ahead of it.
	APILeaky API = "leaky"
	// APIFixed is a fixed window that resets, as GitHub's: Quota units per
	// Window, counted from the window's first call until it resets.
	APIFixed API = "fixed"
	// APIBucket is Envoy's local rate limit: a token bucket of BurstUnits
	// tokens at most, refilled every FillInterval with
	// Quota × FillInterval / Window tokens.
	APIBucket API = "bucket"
	// APIWeighted is a sliding window estimated from two fixed periods,
	// as HAProxy's stick-table rates and Cloudflare's and Kong's sliding
	// windows count: the previous period's units weigh by the share of
	// the current period still to come.
	APIWeighted API = "weighted"
)

// APIs lists the model APIs in the order of the zoo.
var APIs = []API{APIWindow, APILeaky, APIFixed, APIBucket, APIWeighted}

// ParseAPI returns the API named s.
func ParseAPI(s string) (API, error) {
	for _, a := range APIs {
		if string(a) == s {
			return a, nil
		}
	}
	names := make([]string, len(APIs))
	for i, a := range APIs {
		names[i] = string(a)
	}
	return "", fmt.Errorf("sim: unknown api %q (want %s)", s, strings.Join(names, ", "))
}

// CountsRefused reports whether the API can count a refused call's units
// against its quota (Config.CountRefused): the window, fixed and weighted
// APIs can; a leaky bucket or a token bucket takes nothing from a refusal.
func (a API) CountsRefused() bool {
	return a == APIWindow || a == APIFixed || a == APIWeighted
}

// SendsHeaders reports whether the API can send quota headers
// (Config.Headers): its model announces its state (the window and fixed
// APIs).
func (a API) SendsHeaders() bool {
	_, ok := apiSpec{api: a}.model(time.Time{}).(stater)
	return ok
}

// HoldsCalls reports whether the API can hold an accepted call before
// answering it (Config.Delay): its model holds calls (the leaky bucket).
func (a API) HoldsCalls() bool {
	_, ok := apiSpec{api: a}.model(time.Time{}).(holder)
	return ok
}

// DefaultFillInterval is the bucket API's fill interval.
const DefaultFillInterval = time.Second

// quotaModel is a model API's rule for accepting calls: Window, Leaky,
// Fixed, Bucket or Weighted. Take decides a call of units at now; wait is
// the exact time until it would be accepted if nothing else were taken
// meanwhile, or −1 when it never can be.
type quotaModel interface {
	Take(now time.Time, units float64) (ok bool, wait time.Duration)
	setQuota(now time.Time, q float64)
}

// holder is a model API that holds an accepted call before answering it
// (Leaky with Delay): Held is how long the last accepted call waits.
type holder interface {
	Held() time.Duration
}

// stater is a model API that announces its state in quota headers.
type stater interface {
	State(now time.Time) QuotaState
}

var (
	_ quotaModel = (*Window)(nil)
	_ quotaModel = (*Leaky)(nil)
	_ quotaModel = (*Fixed)(nil)
	_ quotaModel = (*Bucket)(nil)
	_ quotaModel = (*Weighted)(nil)
	_ holder     = (*Leaky)(nil)
	_ stater     = (*Window)(nil)
	_ stater     = (*Fixed)(nil)
)

// apiSpec is what Config and ServerConfig say about the model API.
type apiSpec struct {
	api          API
	quota        float64 // units per span
	span         time.Duration
	burst        float64
	fill         time.Duration
	countRefused bool
	delay        bool
	headers      call.RateLimitHeaders
}

// validate reports what is wrong with a model API's settings: an unknown
// API, a burst that is not a finite number >= 0, a bucket whose fill
// interval is not > 0 or whose size is below one fill, refused calls
// counted by an API that does not count them, calls held by an API that
// holds none (all but leaky), and quota headers from an API that sends
// none (leaky, bucket, weighted).
func (s apiSpec) validate() []error {
	var errs []error
	api := s.api
	if api == "" {
		api = APIWindow
	}
	if _, err := ParseAPI(string(api)); err != nil {
		errs = append(errs, err)
	}
	if !(s.burst >= 0) || math.IsInf(s.burst, 0) {
		errs = append(errs, fmt.Errorf("sim: burst_units: must be >= 0, got %v", s.burst))
	}
	if !api.SendsHeaders() && s.headers.Format != call.RateLimitNone {
		errs = append(errs, fmt.Errorf("sim: headers: the %s api sends no quota headers, got %v", api, s.headers.Format))
	}
	if s.delay && !api.HoldsCalls() {
		errs = append(errs, fmt.Errorf("sim: delay: only the leaky api holds calls, got api %s", api))
	}
	if s.countRefused && !api.CountsRefused() {
		errs = append(errs, fmt.Errorf("sim: count_refused: only the window, fixed and weighted apis count refused calls, got api %s", api))
	}
	if api == APIBucket {
		if s.fill <= 0 {
			errs = append(errs, fmt.Errorf("sim: fill_interval: must be > 0, got %v", s.fill))
		} else if fill := s.tokensPerFill(); s.span > 0 && (s.burst < fill-windowEps || !(s.burst > 0)) {
			errs = append(errs, fmt.Errorf("sim: burst_units: must be > 0 and at least one fill's tokens (quota × fill_interval / window = %v) with the bucket api, got %v", fill, s.burst))
		}
	}
	return errs
}

func (s apiSpec) tokensPerFill() float64 {
	return s.quota * s.fill.Seconds() / s.span.Seconds()
}

// model returns the quota of the API, whose bucket (APIBucket) starts full
// and fills at origin + k·fill.
func (s apiSpec) model(origin time.Time) quotaModel {
	switch s.api {
	case APILeaky:
		return &Leaky{Span: s.span, Quota: s.quota, Burst: s.burst, Delay: s.delay}
	case APIFixed:
		return &Fixed{Span: s.span, Quota: s.quota, CountRefused: s.countRefused}
	case APIBucket:
		return &Bucket{Span: s.span, Quota: s.quota, Burst: s.burst, FillInterval: s.fill, Origin: origin}
	case APIWeighted:
		return &Weighted{Span: s.span, Quota: s.quota, CountRefused: s.countRefused}
	}
	return &Window{Span: s.span, Quota: s.quota, CountRefused: s.countRefused}
}
