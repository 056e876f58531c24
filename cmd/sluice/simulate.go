package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/web"
)

// simulateFlags are the flags of `sluice simulate`.
type simulateFlags struct {
	scenario  string
	mode      string
	duration  time.Duration
	quota     float64
	instances int
	demand    float64
	seed      uint64
	initial   float64
	scaleC    float64
	api       string
	window    time.Duration
	burst     float64
	fillEvery time.Duration
	refused   bool
	conc      int
	latency   time.Duration
	idle      time.Duration
	fill      float64
	slowStart bool
	json      bool
	svg       string
	compare   bool
	serve     string  // simserve.go
	speed     float64 // simserve.go
	share     string
	delay     time.Duration
	headers   headersFlags
	zoo       bool   // simzoo.go
	seeds     string // simzoo.go
}

func newSimulateCmd() *cobra.Command {
	var f simulateFlags
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
Retry-After to the fill that makes room. --count-refused (window, fixed): a
refused call counts against the quota too (HAProxy's stick-table counters).
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
			return runSimulate(cmd, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenario, "scenario", sim.ScenarioFirstThrottle, "scenario: "+strings.Join(sim.Scenarios, ", "))
	fl.StringVar(&f.mode, "mode", "", "aimd, cubic, static or none (default: the scenario's, aimd except for no-limiter)")
	fl.DurationVar(&f.duration, "duration", 15*time.Minute, "virtual length of the run")
	fl.Float64Var(&f.quota, "quota", 3000, "hidden quota, units per --window (ramp: 30000); with --zoo, the one quota to run, units per minute")
	fl.IntVar(&f.instances, "instances", 2, "instances sharing the budget at the start")
	fl.Float64Var(&f.demand, "demand", 2000, "units per minute offered to each instance (ramp: 20000)")
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the random source")
	fl.Float64Var(&f.initial, "initial", 0, "initial_units_per_minute of the whole budget (default: the scenario's, 1500; ramp 600)")
	fl.Float64Var(&f.scaleC, "cubic-scale-constant", 0, "cubic.scale_constant, units/min per s³ (default: the limiter's default)")
	f.headers.register(fl, "the model API sends them with every response and the limiters read them")
	fl.StringVar(&f.api, "api", string(sim.APIWindow), "model API: window (a sliding window), leaky (a gateway's leaky bucket; strict: leaky), fixed (a window that resets) or bucket (Envoy's token bucket); with --zoo, the one API to run")
	fl.DurationVar(&f.window, "window", sim.DefaultWindowSpan, "the span of --quota: the sliding or fixed window")
	fl.Float64Var(&f.burst, "burst-units", 5, "with --api leaky: units a call may go ahead of the steady rate; with --api bucket: the bucket's size (default one fill)")
	fl.DurationVar(&f.fillEvery, "fill-interval", sim.DefaultFillInterval, "with --api bucket: how often quota × interval / window tokens are added")
	fl.BoolVar(&f.refused, "count-refused", false, "with --api window or fixed: a refused call counts against the quota too")
	fl.IntVar(&f.conc, "concurrency", 0, "the API refuses a call (429, no Retry-After) when this many are in flight; 0: no limit")
	fl.DurationVar(&f.latency, "latency", 100*time.Millisecond, "mean round trip of a call (jitter ±20 ms, at most a fifth of it)")
	fl.DurationVar(&f.idle, "idle", 0, "the demand starts after this; with --zoo, the idle rows' (default 60s; 0: none)")
	fl.Float64Var(&f.fill, "initial-fill", 0, "initial_fill: the fraction of the bucket full at start (default: the limiter's default)")
	fl.BoolVar(&f.slowStart, "slow-start", true, "slow_start (default: the limiter's default)")
	fl.BoolVar(&f.json, "json", false, "print the summary as one JSON object")
	fl.StringVar(&f.svg, "svg", "", "write a chart of the run to this SVG file")
	fl.BoolVar(&f.compare, "compare", false, "run every mode on every scenario and print a comparison table")
	fl.BoolVar(&f.zoo, "zoo", false, "run every model API, quota and setting beside its oracle and print one table")
	fl.StringVar(&f.seeds, "seeds", "1,7,23", "with --zoo: the seeds, comma-separated")
	fl.StringVar(&f.serve, "serve", "", "serve the simulator page on this address, e.g. 127.0.0.1:8088 (docs/ui.md)")
	fl.Float64Var(&f.speed, "speed", web.DefaultSimConfig().Speed, "with --serve: virtual seconds per real second at the start")
	fl.StringVar(&f.share, "share", string(sim.ShareLocal), "local: one controller per instance; fleet: one controller for the whole budget (limiter.share.mode members)")
	fl.DurationVar(&f.delay, "share-delay", sim.DefaultShareDelay, "with --share fleet: how long a change of the fleet's rate takes to reach each instance")
	return cmd
}

// adjust applies the flags the user set to a scenario's Config.
func (f simulateFlags) adjust(cmd *cobra.Command) (func(*sim.Config), error) {
	changed := cmd.Flags().Changed
	switch {
	case f.duration <= 0:
		return nil, fmt.Errorf("--duration: must be > 0, got %v", f.duration)
	case changed("quota") && (!(f.quota > 0) || math.IsInf(f.quota, 0)):
		return nil, fmt.Errorf("--quota: must be > 0, got %v", f.quota)
	case changed("instances") && f.instances < 1:
		return nil, fmt.Errorf("--instances: must be >= 1, got %d", f.instances)
	case changed("demand") && (!(f.demand >= 0) || math.IsInf(f.demand, 0)):
		return nil, fmt.Errorf("--demand: must be >= 0, got %v", f.demand)
	case changed("initial") && !(f.initial > 0):
		return nil, fmt.Errorf("--initial: must be > 0, got %v", f.initial)
	case changed("cubic-scale-constant") && !(f.scaleC > 0):
		return nil, fmt.Errorf("--cubic-scale-constant: must be > 0, got %v", f.scaleC)
	case f.delay < 0:
		return nil, fmt.Errorf("--share-delay: must be >= 0, got %v", f.delay)
	case changed("burst-units") && (!(f.burst >= 0) || math.IsInf(f.burst, 0)):
		return nil, fmt.Errorf("--burst-units: must be >= 0, got %v", f.burst)
	case changed("initial-fill") && !(f.fill >= 0 && f.fill <= 1):
		return nil, fmt.Errorf("--initial-fill: must be between 0 and 1, got %v", f.fill)
	case f.window <= 0:
		return nil, fmt.Errorf("--window: must be > 0, got %v", f.window)
	case f.fillEvery <= 0:
		return nil, fmt.Errorf("--fill-interval: must be > 0, got %v", f.fillEvery)
	case f.conc < 0:
		return nil, fmt.Errorf("--concurrency: must be >= 0, got %d", f.conc)
	case f.latency <= 0:
		return nil, fmt.Errorf("--latency: must be > 0, got %v", f.latency)
	case f.idle < 0 || f.idle >= f.duration:
		return nil, fmt.Errorf("--idle: must be >= 0 and less than --duration (%v), got %v", f.duration, f.idle)
	}
	share, err := sim.ParseShare(f.share)
	if err != nil {
		return nil, fmt.Errorf("--share: %w", err)
	}
	headers, err := f.headers.parse()
	if err != nil {
		return nil, err
	}
	var api sim.API
	if changed("api") {
		if api, err = sim.ParseAPI(f.api); err != nil {
			return nil, fmt.Errorf("--api: %w", err)
		}
	}
	return func(c *sim.Config) {
		c.Duration = f.duration
		c.Seed = f.seed
		if changed("quota") {
			c.Quota = f.quota
		}
		if changed("instances") {
			c.Instances = f.instances
		}
		if changed("demand") {
			c.Demand = f.demand
		}
		if changed("initial") {
			c.Limiter.InitialUnitsPerMinute = f.initial
		}
		if changed("cubic-scale-constant") {
			c.Limiter.CUBIC.ScaleConstant = f.scaleC
		}
		c.Share, c.ShareDelay = share, f.delay
		c.Headers = headers
		if api != "" {
			c.API = api
		}
		if changed("window") {
			c.Window = f.window
		}
		c.FillInterval = f.fillEvery
		if changed("burst-units") {
			c.BurstUnits = f.burst
		} else if c.API == sim.APIBucket {
			c.BurstUnits = c.Quota * f.fillEvery.Seconds() / c.Window.Seconds()
		}
		c.CountRefused = f.refused
		c.Concurrency = f.conc
		if changed("latency") {
			c.Latency = f.latency
			c.Jitter = min(c.Jitter, f.latency/5)
		}
		c.Idle = f.idle
		if changed("initial-fill") {
			c.Limiter.InitialFill = f.fill
		}
		if changed("slow-start") {
			c.Limiter.SlowStart = f.slowStart
		}
		if c.Idle+c.SteadyFrom >= c.Duration {
			c.SteadyFrom = 0
		}
	}, nil
}

func runSimulate(cmd *cobra.Command, f simulateFlags) error {
	adjust, err := f.adjust(cmd)
	if err != nil {
		return cli.UsageError(err)
	}
	var mode sim.Mode
	if f.mode != "" {
		if mode, err = sim.ParseMode(f.mode); err != nil {
			return cli.UsageError(fmt.Errorf("--mode: %w", err))
		}
	}
	if _, err := sim.Scenario(f.scenario); err != nil {
		return cli.UsageError(fmt.Errorf("--scenario: %w", err))
	}
	if f.zoo {
		return runZoo(cmd, f, mode)
	}
	if cmd.Flags().Changed("seeds") {
		return cli.UsageError(errors.New("--seeds: applies to --zoo only"))
	}
	if f.compare {
		if f.json || f.svg != "" || f.serve != "" {
			return cli.UsageError(errors.New("--compare: cannot be combined with --json, --svg or --serve"))
		}
		scenarios, modes := sim.CompareScenarios, sim.Modes
		if cmd.Flags().Changed("scenario") {
			scenarios = []string{f.scenario}
		}
		if mode != "" {
			modes = []sim.Mode{mode}
		}
		shares := sim.Shares
		if cmd.Flags().Changed("share") {
			shares = []sim.Share{sim.Share(f.share)}
		}
		rows, err := sim.Compare(scenarios, modes, shares, adjust)
		if err != nil {
			return err
		}
		return sim.WriteTable(cmd.OutOrStdout(), rows)
	}
	cfg, _ := sim.Scenario(f.scenario)
	if mode != "" {
		if f.scenario == sim.ScenarioNoLimiter && mode != sim.ModeNone {
			return cli.UsageError(fmt.Errorf("--mode: scenario no-limiter runs with mode none; use --scenario first-throttle --mode %s", mode))
		}
		cfg.Mode = mode
	}
	adjust(&cfg)
	if f.serve != "" {
		return serveSimulator(cmd, f, cfg)
	}
	res, err := sim.Run(cfg)
	if err != nil {
		return err
	}
	if f.svg != "" {
		var b bytes.Buffer
		if err := res.WriteSVG(&b); err != nil {
			return err
		}
		if err := os.WriteFile(f.svg, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--svg: %w", err)
		}
	}
	out := cmd.OutOrStdout()
	if f.json {
		b, err := json.Marshal(res.Summary)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(out, "%s\n", b)
		return err
	}
	return writeSimSummary(out, res)
}

func writeSimSummary(w io.Writer, res *sim.Result) error {
	c, s := res.Config, res.Summary
	fmt.Fprintf(w, "scenario %s, mode %s, share %s, seed %d, %v of virtual time\n", c.Name, c.Mode, c.Share, c.Seed, c.Duration)
	fmt.Fprintf(w, "api %s, hidden quota %v units per %v; %d instances, each offered %v units/min; initial rate %v units/min\n",
		c.API, c.Quota, c.Window, c.Instances, c.Demand, c.Limiter.InitialUnitsPerMinute)
	if c.Idle > 0 {
		fmt.Fprintf(w, "the demand starts after %v of idle time; the figures count from then\n", c.Idle)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	opt := func(v *float64, none string) string {
		if v == nil {
			return none
		}
		return strconv.FormatFloat(*v, 'f', -1, 64)
	}
	noDrop := "– (no quota drop)"
	for _, e := range c.Events {
		if e.Kind == sim.QuotaDrop {
			noDrop = "– (never reached 90%)"
		}
	}
	fmt.Fprintf(tw, "utilization\t%.3f\taccepted units ÷ quota capacity\n", s.Utilization)
	fmt.Fprintf(tw, "utilization_steady\t%.3f\tfrom %v on\n", s.UtilizationSteady, c.SteadyFrom)
	fmt.Fprintf(tw, "throttled\t%d\t429 responses\n", s.Throttled)
	fmt.Fprintf(tw, "requests\t%d\tcalls that reached the API\n", s.Requests)
	fmt.Fprintf(tw, "units_accepted\t%v\t\n", s.UnitsAccepted)
	fmt.Fprintf(tw, "p95_wait_s\t%.3f\twait for units in the limiter\n", s.P95WaitS)
	fmt.Fprintf(tw, "rejected\t%d\tturned away by the limiter (queue full, max_wait)\n", s.Rejected)
	fmt.Fprintf(tw, "gave_up\t%d\tjobs dropped after the last retry\n", s.GaveUp)
	fmt.Fprintf(tw, "recovery_s\t%s\tafter the quota returns, to 90%% of it\n", opt(s.RecoverySeconds, noDrop))
	fmt.Fprintf(tw, "time_to_90_s\t%s\tfrom the start, to 90%% of the quota\n", opt(s.TimeTo90Seconds, "– (never)"))
	fmt.Fprintf(tw, "queue\tmax %d, mean %.1f\trequests waiting in all limiters\n", res.MaxQueue, res.MeanQueue)
	return tw.Flush()
}
