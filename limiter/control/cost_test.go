package control

import "testing"

func TestMaxCost(t *testing.T) {
	cfg := DefaultConfig()
	if got, want := cfg.MaxCost(), 10_000_000.0/60*100; got != want {
		t.Errorf("default MaxCost = %v, want %v (max_units_per_minute over max_wait)", got, want)
	}
	cfg.Instances = 4
	if got, want := cfg.MaxCost(), 10_000_000.0/4/60*100; got != want {
		t.Errorf("MaxCost with 4 instances = %v, want %v", got, want)
	}
	cfg.MaxUnitsPerMinute = 1e300
	if got := cfg.MaxCost(); got != MaxUnits {
		t.Errorf("MaxCost at a huge rate = %v, want MaxUnits", got)
	}
	if err := CheckCost("cost", 1e308); err == nil {
		t.Error("CheckCost(1e308) = nil, want an error: above MaxUnits")
	}
}
