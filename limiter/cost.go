package limiter

import (
	"errors"
	"fmt"
	"math"
	"sort"
)

// DefaultCost is the cost of a job when nothing else says otherwise.
const DefaultCost = 1

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
		errs = append(errs, fmt.Errorf("limiter: default cost: must be a finite number >= 0, got %v", c.Default))
	}
	keys := make([]string, 0, len(c.Costs))
	for k := range c.Costs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if u := c.Costs[k]; !validCost(u) {
			errs = append(errs, fmt.Errorf("limiter: cost of %q: must be a finite number >= 0, got %v", k, u))
		}
	}
	return errors.Join(errs...)
}

// ValidateCost reports whether units is a usable cost: a finite number ≥ 0.
// The worker uses it on a cost that comes with a job.
func ValidateCost(units float64) error {
	if !validCost(units) {
		return fmt.Errorf("limiter: cost: must be a finite number >= 0, got %v", units)
	}
	return nil
}

func validCost(u float64) bool { return u >= 0 && !math.IsInf(u, 0) }
