package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/app/simulate"
	"github.com/sluicehq/sluice/sim"
)

func newTestserverCmd() *cobra.Command {
	var f simulate.ServerOptions
	cmd := &cobra.Command{
		Use:   "testserver",
		Short: "Serve the model API with a hidden quota over HTTP",
		Long: `testserver is the simulator's model API as a real HTTP server: it accepts at
most --quota units in any sliding --window, and answers a call that does not
fit with 429 and a Retry-After of the seconds until it would (rounded up).
--api leaky models a gateway's leaky bucket instead (as nginx limit_req):
--quota units per --window leak out at a steady rate, a call may go ahead of
it by at most --burst-units, and one that does not fit gets 429 with a
Retry-After of the whole seconds until it would (rounded up, at least 1).
--api fixed is a window that resets (as GitHub's): the first call after a
window ends opens one of --window, which accepts --quota units; a refused
call's Retry-After is the seconds until it resets. --api bucket is Envoy's
local rate limit: a bucket of --burst-units tokens (default: one fill), full
at the start, that gains quota × --fill-interval / --window tokens at every
--fill-interval; a refused call's Retry-After is the seconds until the fill
that makes room. --api weighted is a sliding window estimated from two
fixed periods of --window, as HAProxy's stick-table rates (http_req_rate)
and Kong's and Cloudflare's sliding windows count: the last period's units
weigh by the share of the current one still to come; a refused call's
Retry-After is the seconds until that weight has run down enough.
--count-refused (window, fixed, weighted): a refused call counts against
the quota too, as HAProxy's stick-table counters do.
--delay (leaky): an accepted call ahead of the steady rate is answered at
its turn, as nginx limit_req without nodelay answers.
--no-retry-after: a refusal names no Retry-After, as nginx limit_req, Envoy
and HAProxy answer by default.

Every request is a call, whatever its method and path, except GET /stats and
GET /jobs. A call costs the X-Cost header's units, or its job type's price
(Sluice-Type or X-Job-Type header, priced with --type-cost TYPE=UNITS), or
--default-cost. The job id in Sluice-Job-Id (or X-Job-Id) is counted per
accepted call, so duplicates show in GET /stats ("jobs") and GET /jobs, and
--log FILE appends each accepted id on its own line; with --log-time each
line begins with the Unix time of the acceptance, in seconds to the
millisecond, and a space ("1733270400.125 job-000001").

--headers ietf sends RateLimit-Policy ("window";q=QUOTA;w=WINDOW) and
RateLimit ("window";r=REMAINING;t=RESET) with every answer; --headers
x-ratelimit sends X-RateLimit-Limit, X-RateLimit-Remaining and
X-RateLimit-Reset (delta seconds, or a Unix time with --headers-reset
unix). REMAINING is the units left in the window after the call, rounded
down; RESET the seconds until the oldest units in the window leave it,
rounded up.

--headers applies to window and fixed (RESET: the seconds until the fixed
window resets); leaky and bucket send no quota headers.

GET /stats: accepted_units, accepted_requests, throttled, window_units,
quota, window_s, too_large, bad_requests, jobs {distinct, duplicates,
without_id}. On SIGINT or SIGTERM the server stops and prints the final
stats as JSON. See docs/simulator.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.BurstSet = cmd.Flags().Changed("burst-units")
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return simulate.RunServer(ctx, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.API, "api", string(sim.APIWindow), "model API: window (a sliding window), leaky (a gateway's leaky bucket), fixed (a window that resets), bucket (Envoy's token bucket) or weighted (HAProxy's two-period rate)")
	fl.Float64Var(&f.Burst, "burst-units", 5, "with --api leaky: units a call may go ahead of the steady rate; with --api bucket: the bucket's size (default one fill)")
	fl.DurationVar(&f.FillInterval, "fill-interval", sim.DefaultFillInterval, "with --api bucket: how often quota × interval / window tokens are added")
	fl.BoolVar(&f.CountRefused, "count-refused", false, "with --api window, fixed or weighted: a refused call counts against the quota too")
	fl.BoolVar(&f.Delay, "delay", false, "with --api leaky: answer a call that went ahead of the steady rate at its turn (its excess ÷ the rate), as nginx limit_req does without nodelay")
	fl.BoolVar(&f.NoRetryAfter, "no-retry-after", false, "answer a refusal with a 429 and no Retry-After, as nginx limit_req, Envoy and HAProxy do by default")
	fl.Float64Var(&f.Quota, "quota", 3000, "hidden quota, units per window")
	fl.DurationVar(&f.Window, "window", sim.DefaultWindowSpan, "length of the sliding or fixed window, and the span of --quota")
	fl.StringVar(&f.Listen, "listen", "127.0.0.1:8080", "address to listen on")
	fl.StringArrayVar(&f.TypeCosts, "type-cost", nil, "price of a job type, TYPE=UNITS (repeatable)")
	fl.Float64Var(&f.DefaultCost, "default-cost", 1, "units of a call with no X-Cost and no priced type")
	fl.StringVar(&f.LogFile, "log", "", "append the id of every accepted call to this file")
	fl.BoolVar(&f.LogTime, "log-time", false, "with --log: begin each line with the Unix time of the acceptance (seconds, to the millisecond)")
	registerHeaders(fl, &f.Headers, "sent with every answer, computed from the window")
	return cmd
}
