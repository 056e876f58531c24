package control

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/field"
)

// Controller names accepted in Config.Controller.
const (
	ControllerAIMD  = "aimd"
	ControllerCUBIC = "cubic"
)

// Config holds the limiter's options. Rates are in units per minute and
// describe the whole budget shared by all instances; each Limiter takes its
// share (see Instances). Start from DefaultConfig and change what you need.
type Config struct {
	// Disabled turns the limiter into a pass-through: every request is
	// granted at once and the rate never changes, but units and throttles
	// are still counted in the metrics. The config file spells it
	// "enabled" (default true).
	Disabled bool `yaml:"enabled,negated" doc:"false: never wait (units and throttles are still counted in the metrics)."`

	InitialUnitsPerMinute float64       `yaml:"initial_units_per_minute" doc:"The rate at start, in units per minute for the whole budget."`
	MinUnitsPerMinute     float64       `yaml:"min_units_per_minute" doc:"The rate is never cut below this."`
	MaxUnitsPerMinute     float64       `yaml:"max_units_per_minute" doc:"The rate is never raised above this."`
	Burst                 time.Duration `yaml:"burst" doc:"Bucket size, as time at the current rate; the adaptive law paces with at most 10 ms of it."`
	QueueLimit            int           `yaml:"queue_limit" doc:"The most jobs that may wait for units; more are rejected (naked and retried)."`
	MaxWait               time.Duration `yaml:"max_wait" doc:"A job that would wait longer is rejected (naked and retried)."`
	DecreaseCooldown      time.Duration `yaml:"decrease_cooldown" doc:"Classic rules and fleet: least time between two rate cuts."`
	MaxPause              time.Duration `yaml:"max_pause" doc:"Cap on a pause for Retry-After; 0s disables pauses."`
	Controller            string        `yaml:"controller" enum:"aimd,cubic" doc:"The shape of the adaptive law's probes above what the API accepted (aimd: linear, cubic: x³), or the classic controller (docs/limiter.md)."`
	// InitialFill is the fraction of the bucket that is full at start, from
	// 0 to 1; default 0: the first grants come at the initial rate, with no
	// startup burst.
	InitialFill float64 `yaml:"initial_fill" doc:"Fraction of the bucket full at start, 0 to 1: 0 sends the first units at the initial rate, with no startup burst."`
	// SlowStart selects the adaptive law (docs/limiter.md, "The adaptive
	// law"): startup doubling, an estimate of what the API accepts at each
	// throttle, probes above it; default true. False runs the classic
	// AIMD or CUBIC rules.
	SlowStart bool `yaml:"slow_start" doc:"true: the adaptive law (double while jobs wait until the first 429, then pace at what the API was seen to accept and probe above it); false: the classic AIMD/CUBIC rules (docs/limiter.md)."`
	// Window is the API's quota window for the adaptive law's estimate;
	// 0 (the default) learns it from the first throttle and the quota
	// headers' resets.
	Window time.Duration `yaml:"window" doc:"The API's quota window, for the adaptive law's estimate of what it accepts; 0s (default) learns it from the first 429 and the quota headers. At most 2m8s."`
	AIMD   AIMDConfig    `yaml:"aimd" doc:"The AIMD controller (controller aimd)."`
	CUBIC  CUBICConfig   `yaml:"cubic" doc:"The CUBIC controller (controller cubic)."`

	// Instances is the number of processes that share the budget; each
	// takes 1/Instances of it. Default 1.
	Instances int `yaml:"instances" doc:"Processes sharing the budget with limiter.share.mode static; each takes 1/instances of it."`
}

// AIMDConfig tunes the additive-increase, multiplicative-decrease controller.
type AIMDConfig struct {
	DecreaseFactor   float64       `yaml:"decrease_factor" doc:"Classic rules and fleet: rate multiplier on a cut."`
	IncreaseStep     float64       `yaml:"increase_step" doc:"Classic rules and fleet: units per minute added per raise (whole budget)."`
	IncreaseInterval time.Duration `yaml:"increase_interval" doc:"Classic rules and fleet: least time between two raises."`
}

// CUBICConfig tunes the CUBIC controller (RFC 8312 window curve).
type CUBICConfig struct {
	Beta          float64 `yaml:"beta" doc:"Classic rules and fleet: rate multiplier on a cut."`
	ScaleConstant float64 `yaml:"scale_constant" doc:"Classic rules and fleet: C, in units per minute per second cubed (whole budget): how fast the curve climbs back to the rate of the last cut."`
}

// DefaultCUBICScaleConstant is CUBIC's default C in units/min per s³ for the
// whole budget, chosen with the control benchmark (docs/simulator.md): it
// brings the curve back to w_max in about one 60 s quota window.
const DefaultCUBICScaleConstant = 0.003

// Upper bounds in Config.
const (
	MaxQueueLimit = 1_000_000
	MaxInstances  = 10_000
	MaxWindow     = binCount * binWidth / 2 // half the adaptive law's record
)

// DefaultConfig returns the documented defaults.
func DefaultConfig() Config {
	return Config{
		InitialUnitsPerMinute: 600,
		MinUnitsPerMinute:     60,
		MaxUnitsPerMinute:     10_000_000,
		Burst:                 10 * time.Second,
		QueueLimit:            500,
		MaxWait:               100 * time.Second,
		DecreaseCooldown:      5 * time.Second,
		MaxPause:              30 * time.Second,
		Controller:            ControllerAIMD,
		InitialFill:           0,
		SlowStart:             true,
		AIMD: AIMDConfig{
			DecreaseFactor:   0.7,
			IncreaseStep:     120,
			IncreaseInterval: 10 * time.Second,
		},
		CUBIC: CUBICConfig{
			Beta:          0.7,
			ScaleConstant: DefaultCUBICScaleConstant,
		},
		Instances: 1,
	}
}

// Validate reports every option that breaks its rule, each as a
// *field.Error naming the option as the config file's limiter section
// spells it ("aimd.decrease_factor").
func (c Config) Validate() error {
	var errs []error
	bad := func(name string, value any, rule string) {
		errs = append(errs, field.Invalid(name, "must be %s, got %v", rule, value))
	}
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	finitePos := func(v float64) bool { return v > 0 && !math.IsInf(v, 0) && !math.IsNaN(v) }
	if !finitePos(c.MinUnitsPerMinute) {
		bad("min_units_per_minute", c.MinUnitsPerMinute, "> 0")
	}
	if !finitePos(c.MaxUnitsPerMinute) {
		bad("max_units_per_minute", c.MaxUnitsPerMinute, "> 0")
	} else if c.MaxUnitsPerMinute < c.MinUnitsPerMinute {
		bad("max_units_per_minute", c.MaxUnitsPerMinute, fmt.Sprintf(">= min_units_per_minute (%s)", num(c.MinUnitsPerMinute)))
	}
	if !finitePos(c.InitialUnitsPerMinute) {
		bad("initial_units_per_minute", c.InitialUnitsPerMinute, "> 0")
	} else if c.InitialUnitsPerMinute < c.MinUnitsPerMinute || c.InitialUnitsPerMinute > c.MaxUnitsPerMinute {
		bad("initial_units_per_minute", c.InitialUnitsPerMinute,
			fmt.Sprintf("between min_units_per_minute (%s) and max_units_per_minute (%s)", num(c.MinUnitsPerMinute), num(c.MaxUnitsPerMinute)))
	}
	if c.Burst < 0 {
		bad("burst", c.Burst, ">= 0")
	}
	if c.QueueLimit < 0 || c.QueueLimit > MaxQueueLimit {
		bad("queue_limit", c.QueueLimit, fmt.Sprintf("from 0 to %d", MaxQueueLimit))
	}
	if c.MaxWait <= 0 {
		bad("max_wait", c.MaxWait, "> 0")
	}
	if c.DecreaseCooldown < 0 {
		bad("decrease_cooldown", c.DecreaseCooldown, ">= 0")
	}
	if c.MaxPause < 0 {
		bad("max_pause", c.MaxPause, ">= 0")
	}
	switch c.Controller {
	case ControllerAIMD, ControllerCUBIC:
	default:
		bad("controller", fmt.Sprintf("%q", c.Controller), `"aimd" or "cubic"`)
	}
	if !(c.AIMD.DecreaseFactor > 0 && c.AIMD.DecreaseFactor < 1) {
		bad("aimd.decrease_factor", c.AIMD.DecreaseFactor, "in (0, 1)")
	}
	if !finitePos(c.AIMD.IncreaseStep) {
		bad("aimd.increase_step", c.AIMD.IncreaseStep, "> 0")
	}
	if c.AIMD.IncreaseInterval < 0 {
		bad("aimd.increase_interval", c.AIMD.IncreaseInterval, ">= 0")
	}
	if !(c.CUBIC.Beta > 0 && c.CUBIC.Beta < 1) {
		bad("cubic.beta", c.CUBIC.Beta, "in (0, 1)")
	}
	if !finitePos(c.CUBIC.ScaleConstant) {
		bad("cubic.scale_constant", c.CUBIC.ScaleConstant, "> 0")
	}
	if c.Instances < 1 || c.Instances > MaxInstances {
		bad("instances", c.Instances, fmt.Sprintf("from 1 to %d", MaxInstances))
	}
	if c.Window < 0 || c.Window > MaxWindow {
		bad("window", c.Window, fmt.Sprintf("from 0s to %v (the adaptive law's record; a longer quota is for quota headers)", MaxWindow))
	}
	if !(c.InitialFill >= 0 && c.InitialFill <= 1) {
		bad("initial_fill", c.InitialFill, "between 0 and 1")
	}
	return errors.Join(errs...)
}
