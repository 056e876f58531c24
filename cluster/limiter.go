package cluster

import (
	"time"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// Limiter is the worker's own limiter as the cluster drives it:
// *limiter.Limiter satisfies it. A Membership reports its rate and last
// wait and, in members mode, sets its instance count (Drive); Leases set
// its share (WithLimiter); a Fleet runs it at the fleet's rate (Run).
type Limiter interface {
	Follower
	// Rate returns this instance's rate, in units per minute.
	Rate() float64
	// SetInstanceCount sets the number of instances sharing the budget.
	SetInstanceCount(n int) error
	// SetShare sets this instance's fraction of the budget.
	SetShare(share float64) error
}

// Follower is the part of a Limiter that a Fleet drives.
type Follower interface {
	// LastWait returns when a request last had to wait.
	LastWait() time.Time
	// Follow runs the limiter on the fleet's state, at its share, paused
	// until pausedUntil if that is later than its own pause.
	Follow(fleet fleet.State, pausedUntil time.Time)
	// Lead runs the limiter's own rules again, from the last fleet state.
	Lead()
	// Sent returns what this worker sent lately, for the whole budget
	// (limiter.Core.Sent): the fleet's startup reads it.
	Sent() float64
	// Part returns the limiter's part of the budget.
	Part() control.Part
	// AcceptedUnits returns the units the API accepted from this worker in
	// the last minute (limiter.Core.AcceptedUnits); the fleet adds up its
	// workers' counts.
	AcceptedUnits() float64
}

var _ Limiter = (*limiter.Limiter)(nil)

// WithLimiter makes Leases hand every share they compute to l (see
// Limiter.SetShare); a share l refuses is logged and skipped.
func WithLimiter(l Limiter) Option { return func(s *settings) { s.limiter = l } }
