package main

import (
	"github.com/spf13/pflag"

	"github.com/sluicehq/sluice/internal/app/simulate"
)

// registerHeaders defines --headers and --headers-reset of simulate and
// testserver: the quota headers the model API sends.
func registerHeaders(fl *pflag.FlagSet, h *simulate.Headers, what string) {
	fl.StringVar(&h.Format, "headers", "none", "quota headers: none, ietf or x-ratelimit; "+what)
	fl.StringVar(&h.Reset, "headers-reset", "delta", "with --headers x-ratelimit: X-RateLimit-Reset as delta seconds or a unix time")
}
