package main

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/call"
)

// headersFlags are --headers and --headers-reset of simulate and
// testserver: the quota headers the model API sends.
type headersFlags struct {
	format string
	reset  string
}

func (f *headersFlags) register(fl *pflag.FlagSet, what string) {
	fl.StringVar(&f.format, "headers", "none", "quota headers: none, ietf or x-ratelimit; "+what)
	fl.StringVar(&f.reset, "headers-reset", "delta", "with --headers x-ratelimit: X-RateLimit-Reset as delta seconds or a unix time")
}

// parse reads the flags; unset (empty) flags are none and delta.
func (f headersFlags) parse() (call.RateLimitHeaders, error) {
	var rl call.RateLimitHeaders
	if f.format == "" {
		f.format = "none"
	}
	format, err := call.ParseRateLimitFormat(f.format)
	if err != nil {
		return rl, fmt.Errorf("--headers: must be none, ietf or x-ratelimit, got %q", f.format)
	}
	rl.Format = format
	switch f.reset {
	case "", "delta":
	case "unix":
		if format != call.RateLimitX {
			return rl, fmt.Errorf("--headers-reset: unix applies to --headers x-ratelimit only, got --headers %s", f.format)
		}
		rl.Reset = call.UnitUnixTime
	default:
		return rl, fmt.Errorf("--headers-reset: must be delta or unix, got %q", f.reset)
	}
	return rl, nil
}
