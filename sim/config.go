package sim

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/limiter"
)

// Mode is how the model clients hold back their requests.
type Mode string

// Modes.
const (
	// ModeAIMD runs each instance's limiter with the AIMD controller.
	ModeAIMD Mode = "aimd"
	// ModeCUBIC runs each instance's limiter with the CUBIC controller.
	ModeCUBIC Mode = "cubic"
	// ModeNone sends every attempt at once: retries only, no limiter.
	ModeNone Mode = "none"
	// ModeStatic holds each instance to a fixed rate with no adaptation, as
	// a token bucket such as golang.org/x/time/rate is usually run: the
	// limiter's bucket and queue at the initial rate share of the starting
	// instance count, and no outcome is ever fed back to it. An instance
	// that joins later gets the same fixed rate.
	ModeStatic Mode = "static"
)

// Modes lists every mode in the order of the comparison table.
var Modes = []Mode{ModeAIMD, ModeCUBIC, ModeStatic, ModeNone}

// ParseMode returns the Mode named s.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if string(m) == s {
			return m, nil
		}
	}
	return "", fmt.Errorf("sim: unknown mode %q (want %s)", s, joinModes())
}

func joinModes() string {
	names := make([]string, len(Modes))
	for i, m := range Modes {
		names[i] = string(m)
	}
	return strings.Join(names, ", ")
}

// EventKind names a scenario event.
type EventKind string

// Event kinds.
const (
	// QuotaDrop: another client takes Fraction of the quota from At for
	// For. The model removes that part from the quota the simulated clients
	// can use; the other client's own traffic is not simulated.
	QuotaDrop EventKind = "quota_drop"
	// InstanceCount: the number of instances becomes Count at At. New
	// instances join with a fresh limiter; when the count shrinks, the
	// newest instances leave and their waiting and in-flight work is
	// dropped (a real worker would hand it back to the queue). Every
	// remaining limiter rescales to the new count.
	InstanceCount EventKind = "instances"
	// DemandChange: each instance's demand becomes Demand units per minute
	// at At.
	DemandChange EventKind = "demand"
)

// Event is a change applied during a run.
type Event struct {
	At       time.Duration // from the start
	Kind     EventKind
	For      time.Duration // QuotaDrop: how long the quota stays down
	Fraction float64       // QuotaDrop: the part of the quota taken, in (0, 1)
	Count    int           // InstanceCount: the new number of instances, >= 1
	Demand   float64       // DemandChange: units per minute per instance, >= 0
}

// Config describes one run. Start from DefaultConfig or Scenario.
type Config struct {
	// Name labels the run in charts and tables; Scenario sets it.
	Name string
	// Mode selects the limiter. Default ModeAIMD.
	Mode Mode
	// Limiter holds the limiter options for the whole budget. Its
	// Controller is set from Mode and its Instances from Instances.
	// Default limiter.DefaultConfig().
	Limiter limiter.Config

	Duration time.Duration // virtual length of the run; default 15m
	Seed     uint64        // seed of the random source (arrivals, costs, latency)

	// The model API.
	API    API           // APIWindow (default), APILeaky, APIFixed, APIBucket or APIWeighted
	Quota  float64       // hidden quota in units per Window; default 3000
	Window time.Duration // the sliding or fixed window (APILeaky, APIBucket: the span of Quota); default 60s
	// BurstUnits is how far ahead of the steady rate APILeaky lets calls
	// go, in units (default 5), and the size of APIBucket's bucket (at
	// least one fill's tokens). The other APIs ignore it.
	BurstUnits float64
	// FillInterval is how often APIBucket adds Quota × FillInterval /
	// Window tokens; default 1s.
	FillInterval time.Duration
	// CountRefused makes APIWindow, APIFixed and APIWeighted count the
	// units of a refused call against the quota too.
	CountRefused bool
	// Delay makes APILeaky hold an accepted call that went ahead of the
	// steady rate until its turn (its excess over the rate) before
	// answering it, as nginx limit_req does without nodelay.
	Delay bool
	// NoRetryAfter makes the API answer a refusal with a 429 and no
	// Retry-After, as nginx's limit_req, Envoy's local rate limit and
	// HAProxy's deny do by default.
	NoRetryAfter bool
	// Concurrency, when > 0, makes the API refuse a call with a 429 and no
	// Retry-After when that many calls are in flight. With it, a call is in
	// flight from the instant it is sent until its answer arrives (the
	// round trip is the API's processing time), and the quota decides it
	// at the instant it is sent.
	Concurrency int
	// Headers are the quota headers the model API sends with every
	// response, and that the clients' limiters read (SetQuotaHeaders).
	// The zero value sends none.
	Headers call.RateLimitHeaders

	// The model clients.
	Instances  int           // instances at the start; default 2
	Demand     float64       // units per minute offered to each instance; default 2000
	Costs      []float64     // job costs, drawn with equal odds; default 1, 2, 5
	Latency    time.Duration // mean round trip of a call; default 100ms
	Jitter     time.Duration // the round trip is uniform in Latency ± Jitter; default 20ms
	MaxRetries int           // retries after a 429, on top of the first attempt; default 3
	// Backoff is the first retry delay when a 429 carries no Retry-After;
	// it doubles for each later retry. The model API always sends
	// Retry-After, so it matters only to custom uses. Default 2s.
	Backoff time.Duration

	Events []Event

	// Idle is how long the clients run before any demand arrives, as a
	// worker started before its jobs are enqueued. Every measurement
	// counts from the end of it.
	Idle time.Duration

	// SteadyFrom is where utilization_steady starts counting, after Idle;
	// default 60s (the start of minute 2 of the demand).
	SteadyFrom time.Duration

	// Share is how the instances adapt: ShareLocal (default), one
	// controller each, or ShareFleet, one controller for the whole budget
	// (modes aimd and cubic; the other modes do not adapt and ignore it).
	Share Share
	// ShareDelay is how long a change of the fleet's state takes to reach
	// each instance (ShareFleet); default DefaultShareDelay.
	ShareDelay time.Duration
}

// DefaultConfig returns the defaults: the limiter's defaults, 2 instances
// with a demand of 2000 units per minute each, a hidden quota of 3000 units
// per 60 s, costs 1, 2 or 5, a round trip of 100 ms ± 20 ms, 3 retries,
// 15 minutes, mode aimd, seed 1.
func DefaultConfig() Config {
	return Config{
		Mode:         ModeAIMD,
		Limiter:      limiter.DefaultConfig(),
		Duration:     15 * time.Minute,
		Seed:         1,
		API:          APIWindow,
		Quota:        3000,
		BurstUnits:   5,
		Window:       DefaultWindowSpan,
		FillInterval: DefaultFillInterval,
		Instances:    2,
		Demand:       2000,
		Costs:        []float64{1, 2, 5},
		Latency:      100 * time.Millisecond,
		Jitter:       20 * time.Millisecond,
		MaxRetries:   3,
		Backoff:      2 * time.Second,
		SteadyFrom:   time.Minute,
		Share:        ShareLocal,
		ShareDelay:   DefaultShareDelay,
	}
}

// Scenario names.
const (
	ScenarioFirstThrottle  = "first-throttle"
	ScenarioNoisyNeighbor  = "noisy-neighbor"
	ScenarioThreeInstances = "three-instances"
	ScenarioNoLimiter      = "no-limiter"
	ScenarioRamp           = "ramp"
	ScenarioStrict         = "strict"
)

// Scenarios lists the scenario names.
var Scenarios = []string{ScenarioFirstThrottle, ScenarioNoisyNeighbor, ScenarioThreeInstances, ScenarioNoLimiter, ScenarioRamp, ScenarioStrict}

// SeedInitialRate is the initial rate of the reference scenarios (the whole
// budget, units per minute).
const SeedInitialRate = 1500

// Scenario returns the Config of a named scenario:
//
//   - first-throttle: the defaults with initial_units_per_minute 1500;
//     the rate climbs to the first 429, is cut, and pauses.
//   - noisy-neighbor: first-throttle, and another client takes half the
//     quota from 5:00 to 6:00.
//   - three-instances: first-throttle, and a third instance joins at 5:00
//     (each instance keeps its demand of 2000 units per minute).
//   - no-limiter: first-throttle with mode none (retries only).
//   - ramp: a quota 50 times the initial rate (30,000 against the default
//     600) and a demand of 20,000 units per minute per instance, keeping the
//     reference's ratio of demand to quota; time_to_90_s is the figure to read.
//   - strict: a gateway's leaky bucket (APILeaky) of 1,200 units per minute
//     with a burst of 5 units, one instance, cost 1 per job, and a demand of
//     2,400 units per minute (a backlog that always waits), from the
//     limiter's default initial rate.
func Scenario(name string) (Config, error) {
	c := DefaultConfig()
	c.Name = name
	c.Limiter.InitialUnitsPerMinute = SeedInitialRate
	switch name {
	case ScenarioFirstThrottle:
	case ScenarioNoisyNeighbor:
		c.Events = []Event{{At: 5 * time.Minute, Kind: QuotaDrop, For: time.Minute, Fraction: 0.5}}
	case ScenarioThreeInstances:
		c.Events = []Event{{At: 5 * time.Minute, Kind: InstanceCount, Count: 3}}
	case ScenarioNoLimiter:
		c.Mode = ModeNone
	case ScenarioRamp:
		c.Limiter.InitialUnitsPerMinute = limiter.DefaultConfig().InitialUnitsPerMinute
		c.Quota = 30000
		c.Demand = 20000
	case ScenarioStrict:
		c.Limiter.InitialUnitsPerMinute = limiter.DefaultConfig().InitialUnitsPerMinute
		c.API = APILeaky
		c.Quota = 1200
		c.BurstUnits = 5
		c.Instances = 1
		c.Costs = []float64{1}
		c.Demand = 2400
	default:
		return Config{}, fmt.Errorf("sim: unknown scenario %q (want %s)", name, strings.Join(Scenarios, ", "))
	}
	return c, nil
}

// Validate reports every field that breaks its rule.
func (c Config) Validate() error {
	var errs []error
	bad := func(field string, value any, rule string) {
		errs = append(errs, fmt.Errorf("sim: %s: must be %s, got %v", field, rule, value))
	}
	finite := func(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
	if _, err := ParseMode(string(c.Mode)); err != nil {
		errs = append(errs, err)
	}
	if c.Duration <= 0 {
		bad("duration", c.Duration, "> 0")
	}
	if !(c.Quota > 0) || !finite(c.Quota) {
		bad("quota", c.Quota, "> 0")
	}
	if c.Window <= 0 {
		bad("window", c.Window, "> 0")
	}
	if err := c.Headers.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sim: headers: %w", err))
	}
	errs = append(errs, c.apiSpec().validate()...)
	if c.Concurrency < 0 {
		bad("concurrency", c.Concurrency, ">= 0")
	}
	if c.Instances < 1 {
		bad("instances", c.Instances, ">= 1")
	}
	if !(c.Demand >= 0) || !finite(c.Demand) {
		bad("demand", c.Demand, ">= 0")
	}
	if len(c.Costs) == 0 {
		bad("costs", c.Costs, "non-empty")
	}
	for _, v := range c.Costs {
		if !(v > 0) || !finite(v) {
			bad("costs", c.Costs, "all > 0")
			break
		}
	}
	if c.Latency < 0 {
		bad("latency", c.Latency, ">= 0")
	}
	if c.Jitter < 0 || c.Jitter > c.Latency {
		bad("jitter", c.Jitter, fmt.Sprintf("between 0 and latency (%v)", c.Latency))
	}
	if c.MaxRetries < 0 {
		bad("max_retries", c.MaxRetries, ">= 0")
	}
	if c.Backoff < 0 {
		bad("backoff", c.Backoff, ">= 0")
	}
	if _, err := ParseShare(string(c.Share)); err != nil && c.Share != "" {
		errs = append(errs, err)
	}
	if c.ShareDelay < 0 {
		bad("share_delay", c.ShareDelay, ">= 0")
	}
	if c.Idle < 0 || c.Idle >= c.Duration {
		bad("idle", c.Idle, fmt.Sprintf("in [0, duration (%v))", c.Duration))
	} else if c.SteadyFrom < 0 || c.Idle+c.SteadyFrom >= c.Duration {
		bad("steady_from", c.SteadyFrom, fmt.Sprintf("in [0, duration − idle (%v))", c.Duration-c.Idle))
	}
	maxCost := 0.0
	if len(c.Costs) > 0 {
		maxCost = slices.Max(c.Costs)
	}
	for i, e := range c.Events {
		e.validate(fmt.Sprintf("events[%d]", i), c.Quota, maxCost, bad)
	}
	if maxCost > c.Quota {
		bad("costs", c.Costs, fmt.Sprintf("at most the quota (%v)", c.Quota))
	}
	if c.API == APIBucket && maxCost > c.BurstUnits {
		bad("costs", c.Costs, fmt.Sprintf("at most the bucket's burst_units (%v)", c.BurstUnits))
	}
	lc := c.limiterConfig()
	if err := lc.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sim: %w", field.Under("limiter", err)))
	}
	return errors.Join(errs...)
}

// validate reports, through bad, the fields of the event f that break
// their rule: a drop must leave the largest cost of the run in the quota.
func (e Event) validate(f string, quota, maxCost float64, bad func(field string, value any, rule string)) {
	if e.At < 0 {
		bad(f+".at", e.At, ">= 0")
	}
	switch e.Kind {
	case QuotaDrop:
		if !(e.Fraction > 0 && e.Fraction < 1) {
			bad(f+".fraction", e.Fraction, "in (0, 1)")
		} else if quota*(1-e.Fraction) < maxCost {
			bad(f+".fraction", e.Fraction, fmt.Sprintf("small enough to leave the largest cost (%v) in the quota", maxCost))
		}
		if e.For <= 0 {
			bad(f+".for", e.For, "> 0")
		}
	case InstanceCount:
		if e.Count < 1 {
			bad(f+".count", e.Count, ">= 1")
		}
	case DemandChange:
		if !(e.Demand >= 0) || math.IsInf(e.Demand, 0) {
			bad(f+".demand", e.Demand, ">= 0")
		}
	default:
		bad(f+".kind", fmt.Sprintf("%q", e.Kind), `"quota_drop", "instances" or "demand"`)
	}
}

func (c Config) apiSpec() apiSpec {
	return apiSpec{api: c.API, quota: c.Quota, span: c.Window, burst: c.BurstUnits, fill: c.FillInterval, countRefused: c.CountRefused, delay: c.Delay, headers: c.Headers}
}

// limiterConfig is the limiter's Config for the run's mode and instances.
func (c Config) limiterConfig() limiter.Config {
	lc := c.Limiter
	lc.Instances = c.Instances
	lc.Disabled = false
	switch c.Mode {
	case ModeCUBIC:
		lc.Controller = limiter.ControllerCUBIC
	case ModeAIMD:
		lc.Controller = limiter.ControllerAIMD
	}
	return lc
}
