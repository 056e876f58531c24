package sim

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"math"
	"strings"
	"testing"
	"time"
)

func mustRun(t *testing.T, c Config) *Result {
	t.Helper()
	res, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func scenario(t *testing.T, name string, mode Mode) Config {
	t.Helper()
	c, err := Scenario(name)
	if err != nil {
		t.Fatal(err)
	}
	if mode != "" {
		c.Mode = mode
	}
	return c
}

func outputs(t *testing.T, res *Result) (js, svg []byte) {
	t.Helper()
	js, err := json.Marshal(res.Summary)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := res.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	return js, b.Bytes()
}

// TestDeterminism: the same Config gives byte-identical JSON and SVG; a
// different seed gives a different run.
func TestDeterminism(t *testing.T) {
	for _, name := range []string{ScenarioNoisyNeighbor, ScenarioThreeInstances} {
		c := scenario(t, name, ModeCUBIC)
		c.Duration = 8 * time.Minute
		j1, s1 := outputs(t, mustRun(t, c))
		j2, s2 := outputs(t, mustRun(t, c))
		if !bytes.Equal(j1, j2) || !bytes.Equal(s1, s2) {
			t.Fatalf("%s: two runs with seed %d differ:\n%s\n%s", name, c.Seed, j1, j2)
		}
		wellFormed(t, s1)
		c.Seed++
		j3, s3 := outputs(t, mustRun(t, c))
		if bytes.Equal(j1, j3) || bytes.Equal(s1, s3) {
			t.Fatalf("%s: seeds %d and %d gave the same run", name, c.Seed-1, c.Seed)
		}
	}
}

// wellFormed checks that svg parses as XML with an <svg> root and the
// chart's parts.
func wellFormed(t *testing.T, svg []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(svg))
	var root string
	paths := 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "path" {
				paths++
			}
		}
	}
	for _, want := range []string{"hidden quota", "units used, trailing window", "sum of rates", "instance 1 rate", "429", "time (min:s)", "units per minute"} {
		if !bytes.Contains(svg, []byte(want)) {
			t.Errorf("the chart lacks %q", want)
		}
	}
	if root != "svg" || paths < 5 {
		t.Fatalf("root <%s>, %d paths", root, paths)
	}
}

// TestFirstThrottle checks the reference's main scenario: the adaptive limiter
// keeps the quota busy with few 429s, retries alone cause a storm of them,
// and a fixed rate at the initial rate uses about half the quota.
func TestFirstThrottle(t *testing.T) {
	aimd := mustRun(t, scenario(t, ScenarioFirstThrottle, ModeAIMD)).Summary
	none := mustRun(t, scenario(t, ScenarioNoLimiter, "")).Summary
	static := mustRun(t, scenario(t, ScenarioFirstThrottle, ModeStatic)).Summary
	t.Logf("aimd %+v", aimd)
	t.Logf("none %+v", none)
	t.Logf("static %+v", static)
	if aimd.Throttled == 0 || aimd.Throttled > 60 || aimd.UtilizationSteady < 0.8 {
		t.Errorf("aimd: %d throttled, steady utilization %v; want 1..60 and >= 0.8", aimd.Throttled, aimd.UtilizationSteady)
	}
	if none.Throttled < 100*aimd.Throttled || none.GaveUp == 0 || none.Rejected != 0 || none.P95WaitS != 0 {
		t.Errorf("none: %+v; want a retry storm (100x the 429s of aimd), give-ups, no limiter waits", none)
	}
	// Over 15 minutes the sliding window admits at most 15 quotas.
	if none.UnitsAccepted > 15*3000 || none.UnitsAccepted < 0.98*15*3000 {
		t.Errorf("none: %v units accepted, want just under 45000", none.UnitsAccepted)
	}
	if static.Throttled != 0 || static.UtilizationSteady < 0.45 || static.UtilizationSteady > 0.55 {
		t.Errorf("static: %+v; want no 429 and about half the quota", static)
	}
	if aimd.RecoverySeconds != nil || aimd.TimeTo90Seconds == nil || static.TimeTo90Seconds != nil {
		t.Errorf("recovery_s %v (want null without a drop); time_to_90_s aimd %v (want a value), static %v (want null)",
			aimd.RecoverySeconds, aimd.TimeTo90Seconds, static.TimeTo90Seconds)
	}
}

func TestNoisyNeighborRecovers(t *testing.T) {
	res := mustRun(t, scenario(t, ScenarioNoisyNeighbor, ModeAIMD))
	s := res.Summary
	if s.RecoverySeconds == nil || *s.RecoverySeconds > 120 {
		t.Fatalf("recovery_s = %v, want <= 120", s.RecoverySeconds)
	}
	// The quota line shows the drop from 5:00 to 6:00.
	for _, c := range []struct {
		sec  int
		want float64
	}{{299, 3000}, {300, 1500}, {359, 1500}, {360, 3000}} {
		if got := res.Series.Quota[c.sec]; got != c.want {
			t.Errorf("quota at %ds = %v, want %v", c.sec, got, c.want)
		}
	}
}

func TestInstanceJoinAndLeave(t *testing.T) {
	c := scenario(t, ScenarioFirstThrottle, ModeAIMD)
	c.Duration = 4 * time.Minute
	c.Events = []Event{
		{At: time.Minute, Kind: InstanceCount, Count: 3},
		{At: 2 * time.Minute, Kind: InstanceCount, Count: 1},
		{At: 3 * time.Minute, Kind: DemandChange, Demand: 0},
	}
	res := mustRun(t, c)
	s := res.Series
	if s.Instances != 3 {
		t.Fatalf("instances = %d, want 3", s.Instances)
	}
	before, after := s.Rates[59], s.Rates[60]
	// A join rescales each rate by 2/3 and the new instance starts at
	// initial/3; a leave of two rescales the one left by 3.
	same := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Abs(b) }
	if len(after) != 3 || !same(after[0], before[0]*2/3) || !same(after[1], before[1]*2/3) || after[2] != 500 {
		t.Errorf("rates %v -> %v at the join", before, after)
	}
	before, after = s.Rates[119], s.Rates[120]
	if !same(after[0], before[0]*3) || !isNaN(after[1]) || !isNaN(after[2]) {
		t.Errorf("rates %v -> %v at the leave", before, after)
	}
	// With no demand from 3:00, fewer calls are made than with it.
	c.Events = c.Events[:2]
	if full := mustRun(t, c); res.Summary.Requests >= full.Summary.Requests {
		t.Errorf("requests with demand 0 from 3:00: %d, without the change %d", res.Summary.Requests, full.Summary.Requests)
	}
}

func isNaN(v float64) bool { return v != v }

func TestConfigValidate(t *testing.T) {
	c := DefaultConfig()
	c.Mode = "fast"
	c.Quota = 0
	c.Jitter = time.Second
	c.Events = []Event{{Kind: QuotaDrop, Fraction: 1.5}, {Kind: "boom"}}
	c.Limiter.InitialUnitsPerMinute = -1
	err := c.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`mode "fast"`, "sim: quota: must be > 0", "sim: jitter", "events[0].fraction", "events[0].for", "events[1].kind", "initial_units_per_minute"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := Scenario("nope"); err == nil || !strings.Contains(err.Error(), "first-throttle") {
		t.Errorf("unknown scenario: %v", err)
	}
	for _, name := range Scenarios {
		c, err := Scenario(name)
		if err != nil || c.Validate() != nil {
			t.Errorf("scenario %s: %v %v", name, err, c.Validate())
		}
	}
}
