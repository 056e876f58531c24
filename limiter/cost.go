package limiter

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// DefaultCost is the cost of a job when nothing else says otherwise.
const DefaultCost = 1

// MaxUnits is the absolute bound of a cost, whatever the rates: a job of
// more units is refused by ValidateCost and by the worker (bad_cost).
// Costs above it would also make the bucket's level lose the precision of
// a single unit.
const MaxUnits = 1e12

// MaxCost returns the largest cost a job may have under c: the units this
// instance's max_units_per_minute grants in max_wait
// (max_units_per_minute / instances / 60 · max_wait in seconds), and never
// more than MaxUnits. A job that costs more could never be paid for within
// max_wait even at the highest rate; the Core charges it only this much
// (Core.CostBound) and the worker dead-letters it. With the limiter
// disabled the bound is MaxUnits.
func (c Config) MaxCost() float64 {
	if c.Disabled || c.MaxWait <= 0 || !(c.MaxUnitsPerMinute > 0) {
		return MaxUnits
	}
	n := float64(max(c.Instances, 1))
	return math.Min(MaxUnits, c.MaxUnitsPerMinute/n/60*c.MaxWait.Seconds())
}

// CostEstimator tells how many units a job of a given key (the job type)
// costs before it is sent. Implementations must be safe for concurrent use
// and return a finite number ≥ 0 (see ValidateCost).
type CostEstimator interface {
	Cost(key string) float64
}

// FixedCost costs every job the same. FixedCost(DefaultCost) is the default
// estimator.
type FixedCost float64

// Cost returns c whatever the key.
func (c FixedCost) Cost(string) float64 { return float64(c) }

// Validate reports a cost that is negative, NaN or infinite.
func (c FixedCost) Validate() error { return ValidateCost(float64(c)) }

// CostByKey costs a job by its key, from a fixed table.
//
// A key in Costs costs its value (0 is allowed: such jobs never wait). Any
// other key costs Default, or DefaultCost (1) when Default is 0, so the
// zero value costs every job 1 unit. Costs is only read: CostByKey is safe
// for concurrent use as long as nobody writes the map.
type CostByKey struct {
	Costs   map[string]float64
	Default float64
}

// Cost returns the cost of key.
func (c CostByKey) Cost(key string) float64 {
	if u, ok := c.Costs[key]; ok {
		return u
	}
	if c.Default == 0 {
		return DefaultCost
	}
	return c.Default
}

// Validate reports every cost that is negative, NaN or infinite, naming
// its key. Keys are reported in sorted order.
func (c CostByKey) Validate() error {
	var errs []error
	if !validCost(c.Default) {
		errs = append(errs, fmt.Errorf("limiter: default cost: must be a number from 0 to %g, got %v", float64(MaxUnits), c.Default))
	}
	keys := make([]string, 0, len(c.Costs))
	for k := range c.Costs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if u := c.Costs[k]; !validCost(u) {
			errs = append(errs, fmt.Errorf("limiter: cost of %q: must be a number from 0 to %g, got %v", k, float64(MaxUnits), u))
		}
	}
	return errors.Join(errs...)
}

// ValidateCost reports whether units is a usable cost: a number from 0 to
// MaxUnits. The worker uses it on a cost that comes with a job.
func ValidateCost(units float64) error {
	if !validCost(units) {
		return fmt.Errorf("limiter: cost: must be a number from 0 to %g, got %v", float64(MaxUnits), units)
	}
	return nil
}

func validCost(u float64) bool { return u >= 0 && u <= MaxUnits }
