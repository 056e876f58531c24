package simulate

import (
	"fmt"

	"github.com/sluicehq/sluice/call"
)

// Headers are --headers and --headers-reset of simulate and testserver:
// the quota headers the model API sends.
type Headers struct {
	Format string // none, ietf or x-ratelimit
	Reset  string // delta or unix
}

// Parse reads the flags; unset (empty) flags are none and delta.
func (f Headers) Parse() (call.RateLimitHeaders, error) {
	var rl call.RateLimitHeaders
	if f.Format == "" {
		f.Format = "none"
	}
	format, err := call.ParseRateLimitFormat(f.Format)
	if err != nil {
		return rl, fmt.Errorf("--headers: must be none, ietf or x-ratelimit, got %q", f.Format)
	}
	rl.Format = format
	switch f.Reset {
	case "", "delta":
	case "unix":
		if format != call.RateLimitX {
			return rl, fmt.Errorf("--headers-reset: unix applies to --headers x-ratelimit only, got --headers %s", f.Format)
		}
		rl.Reset = call.UnitUnixTime
	default:
		return rl, fmt.Errorf("--headers-reset: must be delta or unix, got %q", f.Reset)
	}
	return rl, nil
}
