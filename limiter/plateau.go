package limiter

import (
	"math"
	"time"
)

// The measured quota (docs/limiter.md, "The measured quota"): a cut that
// comes after a minute without one reads what the API accepted in that
// minute as its quota, cuts no lower than quotaFloor of it, and for
// quotaPlateau raises no higher than quotaPlateauShare of it. A single
// Core applies it to its own accepted units with slow_start on; a fleet
// applies it to the fleet's (FleetRules).
const (
	// quotaFloor: a cut after a minute without one leaves the rate at least
	// this fraction of the units accepted in that minute.
	quotaFloor = 0.9
	// quotaPlateau and quotaPlateauShare: for quotaPlateau after a cut that
	// measured the quota, a raise takes the rate no higher than
	// quotaPlateauShare of it.
	quotaPlateau      = 5 * time.Minute
	quotaPlateauShare = 0.97
	// quotaMinute is the span of the accepted units the rule reads.
	quotaMinute = acceptWindow * time.Second
)

// MeasureCut applies the measured quota to a cut at now that took the
// state from before to a, with accepted the units the API accepted in the
// last minute from the part the Rules are for (0 when not known). When
// the cut ends no slow start and the last cut (the start before any) was
// at least a minute before now, the rate is left at no less than
// quotaFloor × accepted, never above the rate before the cut, and
// MeasureCut returns accepted, the measured quota. Any other cut measures
// nothing: it returns 0.
func (r *Rules) MeasureCut(a *Adapt, before Adapt, now time.Time, accepted float64) float64 {
	if before.SlowStart || now.Sub(before.LastCut) < quotaMinute || !(accepted > 0) {
		return 0
	}
	a.Rate = math.Min(before.Rate, math.Max(a.Rate, r.Clamp(quotaFloor*accepted)))
	return accepted
}

// PlateauStart prepares a raise at now after a cut that measured the
// quota m, with a plateau of length (quotaPlateau when shorter): once the
// plateau has ended, CUBIC's curve, which kept rising
// through it, starts again at its end from the rate (w_max = the rate,
// K = 0), so that the probe above the quota is no jump.
func (r *Rules) PlateauStart(a *Adapt, now time.Time, m float64, length time.Duration) {
	if end := a.LastCut.Add(max(length, quotaPlateau)); r.cfg.Controller == ControllerCUBIC && !a.SlowStart && m > 0 &&
		!now.Before(end) && a.CutTime.Before(end) {
		a.CutTime, a.WMax, a.K = end, a.Rate, 0
	}
}

// PlateauBound returns the highest rate a raise at now may reach within
// the plateau (length, or quotaPlateau when shorter) after a cut that
// measured the quota m, and whether one applies.
func (r *Rules) PlateauBound(a Adapt, now time.Time, m float64, length time.Duration) (float64, bool) {
	if !a.SlowStart && m > 0 && now.Sub(a.LastCut) < max(length, quotaPlateau) {
		return quotaPlateauShare * m, true
	}
	return 0, false
}
