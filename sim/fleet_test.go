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
	// The fleet's raise runs on the AIMD interval, slow start or not: the
	// comparison is of the rules without slow start.
	c.Limiter.InitialFill, c.Limiter.SlowStart = 1, false
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
