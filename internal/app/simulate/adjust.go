package simulate

import (
	"fmt"
	"math"

	"github.com/sluicehq/sluice/sim"
)

// adjust applies the flags the user set to a scenario's Config.
func (o Options) adjust() (func(*sim.Config), error) {
	switch {
	case o.Duration <= 0:
		return nil, fmt.Errorf("--duration: must be > 0, got %v", o.Duration)
	case o.changed("quota") && (!(o.Quota > 0) || math.IsInf(o.Quota, 0)):
		return nil, fmt.Errorf("--quota: must be > 0, got %v", o.Quota)
	case o.changed("instances") && o.Instances < 1:
		return nil, fmt.Errorf("--instances: must be >= 1, got %d", o.Instances)
	case o.changed("demand") && (!(o.Demand >= 0) || math.IsInf(o.Demand, 0)):
		return nil, fmt.Errorf("--demand: must be >= 0, got %v", o.Demand)
	case o.changed("initial") && !(o.Initial > 0):
		return nil, fmt.Errorf("--initial: must be > 0, got %v", o.Initial)
	case o.changed("cubic-scale-constant") && !(o.CubicScaleConstant > 0):
		return nil, fmt.Errorf("--cubic-scale-constant: must be > 0, got %v", o.CubicScaleConstant)
	case o.ShareDelay < 0:
		return nil, fmt.Errorf("--share-delay: must be >= 0, got %v", o.ShareDelay)
	case o.changed("burst-units") && (!(o.Burst >= 0) || math.IsInf(o.Burst, 0)):
		return nil, fmt.Errorf("--burst-units: must be >= 0, got %v", o.Burst)
	case o.changed("initial-fill") && !(o.InitialFill >= 0 && o.InitialFill <= 1):
		return nil, fmt.Errorf("--initial-fill: must be between 0 and 1, got %v", o.InitialFill)
	case o.Window <= 0:
		return nil, fmt.Errorf("--window: must be > 0, got %v", o.Window)
	case o.FillInterval <= 0:
		return nil, fmt.Errorf("--fill-interval: must be > 0, got %v", o.FillInterval)
	case o.Concurrency < 0:
		return nil, fmt.Errorf("--concurrency: must be >= 0, got %d", o.Concurrency)
	case o.Latency <= 0:
		return nil, fmt.Errorf("--latency: must be > 0, got %v", o.Latency)
	case o.Idle < 0 || o.Idle >= o.Duration:
		return nil, fmt.Errorf("--idle: must be >= 0 and less than --duration (%v), got %v", o.Duration, o.Idle)
	}
	share, err := sim.ParseShare(o.Share)
	if err != nil {
		return nil, fmt.Errorf("--share: %w", err)
	}
	headers, err := o.Headers.Parse()
	if err != nil {
		return nil, err
	}
	var api sim.API
	if o.changed("api") {
		if api, err = sim.ParseAPI(o.API); err != nil {
			return nil, fmt.Errorf("--api: %w", err)
		}
	}
	return func(c *sim.Config) {
		c.Duration = o.Duration
		c.Seed = o.Seed
		if o.changed("quota") {
			c.Quota = o.Quota
		}
		if o.changed("instances") {
			c.Instances = o.Instances
		}
		if o.changed("demand") {
			c.Demand = o.Demand
		}
		if o.changed("initial") {
			c.Limiter.InitialUnitsPerMinute = o.Initial
		}
		if o.changed("cubic-scale-constant") {
			c.Limiter.CUBIC.ScaleConstant = o.CubicScaleConstant
		}
		c.Share, c.ShareDelay = share, o.ShareDelay
		c.Headers = headers
		if api != "" {
			c.API = api
		}
		if o.changed("window") {
			c.Window = o.Window
		}
		c.FillInterval = o.FillInterval
		if o.changed("burst-units") {
			c.BurstUnits = o.Burst
		} else if c.API == sim.APIBucket {
			c.BurstUnits = c.Quota * o.FillInterval.Seconds() / c.Window.Seconds()
		}
		c.CountRefused = o.CountRefused
		c.Delay = o.Delay
		c.NoRetryAfter = o.NoRetryAfter
		c.Concurrency = o.Concurrency
		if o.changed("latency") {
			c.Latency = o.Latency
			c.Jitter = min(c.Jitter, o.Latency/5)
		}
		c.Idle = o.Idle
		if o.changed("initial-fill") {
			c.Limiter.InitialFill = o.InitialFill
		}
		if o.changed("slow-start") {
			c.Limiter.SlowStart = o.SlowStart
		}
		if c.Idle+c.SteadyFrom >= c.Duration {
			c.SteadyFrom = 0
		}
	}, nil
}
