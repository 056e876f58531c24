package limiter

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// The Core charges an oversized request what Config.MaxCost allows.
func TestCostBoundIsMaxCost(t *testing.T) {
	c, err := NewCore(DefaultConfig(), time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.CostBound(), DefaultConfig().MaxCost(); got != want {
		t.Errorf("Core.CostBound = %v, want Config.MaxCost %v", got, want)
	}
}

// An oversized request pays CostBound of the part of the budget at its
// grant, after every change of part.
func TestCostBoundFollowsPart(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InitialFill = 1
	start := time.Unix(0, 0)
	c, err := NewCore(cfg, start)
	if err != nil {
		t.Fatal(err)
	}
	const huge = 1e11
	check := func(step string, share float64) {
		t.Helper()
		want := cfg.MaxUnitsPerMinute * share / 60 * cfg.MaxWait.Seconds()
		if got := c.CostBound(); got != want {
			t.Fatalf("%s: CostBound = %v, want %v", step, got, want)
		}
		c.tokens = c.cap
		if d := c.Acquire(start, huge); d.Status != Granted {
			t.Fatalf("%s: oversized request %v, want granted from a full bucket", step, d.Status)
		}
		if got, want := c.tokens, c.cap-c.CostBound(); got != want {
			t.Errorf("%s: bucket after an oversized grant = %v, want capacity - CostBound = %v", step, got, want)
		}
	}
	check("start", 1)
	if err := c.SetShare(start, 0.25); err != nil {
		t.Fatal(err)
	}
	check("share 0.25", 0.25)
	if err := c.SetInstanceCount(start, 5); err != nil {
		t.Fatal(err)
	}
	check("5 instances", 0.2)
	c.Follow(start, fleet.State{Adapt: control.Adapt{Rate: 1000, LastCut: start, IncClock: start, WMax: 1000, CutTime: start}}, time.Time{})
	check("following", 0.2)
}
