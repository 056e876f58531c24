package limiter

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
	Disabled bool `yaml:"enabled,negated"`

	InitialUnitsPerMinute float64       `yaml:"initial_units_per_minute"` // default 600
	MinUnitsPerMinute     float64       `yaml:"min_units_per_minute"`     // default 60
	MaxUnitsPerMinute     float64       `yaml:"max_units_per_minute"`     // default 10,000,000
	Burst                 time.Duration `yaml:"burst"`                    // bucket size as time at the current rate; default 10s
	QueueLimit            int           `yaml:"queue_limit"`              // most requests that may wait; default 500
	MaxWait               time.Duration `yaml:"max_wait"`                 // longest a request may wait; default 100s
	DecreaseCooldown      time.Duration `yaml:"decrease_cooldown"`        // least time between two cuts; default 5s
	MaxPause              time.Duration `yaml:"max_pause"`                // cap on a Retry-After pause, 0 disables pauses; default 30s
	Controller            string        `yaml:"controller"`               // ControllerAIMD (default) or ControllerCUBIC
	// InitialFill is the fraction of the bucket that is full at start, from
	// 0 to 1; default 0: the first grants come at the initial rate, with no
	// startup burst.
	InitialFill float64 `yaml:"initial_fill"`
	// SlowStart makes the rate grow multiplicatively before the first
	// throttle, and fall back at it to the rate the API was seen to accept
	// (docs/limiter.md, "Slow start"); default true.
	SlowStart bool        `yaml:"slow_start"`
	AIMD      AIMDConfig  `yaml:"aimd"`
	CUBIC     CUBICConfig `yaml:"cubic"`

	// Instances is the number of processes that share the budget; each
	// takes 1/Instances of it. Default 1.
	Instances int `yaml:"instances"`
}

// AIMDConfig tunes the additive-increase, multiplicative-decrease controller.
type AIMDConfig struct {
	DecreaseFactor   float64       `yaml:"decrease_factor"`   // rate multiplier on a cut; default 0.7
	IncreaseStep     float64       `yaml:"increase_step"`     // units per minute added per raise (whole budget); default 120
	IncreaseInterval time.Duration `yaml:"increase_interval"` // least time between raises; default 10s
}

// CUBICConfig tunes the CUBIC controller (RFC 8312 window curve).
type CUBICConfig struct {
	Beta          float64 `yaml:"beta"`           // rate multiplier on a cut; default 0.7
	ScaleConstant float64 `yaml:"scale_constant"` // C, in units per minute per second cubed (whole budget)
}

// DefaultCUBICScaleConstant is CUBIC's default C in units/min per s³ for the
// whole budget, chosen with the control benchmark (docs/simulator.md): it
// brings the curve back to w_max in about one 60 s quota window.
const DefaultCUBICScaleConstant = 0.003

// Upper bounds of the counts in Config.
const (
	MaxQueueLimit = 1_000_000
	MaxInstances  = 10_000
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
	if !(c.InitialFill >= 0 && c.InitialFill <= 1) {
		bad("initial_fill", c.InitialFill, "between 0 and 1")
	}
	return errors.Join(errs...)
}
