package limiter

import (
	"math"
	"time"
)

// Controller sets the next rate. The Core calls it on a cut and on a
// success outside a pause, and clamps what it returns: a cut never raises the
// rate and never goes below the minimum, a raise never passes the maximum and
// happens only if the clamped value is higher than the current rate.
//
// A Controller is owned by one Core and is called with the Core's state; it
// holds no lock and reads no clock.
type Controller interface {
	// Decrease returns the proposed rate after a cut at s.Now.
	Decrease(s ControlState) float64
	// Increase returns the proposed rate after a success at s.Now, or
	// false for no change.
	Increase(s ControlState) (float64, bool)
	// Rescale is called when the instance share changes: every rate the
	// controller keeps is multiplied by f (new share / old share).
	Rescale(f float64)
}

// ControlState is what a Controller sees of its Core.
type ControlState struct {
	Now   time.Duration // since the Core's start
	Rate  float64       // this instance's current rate, units per minute
	Share float64       // this instance's fraction of the budget (1/N)
	// Waited reports whether a request had to wait (was queued) since the
	// last change of the increase clock (a raise or a throttle).
	Waited bool
	// SinceIncrease is the time since the increase clock last restarted.
	SinceIncrease time.Duration
	// Measured is this instance's send rate at a cut, in units per minute:
	// the units granted in (Now−10s, Now], times 6. It is negative while
	// unknown (before 10 s from the start) and on a success.
	Measured float64

	instances int // the count behind Share, 0 for a fractional share
}

// Part returns this instance's part of a whole-budget value: v/N with N
// instances, v·Share for a fractional share.
func (s ControlState) Part(v float64) float64 {
	if s.instances > 0 {
		return v / float64(s.instances)
	}
	return v * s.Share
}

// AIMD is the additive-increase, multiplicative-decrease controller.
//
// A cut multiplies the rate by DecreaseFactor. A success adds
// IncreaseStep/N, but only if a request waited since the last change
// and IncreaseInterval has passed since the increase clock restarted.
type AIMD struct {
	cfg AIMDConfig
}

// NewAIMD returns an AIMD controller.
func NewAIMD(cfg AIMDConfig) *AIMD { return &AIMD{cfg: cfg} }

// Decrease implements Controller.
func (a *AIMD) Decrease(s ControlState) float64 { return s.Rate * a.cfg.DecreaseFactor }

// Increase implements Controller.
func (a *AIMD) Increase(s ControlState) (float64, bool) {
	if !s.Waited || s.SinceIncrease < a.cfg.IncreaseInterval {
		return 0, false
	}
	return s.Rate + s.Part(a.cfg.IncreaseStep), true
}

// Rescale implements Controller. AIMD keeps no rate of its own.
func (a *AIMD) Rescale(float64) {}

// CUBIC follows the window curve of RFC 8312 in units per minute.
//
// On a cut at t it takes w = the current rate, or the measured send rate if
// that is known and lower, and sets w_max = w, cut_time = t,
// K = ∛(w_max·(1−β)/C_N), and proposes w·β. On a success, if a request
// waited since the last change, it proposes W = C_N·(t − cut_time − K)³ +
// w_max when W is above the current rate. C_N = ScaleConstant·share. Before
// the first cut, w_max is the initial rate share, cut_time the start and
// K = 0.
type CUBIC struct {
	cfg     CUBICConfig
	wMax    float64 // units per minute, this instance's
	cutTime time.Duration
	k       float64 // seconds
}

// NewCUBIC returns a CUBIC controller for a limiter whose initial rate
// share is initial units per minute.
func NewCUBIC(cfg CUBICConfig, initial float64) *CUBIC {
	return &CUBIC{cfg: cfg, wMax: initial}
}

// Decrease implements Controller.
func (c *CUBIC) Decrease(s ControlState) float64 {
	w := s.Rate
	if s.Measured >= 0 && s.Measured < w {
		w = s.Measured
	}
	c.wMax = w
	c.cutTime = s.Now
	c.k = math.Cbrt(w * (1 - c.cfg.Beta) / s.Part(c.cfg.ScaleConstant))
	return w * c.cfg.Beta
}

// Increase implements Controller.
func (c *CUBIC) Increase(s ControlState) (float64, bool) {
	if !s.Waited {
		return 0, false
	}
	d := (s.Now - c.cutTime).Seconds() - c.k
	w := s.Part(c.cfg.ScaleConstant)*d*d*d + c.wMax
	if w > s.Rate {
		return w, true
	}
	return 0, false
}

// Rescale implements Controller: w_max scales with the share (K does not
// change, since w_max and C_N scale alike).
func (c *CUBIC) Rescale(f float64) { c.wMax *= f }

// WMax returns the current w_max in units per minute.
func (c *CUBIC) WMax() float64 { return c.wMax }

var (
	_ Controller = (*AIMD)(nil)
	_ Controller = (*CUBIC)(nil)
)
