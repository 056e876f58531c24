package control

import (
	"math"

	"github.com/sluicehq/sluice/field"
)

// MaxUnits is the absolute bound of a cost, whatever the rates: a job of
// more units is refused by CheckCost and by the worker (bad_cost).
// Costs above it would also make the bucket's level lose the precision of
// a single unit.
const MaxUnits = 1e12

// MaxCost returns the largest cost a job may have under c: the units this
// instance's max_units_per_minute grants in max_wait
// (max_units_per_minute / instances / 60 · max_wait in seconds), and never
// more than MaxUnits. A job that costs more could never be paid for within
// max_wait even at the highest rate; the Core charges it only this much
// (limiter.Core.CostBound) and the worker dead-letters it. With the limiter
// disabled the bound is MaxUnits.
func (c Config) MaxCost() float64 {
	if c.Disabled || c.MaxWait <= 0 || !(c.MaxUnitsPerMinute > 0) {
		return MaxUnits
	}
	n := float64(max(c.Instances, 1))
	return math.Min(MaxUnits, c.MaxUnitsPerMinute/n/60*c.MaxWait.Seconds())
}

// CheckCost reports, as a *field.Error at name, a cost in units that the
// limiter cannot take: negative, NaN, or above MaxUnits. A cost of 0 is
// allowed (such requests never wait). nil if units is usable. It is the
// one rule for a cost, whether it comes from the config (a job type's
// cost) or with a job.
func CheckCost(name string, units float64) *field.Error {
	if !(units >= 0 && units <= MaxUnits) {
		return field.Invalid(name, "must be a number from 0 to %g, got %v", float64(MaxUnits), units)
	}
	return nil
}
