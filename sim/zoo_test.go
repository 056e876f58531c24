package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestJudge(t *testing.T) {
	t90 := func(v float64) *float64 { return &v }
	good := Oracle{Found: true, Fraction: 0.98, UtilizationSteady: 0.98}
	weak := Oracle{Found: true, Fraction: 0.9, UtilizationSteady: 0.9}
	for i, c := range []struct {
		s        Summary
		o        Oracle
		feasible bool
		misses   []string
	}{
		{Summary{UtilizationSteady: 0.95, TimeTo90Seconds: t90(90), Throttled: 25, Requests: 10000}, good, true, nil},
		{Summary{UtilizationSteady: 0.9499, TimeTo90Seconds: t90(91), Throttled: 26, Requests: 10000}, good, true, []string{"utilization", "time_to_90", "throttled"}},
		{Summary{UtilizationSteady: 0.99}, good, true, []string{"time_to_90"}},
		{Summary{UtilizationSteady: 0.85}, weak, false, nil},
		{Summary{UtilizationSteady: 0.8499}, weak, false, []string{"utilization"}},
		{Summary{UtilizationSteady: 0.1, Throttled: 900}, Oracle{}, false, nil},
		{Summary{UtilizationSteady: 0.1}, Oracle{Found: true, UtilizationSteady: 0.9499}, false, []string{"utilization"}},
	} {
		feasible, misses := judge(c.s, c.o)
		if feasible != c.feasible || !slices.Equal(misses, c.misses) {
			t.Errorf("case %d: feasible %v, misses %v; want %v, %v", i, feasible, misses, c.feasible, c.misses)
		}
	}
}

func TestZooSettings(t *testing.T) {
	for _, api := range APIs {
		s := ZooSettings(api, time.Minute)
		if len(s) != 4 || s[3].Idle != time.Minute || !strings.HasSuffix(s[3].Name, ", idle 60s") {
			t.Fatalf("%s: %+v", api, s)
		}
		for _, x := range s {
			c := DefaultZooConfig().Config(api, x, 900, ModeAIMD, 1)
			if err := c.Validate(); err != nil {
				t.Fatalf("%s, %s: %v", api, x.Name, err)
			}
			if perMin := c.Quota * float64(time.Minute) / float64(c.Window); perMin != 900 || c.Demand != 900 {
				t.Fatalf("%s, %s: quota %v per %v, demand %v", api, x.Name, c.Quota, c.Window, c.Demand)
			}
		}
		if len(ZooSettings(api, 0)) != 3 {
			t.Fatalf("%s: an idle row with idle 0", api)
		}
	}
}

// The oracle's rate is the highest on its grid with at most
// OracleThrottles throttles: one step above it throttles more.
func TestFindOracle(t *testing.T) {
	z := DefaultZooConfig()
	z.Duration = 3 * time.Minute
	for _, api := range []API{APILeaky, APIFixed} {
		c := z.Config(api, ZooSettings(api, 0)[0], 2100, ModeAIMD, 1)
		o, err := FindOracle(c)
		if err != nil {
			t.Fatal(err)
		}
		if !o.Found || o.Throttled > OracleThrottles || o.Runs < 2 || o.Fraction < OracleMin || o.Fraction > OracleMax {
			t.Fatalf("%s: oracle %+v", api, o)
		}
		static := func(f float64) Summary {
			sc := c
			sc.Mode = ModeStatic
			sc.Limiter.InitialUnitsPerMinute = f * 2100
			return mustRun(t, sc).Summary
		}
		if s := static(o.Fraction); s.UtilizationSteady != o.UtilizationSteady || s.Throttled != o.Throttled {
			t.Fatalf("%s: oracle %+v, its rate gives %+v", api, o, s)
		}
		if o.Fraction < OracleMax {
			if s := static(o.Fraction + OracleStep); s.Throttled <= OracleThrottles && s.UtilizationSteady > o.UtilizationSteady {
				t.Fatalf("%s: oracle %+v, one step above gives %+v", api, o, s)
			}
		}
	}
}

// A small zoo: one API, one quota, one controller, two seeds, 3 minutes.
// Every cell is marked by its oracle, the idle row by its base setting's,
// and the result does not depend on the workers.
func TestRunZoo(t *testing.T) {
	z := ZooConfig{APIs: []API{APILeaky}, Quotas: []float64{900}, Modes: []Mode{ModeCUBIC}, Seeds: []uint64{1, 2}, Duration: 3 * time.Minute, Workers: 1}
	var progress []int
	z.Progress = func(done, total int) { progress = append(progress, done, total) }
	one, err := RunZoo(t.Context(), z)
	if err != nil {
		t.Fatal(err)
	}
	// 3 settings × 2 seeds oracles, 4 settings × 2 seeds runs.
	if n := len(progress); n != 2*14 || progress[n-2] != 14 || progress[n-1] != 14 {
		t.Fatalf("progress %v", progress)
	}
	if len(one.Cells) != 4 || one.TotalSeeds != 8 {
		t.Fatalf("cells %+v", one.Cells)
	}
	failing := 0
	for _, c := range one.Cells {
		pass := true
		for i, s := range c.Seeds {
			if s.Seed != z.Seeds[i] || !s.Oracle.Found || s.Summary.Requests == 0 {
				t.Fatalf("%s: seed %+v", c.Setting, s)
			}
			feasible, misses := judge(s.Summary, s.Oracle)
			if s.Feasible != feasible || !slices.Equal(s.Misses, misses) || s.Pass != (len(misses) == 0) {
				t.Fatalf("%s: seed %+v, judged %v %v", c.Setting, s, feasible, misses)
			}
			pass = pass && s.Pass
		}
		if c.Pass != pass {
			t.Fatalf("%s: pass %v, seeds %v", c.Setting, c.Pass, pass)
		}
		if !pass {
			failing++
		}
	}
	if one.Failing != failing || one.FailingFeasible+one.FailingOther != failing {
		t.Fatalf("failing %d (%d + %d), counted %d", one.Failing, one.FailingFeasible, one.FailingOther, failing)
	}
	idle, base := one.Cells[3], one.Cells[1]
	if idle.Setting != "burst 10, idle 60s" || base.Setting != "burst 10" || idle.Seeds[0].Oracle != base.Seeds[0].Oracle || idle.Seeds[1].Oracle != base.Seeds[1].Oracle {
		t.Fatalf("idle row %+v, base %+v", idle, base)
	}
	if idle.Seeds[0].Summary == base.Seeds[0].Summary {
		t.Fatal("the idle row ran as its base")
	}

	z.Workers, z.Progress = 3, nil
	three, err := RunZoo(t.Context(), z)
	if err != nil {
		t.Fatal(err)
	}
	j1, _ := json.Marshal(one)
	j3, _ := json.Marshal(three)
	if !bytes.Equal(j1, j3) {
		t.Fatalf("1 worker:\n%s\n3 workers:\n%s", j1, j3)
	}

	var b bytes.Buffer
	if err := one.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "\n| leaky | 900 | "); n != 4 {
		t.Fatalf("want 4 rows:\n%s", out)
	}
	if !strings.Contains(out, "zoo: "+strconv.Itoa(failing)+" cells failing of 4") {
		t.Fatalf("no summary line:\n%s", out)
	}
	bySetting := fmt.Sprintf("| api | setting | cells passing | cells |\n|---|---|---:|---:|\n"+
		"| leaky | burst 3 | %d | 1 |\n| leaky | burst 10 | %d | 1 |\n| leaky | burst 30 | %d | 1 |\n| leaky | burst 10, idle 60s | %d | 1 |\n",
		passes(one.Cells[0]), passes(one.Cells[1]), passes(one.Cells[2]), passes(one.Cells[3]))
	if !strings.HasSuffix(out, "\n\n"+bySetting) {
		t.Fatalf("want the cells passing by setting last:\n%s\nwant:\n%s", out, bySetting)
	}
}

// passes is 1 for a cell that passes, else 0.
func passes(c ZooCell) int {
	if c.Pass {
		return 1
	}
	return 0
}
