package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// Share is how the instances of a run adapt their rates.
type Share string

// Shares.
const (
	// ShareLocal runs one controller per instance, each on its own
	// throttles and waits (limiter.share.mode static, or members before
	// the fleet controller).
	ShareLocal Share = "local"
	// ShareFleet runs one controller for the whole budget
	// (fleet.Rules, as limiter.share.mode members does over NATS KV):
	// a throttle seen by any instance cuts the fleet's rate once, a raise
	// happens once per interval for the fleet when some instance waited,
	// and each instance follows the fleet's state, which reaches it
	// ShareDelay after every change.
	ShareFleet Share = "fleet"
)

// Shares lists the shares in the order of the comparison table.
var Shares = []Share{ShareLocal, ShareFleet}

// ParseShare returns the Share named s.
func ParseShare(s string) (Share, error) {
	for _, v := range Shares {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("sim: unknown share %q (want local or fleet)", s)
}

// DefaultShareDelay stands in for the time a change of the fleet's state
// takes to reach every worker through NATS KV.
const DefaultShareDelay = 100 * time.Millisecond

// sharedFleet is the shared controller of a run with ShareFleet.
type sharedFleet struct {
	rules fleet.Rules
	state fleet.State
}

// adaptive reports whether the run's mode adapts its rate (so that a fleet
// controller can drive it).
func (c Config) adaptive() bool { return c.Mode == ModeAIMD || c.Mode == ModeCUBIC }

func (r *runner) newFleet() {
	if r.cfg.Share != ShareFleet || !r.cfg.adaptive() {
		return
	}
	whole := r.lcfg
	whole.Instances = 1
	r.fleet = &sharedFleet{rules: fleet.NewRules(whole, 0, 0)}
	r.fleet.state = r.fleet.rules.Start(r.vt(0))
}

// follow makes a new instance's core follow the fleet's state at once:
// it reads the state when it starts, and its bucket starts to fill at its
// own phase (fleet.Rules.Stagger), as at the end of a pause.
func (r *runner) follow(in *instance) {
	if r.fleet == nil {
		return
	}
	s := r.fleet.state
	start := r.fleet.rules.Stagger(s, in.part(), phase(in.idx), r.vt(r.now))
	in.core.Follow(r.vt(r.now), s, latest(start, r.fleet.rules.PauseEnd(s, in.part(), phase(in.idx))))
}

// part is the instance's part of the budget.
func (in *instance) part() control.Part {
	return control.Part{Share: in.core.Share(), Instances: in.core.Instances()}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// followState makes in follow the fleet state s, ending the fleet's pause
// at its own phase.
func (r *runner) followState(in *instance, s fleet.State) {
	in.core.Follow(r.vt(r.now), s, r.fleet.rules.PauseEnd(s, in.part(), phase(in.idx)))
}

// accepted is the units the API accepted from the whole fleet in the last
// minute: the sum of the instances' counts, as each worker's heartbeat
// carries its own.
func (r *runner) accepted() float64 {
	var sum float64
	for _, in := range r.inst {
		if in.active {
			sum += in.core.AcceptedUnits(r.vt(r.now))
		}
	}
	return sum
}

// phase is instance i's phase in [0, 1): the fractional parts of i·φ,
// spread evenly whatever the number of instances.
func phase(i int) float64 {
	_, f := math.Modf(float64(i+1) * 0.6180339887498949)
	return f
}

// fleetObserve applies an outcome an instance observed to the fleet: a
// throttle by the fleet's throttle rule, with what the instance's record
// measured; a success by its raise rule, with the latest wait of any
// instance (their heartbeats) and the instance's record. The instance
// that decided a change follows it at once (it wrote it); it reaches
// every other instance ShareDelay later.
func (r *runner) fleetObserve(in *instance, sentAt time.Duration, o call.Outcome) {
	f := r.fleet
	now := r.vt(r.now)
	var changed bool
	if o.Kind == call.Throttle {
		f.state, changed, _ = f.rules.Throttle(f.state, in.core.Report(now, r.vt(sentAt), o.RetryAfter), r.accepted())
	} else {
		var wait time.Time
		for _, other := range r.inst {
			if other.active {
				if w := other.core.LastWait(); w.After(wait) {
					wait = w
				}
			}
		}
		f.state, changed = f.rules.Raise(f.state, now, fleet.View{LastWait: wait, Sent: in.core.Sent(now), Accepted: r.accepted(), Delay: r.cfg.ShareDelay})
	}
	if !changed {
		return
	}
	st := f.state
	r.followState(in, st)
	for _, other := range r.inst {
		if other.active && other != in {
			r.schedule(&event{at: r.now + r.cfg.ShareDelay, kind: evFleet, inst: other, fleet: &st})
		}
	}
}

// fleetArrive applies a fleet state that reached an instance.
func (r *runner) fleetArrive(e *event) {
	in := e.inst
	if !in.active {
		return
	}
	r.followState(in, *e.fleet)
	r.settle(in)
}
