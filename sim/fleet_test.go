package sim

import (
	"reflect"
	"testing"
	"time"
)

// One controller for the fleet: at 20 instances the fleet sees a small
// fraction of the 429s that twenty controllers of their own see, and uses
// the quota as well.
func TestShareFleet(t *testing.T) {
	c, err := Scenario(ScenarioFirstThrottle)
	if err != nil {
		t.Fatal(err)
	}
	c.Instances = 20
	c.Duration = 8 * time.Minute
	local, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	c.Share = ShareFleet
	fleet, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	l, f := local.Summary, fleet.Summary
	t.Logf("local: throttled %d, utilization_steady %v; fleet: throttled %d, utilization_steady %v", l.Throttled, l.UtilizationSteady, f.Throttled, f.UtilizationSteady)
	if f.Throttled*3 > l.Throttled {
		t.Errorf("fleet throttled %d, want less than a third of local's %d", f.Throttled, l.Throttled)
	}
	if f.UtilizationSteady < 0.9 {
		t.Errorf("fleet utilization_steady %v, want >= 0.9", f.UtilizationSteady)
	}
	// Every instance runs at the fleet's rate times its share.
	last := len(fleet.Series.T) - 1
	for i, r := range fleet.Series.Rates[last] {
		if want := fleet.Series.Rates[last][0]; r != want {
			t.Fatalf("instance %d at %v, instance 0 at %v: not one rate", i, r, want)
		}
	}
	again, _ := Run(c)
	if !reflect.DeepEqual(again.Summary, fleet.Summary) {
		t.Error("the same Config gave another result")
	}
}

// The targets for the fleet, with the defaults (slow start on):
// at 50 instances, each offered 2000 units a minute against a quota of
// 3000, at most 40 throttles in 15 minutes, and at least 92% of the quota
// used from minute 2, at every instance count.
func TestShareFleetScales(t *testing.T) {
	if testing.Short() {
		t.Skip("15 virtual minutes of 50 instances")
	}
	for _, seed := range []uint64{1, 7, 23} {
		for _, n := range []int{2, 50} {
			c, err := Scenario(ScenarioFirstThrottle)
			if err != nil {
				t.Fatal(err)
			}
			c.Instances, c.Seed, c.Share = n, seed, ShareFleet
			res, err := Run(c)
			if err != nil {
				t.Fatal(err)
			}
			s := res.Summary
			t.Logf("seed %d, %d instances: throttled %d, utilization_steady %v", seed, n, s.Throttled, s.UtilizationSteady)
			if n == 50 && s.Throttled > 40 {
				t.Errorf("seed %d: %d instances throttled %d, want <= 40", seed, n, s.Throttled)
			}
			if s.UtilizationSteady < 0.92 {
				t.Errorf("seed %d: %d instances used %v of the quota, want >= 0.92", seed, n, s.UtilizationSteady)
			}
		}
	}
}

func TestShareValidate(t *testing.T) {
	c := DefaultConfig()
	c.Share = "galaxy"
	if err := c.Validate(); err == nil {
		t.Error("unknown share accepted")
	}
	c.Share, c.ShareDelay = ShareFleet, -time.Second
	if err := c.Validate(); err == nil {
		t.Error("negative share delay accepted")
	}
}
