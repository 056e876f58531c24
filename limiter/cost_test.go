package limiter_test

import (
	"math"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/limiter"
)

func TestFixedCost(t *testing.T) {
	var e limiter.CostEstimator = limiter.FixedCost(limiter.DefaultCost)
	if got := e.Cost("anything"); got != 1 {
		t.Errorf("FixedCost(1).Cost = %v; want 1", got)
	}
	if got := limiter.FixedCost(2.5).Cost(""); got != 2.5 {
		t.Errorf("FixedCost(2.5).Cost = %v; want 2.5", got)
	}
	if err := limiter.FixedCost(0).Validate(); err != nil {
		t.Errorf("FixedCost(0).Validate() = %v", err)
	}
	if err := limiter.FixedCost(-1).Validate(); err == nil {
		t.Error("FixedCost(-1).Validate(): no error")
	}
}

func TestCostByKey(t *testing.T) {
	tests := []struct {
		c    limiter.CostByKey
		key  string
		want float64
	}{
		{limiter.CostByKey{}, "x", 1},
		{limiter.CostByKey{Costs: map[string]float64{"export": 5, "ping": 0}}, "export", 5},
		{limiter.CostByKey{Costs: map[string]float64{"export": 5, "ping": 0}}, "ping", 0},
		{limiter.CostByKey{Costs: map[string]float64{"export": 5}}, "other", 1},
		{limiter.CostByKey{Costs: map[string]float64{"export": 5}, Default: 2}, "other", 2},
		{limiter.CostByKey{Costs: map[string]float64{"": 3}, Default: 2}, "", 3},
	}
	for _, tt := range tests {
		if got := tt.c.Cost(tt.key); got != tt.want {
			t.Errorf("%+v.Cost(%q) = %v; want %v", tt.c, tt.key, got, tt.want)
		}
	}
}

func TestCostValidate(t *testing.T) {
	for _, u := range []float64{0, 1, 0.5, 1e9} {
		if err := limiter.ValidateCost(u); err != nil {
			t.Errorf("ValidateCost(%v) = %v", u, err)
		}
	}
	for _, u := range []float64{-1, math.Copysign(0, -1) - 1e-300, math.NaN(), math.Inf(1), math.Inf(-1)} {
		err := limiter.ValidateCost(u)
		if err == nil || !strings.HasPrefix(err.Error(), "limiter: cost: ") {
			t.Errorf("ValidateCost(%v) = %v; want an error", u, err)
		}
	}
	good := limiter.CostByKey{Costs: map[string]float64{"a": 1, "b": 0}, Default: 3}
	if err := good.Validate(); err != nil {
		t.Errorf("good: %v", err)
	}
	bad := limiter.CostByKey{Costs: map[string]float64{"z": math.NaN(), "a": -2, "ok": 1}, Default: math.Inf(1)}
	err := bad.Validate()
	if err == nil {
		t.Fatal("bad: no error")
	}
	want := "limiter: default cost: must be a number from 0 to 1e+12, got +Inf\n" +
		"limiter: cost of \"a\": must be a number from 0 to 1e+12, got -2\n" +
		"limiter: cost of \"z\": must be a number from 0 to 1e+12, got NaN"
	if err.Error() != want {
		t.Errorf("bad.Validate() =\n%v\nwant\n%v", err, want)
	}
}
