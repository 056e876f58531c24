package main

import (
	"context"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/app/simulate"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/web"
)

func newSimulateCmd() *cobra.Command {
	var f simulate.Options
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "Simulate the limiter against a model API with a hidden quota, in virtual time",
		Long: `simulate runs model clients, each with its own limiter and a retry handler
(3 retries after a 429, honouring Retry-After), against a model API that
accepts at most --quota units in any sliding --window (60 s) and answers 429
with Retry-After beyond it. It runs in virtual time: 15 minutes take a fraction
of a second, and the same flags and --seed always give the same output.

Model APIs (--api): window, the sliding window; leaky, a gateway's leaky
bucket (nginx limit_req) whose calls may go --burst-units ahead of the steady
rate; fixed, a --window that resets (GitHub), Retry-After to the reset;
bucket, Envoy's local rate limit: at most --burst-units tokens (default: one
fill), refilled every --fill-interval with quota × interval / window tokens,
Retry-After to the fill that makes room; weighted, a sliding window estimated
from two fixed periods of --window (HAProxy's stick-table rates, Kong's and
Cloudflare's sliding windows). --count-refused (window, fixed, weighted): a
refused call counts against the quota too (HAProxy's stick-table counters).
--delay (leaky): an accepted call ahead of the steady rate is answered at its
turn, as nginx limit_req without nodelay answers.
--no-retry-after: a refusal names no Retry-After, as gateways answer.
--concurrency N: the API also refuses a call, with a 429 and no Retry-After,
when N calls are in flight; a call is in flight for its whole round trip
(--latency, 100 ms). --idle D: the demand starts after D, and every figure
counts from then.

Scenarios: first-throttle, noisy-neighbor (half the quota taken from 5:00 to
6:00), three-instances (a third instance joins at 5:00), no-limiter
(first-throttle with mode none), ramp (quota 30,000 against an initial 600).
Modes: aimd, cubic, static (a fixed rate at the initial rate), none (retries
only). --quota, --instances and --demand replace the scenario's values.
--share fleet runs the instances on one controller for the whole budget, as
limiter.share.mode members does (a fleet change reaches each instance after
--share-delay); --share local, the default, gives each its own.

--json prints one object: utilization, utilization_steady, throttled,
requests, units_accepted, p95_wait_s, rejected, gave_up, recovery_s,
time_to_90_s (null when there is no quota drop to recover from, or when 90%
is never reached). --svg writes a chart. --compare runs every mode and share
on every scenario (or on those --scenario, --mode and --share name) and
prints one table. --zoo runs every model API at several quotas and settings
beside its oracle, the best fixed-rate pacer in hindsight, and prints one
table (docs/simulator.md, "The zoo").
--serve ADDR serves an interactive page of the simulation instead (see
docs/ui.md). --headers ietf|x-ratelimit makes the model API send quota
headers with every response and the limiters read them (docs/target.md,
"Quota headers"); --headers-reset unix sends X-RateLimit-Reset as a Unix
time. See docs/simulator.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			if f.Serve != "" {
				var stop context.CancelFunc
				ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
				defer stop()
			}
			f.Changed = cmd.Flags().Changed
			return simulate.Run(ctx, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.Scenario, "scenario", sim.ScenarioFirstThrottle, "scenario: "+strings.Join(sim.Scenarios, ", "))
	fl.StringVar(&f.Mode, "mode", "", "aimd, cubic, static or none (default: the scenario's, aimd except for no-limiter)")
	fl.DurationVar(&f.Duration, "duration", 15*time.Minute, "virtual length of the run")
	fl.Float64Var(&f.Quota, "quota", 3000, "hidden quota, units per --window (ramp: 30000); with --zoo, the one quota to run, units per minute")
	fl.IntVar(&f.Instances, "instances", 2, "instances sharing the budget at the start")
	fl.Float64Var(&f.Demand, "demand", 2000, "units per minute offered to each instance (ramp: 20000)")
	fl.Uint64Var(&f.Seed, "seed", 1, "seed of the random source")
	fl.Float64Var(&f.Initial, "initial", 0, "initial_units_per_minute of the whole budget (default: the scenario's, 1500; ramp 600)")
	fl.Float64Var(&f.CubicScaleConstant, "cubic-scale-constant", 0, "cubic.scale_constant, units/min per s³ (default: the limiter's default)")
	registerHeaders(fl, &f.Headers, "the model API sends them with every response and the limiters read them")
	fl.StringVar(&f.API, "api", string(sim.APIWindow), "model API: window (a sliding window), leaky (a gateway's leaky bucket; strict: leaky), fixed (a window that resets), bucket (Envoy's token bucket) or weighted (HAProxy's two-period rate); with --zoo, the one API to run")
	fl.DurationVar(&f.Window, "window", sim.DefaultWindowSpan, "the span of --quota: the sliding or fixed window")
	fl.Float64Var(&f.Burst, "burst-units", 5, "with --api leaky: units a call may go ahead of the steady rate; with --api bucket: the bucket's size (default one fill)")
	fl.DurationVar(&f.FillInterval, "fill-interval", sim.DefaultFillInterval, "with --api bucket: how often quota × interval / window tokens are added")
	fl.BoolVar(&f.CountRefused, "count-refused", false, "with --api window, fixed or weighted: a refused call counts against the quota too")
	fl.BoolVar(&f.Delay, "delay", false, "with --api leaky: answer a call that went ahead of the steady rate at its turn (its excess ÷ the rate), as nginx limit_req does without nodelay")
	fl.BoolVar(&f.NoRetryAfter, "no-retry-after", false, "answer a refusal with a 429 and no Retry-After, as nginx limit_req, Envoy and HAProxy do by default")
	fl.IntVar(&f.Concurrency, "concurrency", 0, "the API refuses a call (429, no Retry-After) when this many are in flight; 0: no limit")
	fl.DurationVar(&f.Latency, "latency", 100*time.Millisecond, "mean round trip of a call (jitter ±20 ms, at most a fifth of it)")
	fl.DurationVar(&f.Idle, "idle", 0, "the demand starts after this; with --zoo, the idle rows' (default 60s; 0: none)")
	fl.Float64Var(&f.InitialFill, "initial-fill", 0, "initial_fill: the fraction of the bucket full at start (default: the limiter's default)")
	fl.BoolVar(&f.SlowStart, "slow-start", true, "slow_start (default: the limiter's default)")
	fl.BoolVar(&f.JSON, "json", false, "print the summary as one JSON object")
	fl.StringVar(&f.SVG, "svg", "", "write a chart of the run to this SVG file")
	fl.BoolVar(&f.Compare, "compare", false, "run every mode on every scenario and print a comparison table")
	fl.BoolVar(&f.Zoo, "zoo", false, "run every model API, quota and setting beside its oracle and print one table")
	fl.StringVar(&f.Seeds, "seeds", "1,7,23", "with --zoo: the seeds, comma-separated")
	fl.StringVar(&f.Serve, "serve", "", "serve the simulator page on this address, e.g. 127.0.0.1:8088 (docs/ui.md)")
	fl.Float64Var(&f.Speed, "speed", web.DefaultSimConfig().Speed, "with --serve: virtual seconds per real second at the start")
	fl.StringVar(&f.Share, "share", string(sim.ShareLocal), "local: one controller per instance; fleet: one controller for the whole budget (limiter.share.mode members)")
	fl.DurationVar(&f.ShareDelay, "share-delay", sim.DefaultShareDelay, "with --share fleet: how long a change of the fleet's rate takes to reach each instance")
	return cmd
}
