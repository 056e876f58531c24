package control

import (
	"math"
	"time"
)

// Adapt is the state of the rate rules of docs/limiter.md (throttle,
// success, AIMD, CUBIC): the rate and everything the rules remember between
// two outcomes. It is a plain value with absolute times, so that one set of
// rules drives both a Core (its own Adapt, for its part of the budget) and a
// fleet of workers (one Adapt for the whole budget is kept in a
// fleet.State and applied with limiter.Core.Follow).
type Adapt struct {
	Rate      float64   `json:"rate"`      // units per minute, of the part the Rules are for
	Throttled bool      `json:"throttled"` // a throttle was observed: the first one always cuts
	LastCut   time.Time `json:"last_cut"`  // the last cut; the start before any
	IncClock  time.Time `json:"inc_clock"` // when the increase clock last restarted
	WMax      float64   `json:"w_max"`     // CUBIC's w_max, units per minute
	CutTime   time.Time `json:"cut_time"`  // CUBIC's epoch: the last cut, or the start
	K         float64   `json:"k"`         // CUBIC's K, in seconds
	// SlowStart is the adaptive law's startup (docs/limiter.md, "The
	// adaptive law"): true from the start until the first refusal. The
	// classic rules have none.
	SlowStart bool `json:"slow_start"`
}

// Part is a part of a budget: 1/Instances of it, or the fraction Share
// when Instances is 0. The whole budget is Part{Instances: 1}.
type Part struct {
	Share     float64
	Instances int
}

// Whole is the whole budget.
var Whole = Part{Share: 1, Instances: 1}

// Of returns the part of a whole-budget value v: v/Instances, or v·Share.
func (p Part) Of(v float64) float64 {
	if p.Instances > 0 {
		return v / float64(p.Instances)
	}
	return v * p.Share
}

// Rules applies the rules of a Config to an Adapt for one Part of the
// budget: the options' rates (initial, min, max, AIMD's step, CUBIC's C)
// are taken for that part. A ceiling (SetCeiling) lowers the maximum. Rules
// read no clock: every method takes the time.
type Rules struct {
	cfg     Config
	part    Part
	ceiling float64 // whole budget; 0 for none
	quota   float64 // the announced quota's rate, whole budget; 0 for none
	min     float64 // the part's minimum rate
	max     float64 // the part's maximum rate, below the ceiling's part
}

// NewRules returns the Rules of a validated cfg for part p.
func NewRules(cfg Config, p Part) Rules {
	r := Rules{cfg: cfg, part: p}
	r.bounds()
	return r
}

func (r *Rules) bounds() {
	r.min = r.part.Of(r.cfg.MinUnitsPerMinute)
	r.max = r.part.Of(r.cfg.MaxUnitsPerMinute)
	for _, c := range [...]float64{r.ceiling, r.quota} {
		if c > 0 {
			r.max = math.Max(r.min, math.Min(r.max, r.part.Of(c)))
		}
	}
}

// Part returns the part of the budget the Rules are for.
func (r *Rules) Part() Part { return r.part }

// Min and Max return the part's bounds, units per minute.
func (r *Rules) Min() float64 { return r.min }

// Max returns the part's maximum rate: max_units_per_minute's part, or the
// ceiling's if that is lower (but never below the minimum).
func (r *Rules) Max() float64 { return r.max }

// Clamp returns rate within [Min, Max].
func (r *Rules) Clamp(rate float64) float64 { return math.Min(r.max, math.Max(r.min, rate)) }

// SetCeiling caps the rate at the part of ceiling, a whole-budget rate (0
// removes the cap). The Adapt is not changed: clamp it with Clamp.
func (r *Rules) SetCeiling(ceiling float64) {
	r.ceiling = ceiling
	r.bounds()
}

// SetQuotaCeiling caps the rate at the part of quota, the whole-budget rate
// a target announced in its quota headers (0 removes the cap), on top of
// SetCeiling's. The Adapt is not changed: clamp it with Clamp.
func (r *Rules) SetQuotaCeiling(quota float64) {
	r.quota = quota
	r.bounds()
}

// Start returns the state at start: the initial rate, no throttle yet,
// the clocks at start and CUBIC's w_max at the initial rate with K = 0.
func (r *Rules) Start(start time.Time) Adapt {
	rate := r.part.Of(r.cfg.InitialUnitsPerMinute)
	return Adapt{Rate: rate, LastCut: start, IncClock: start, WMax: rate, CutTime: start}
}

// Throttle applies a throttle observed at now of a request sent at sent:
// the increase clock restarts, and the rate is cut if this is the first
// throttle, or if decrease_cooldown has passed since the last cut and the
// request was sent after it. measured is the send rate of the part in the
// last 10 s (units per minute), or negative when unknown; CUBIC cuts from
// it when it is below the rate. Throttle reports whether it cut.
func (r *Rules) Throttle(a *Adapt, now, sent time.Time, measured float64) bool {
	a.IncClock = now
	if a.Throttled && (now.Sub(a.LastCut) < r.cfg.DecreaseCooldown || !sent.After(a.LastCut)) {
		return false
	}
	a.Throttled = true
	a.LastCut = now
	var p float64
	switch r.cfg.Controller {
	case ControllerCUBIC:
		w := a.Rate
		if measured >= 0 && measured < w {
			w = measured
		}
		a.WMax = w
		a.CutTime = now
		a.K = math.Cbrt(w * (1 - r.cfg.CUBIC.Beta) / r.part.Of(r.cfg.CUBIC.ScaleConstant))
		p = w * r.cfg.CUBIC.Beta
	default:
		p = a.Rate * r.cfg.AIMD.DecreaseFactor
	}
	a.Rate = math.Max(r.min, math.Min(a.Rate, p))
	return true
}

// Raise applies a success at now, outside a pause; waited says whether a
// request had to wait since the increase clock last restarted. AIMD adds
// the step's part once increase_interval has passed on the increase clock;
// CUBIC proposes W = C·(now − cut_time − K)³ + w_max. A proposal above the
// rate (within the maximum) becomes the rate and restarts the increase
// clock. Raise reports whether it raised.
func (r *Rules) Raise(a *Adapt, now time.Time, waited bool) bool {
	if !waited {
		return false
	}
	var p float64
	switch {
	case r.cfg.Controller == ControllerCUBIC:
		d := now.Sub(a.CutTime).Seconds() - a.K
		p = r.part.Of(r.cfg.CUBIC.ScaleConstant)*d*d*d + a.WMax
	default:
		if now.Sub(a.IncClock) < r.cfg.AIMD.IncreaseInterval {
			return false
		}
		p = a.Rate + r.part.Of(r.cfg.AIMD.IncreaseStep)
	}
	if p = math.Min(r.max, p); p <= a.Rate {
		return false
	}
	a.Rate = p
	a.IncClock = now
	return true
}

// Factor returns what a rate of part p becomes in part to: old Instances /
// new Instances when both are counts, else new Share / old Share.
func (p Part) Factor(to Part) float64 {
	if to.Instances > 0 && p.Instances > 0 {
		return float64(p.Instances) / float64(to.Instances)
	}
	return to.Share / p.Share
}

// SetPart makes the Rules apply to part p and rescales a to it: the rate
// becomes rate·f within the new bounds and CUBIC's w_max becomes w_max·f
// (K does not change, since w_max and C scale alike), where f is old
// Instances / new Instances when both are counts, else new Share / old
// Share.
func (r *Rules) SetPart(a *Adapt, p Part) {
	f := r.part.Factor(p)
	r.part = p
	r.bounds()
	a.WMax *= f
	a.Rate = r.Clamp(a.Rate * f)
}

// Scale returns whole, an Adapt of the whole budget, for the Rules' part:
// its rates taken in part and the rate clamped to the bounds.
func (r *Rules) Scale(whole Adapt) Adapt {
	a := whole
	a.Rate = r.Clamp(r.part.Of(whole.Rate))
	a.WMax = r.part.Of(whole.WMax)
	return a
}

// PauseEnd returns when a pause for a Retry-After of retryAfter received
// at now ends: now + min(retryAfter, max_pause); false when there is no
// pause (no Retry-After, or pauses are off).
func (c Config) PauseEnd(now time.Time, retryAfter time.Duration) (time.Time, bool) {
	if retryAfter <= 0 || c.MaxPause <= 0 {
		return time.Time{}, false
	}
	return now.Add(min(retryAfter, c.MaxPause)), true
}
