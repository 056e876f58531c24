package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

func TestSimulateJSON(t *testing.T) {
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "simulate", "--scenario", "noisy-neighbor", "--duration", "7m", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(out, "\n") != 1 {
		t.Fatalf("want one line, got %q", out)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"gave_up", "p95_wait_s", "recovery_s", "rejected", "requests", "throttled", "time_to_90_s", "units_accepted", "utilization", "utilization_steady"}
	if !slices.Equal(keys, want) {
		t.Fatalf("keys %v, want %v", keys, want)
	}
	if _, ok := m["recovery_s"].(float64); !ok {
		t.Errorf("recovery_s = %v, want a number for noisy-neighbor", m["recovery_s"])
	}
	out, err = testkit.RunCLI(t.Context(), newRootCmd, "simulate", "--duration", "3m", "--json")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, `"recovery_s":null`) {
		t.Errorf("first-throttle has no quota drop, want recovery_s null: %s", out)
	}
}

// TestSimulateDeterministic: the same flags give byte-identical --json and
// --svg output.
func TestSimulateDeterministic(t *testing.T) {
	dir := t.TempDir()
	run := func(name string) (string, []byte) {
		path := filepath.Join(dir, name)
		out, err := testkit.RunCLI(t.Context(), newRootCmd, "simulate", "--scenario", "three-instances", "--mode", "cubic", "--duration", "6m", "--seed", "3", "--json", "--svg", path)
		if err != nil {
			t.Fatal(err)
		}
		svg, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return out, svg
	}
	j1, s1 := run("a.svg")
	j2, s2 := run("b.svg")
	if j1 != j2 || !bytes.Equal(s1, s2) {
		t.Fatalf("two runs differ:\n%s\n%s", j1, j2)
	}
	if !bytes.HasPrefix(s1, []byte("<svg ")) || !bytes.Contains(s1, []byte("instance 3 rate")) || !bytes.Contains(s1, []byte("hidden quota")) ||
		bytes.Contains(s1, []byte("<script")) {
		t.Fatalf("the chart lacks its parts: %.300s", s1)
	}
}

func TestSimulateTableAndCompare(t *testing.T) {
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "simulate", "--scenario", "no-limiter", "--duration", "2m")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"mode none", "throttled", "gave_up", "recovery_s"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	out, err = testkit.RunCLI(t.Context(), newRootCmd, "simulate", "--compare", "--scenario", "first-throttle", "--duration", "2m", "--quota", "1000", "--demand", "800")
	if err != nil {
		t.Fatal(err)
	}
	// aimd and cubic with each share, static and none with local only.
	if n := strings.Count(out, "| first-throttle |"); n != 6 {
		t.Fatalf("want 6 rows, got %d:\n%s", n, out)
	}
	if n := strings.Count(out, "| fleet |"); n != 2 {
		t.Fatalf("want 2 fleet rows, got %d:\n%s", n, out)
	}
}

func TestSimulateFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--quota", "0"}, "--quota"},
		{[]string{"--instances", "0"}, "--instances"},
		{[]string{"--demand", "-5"}, "--demand"},
		{[]string{"--duration", "0s"}, "--duration"},
		{[]string{"--mode", "fast"}, "--mode"},
		{[]string{"--scenario", "calm"}, "--scenario"},
		{[]string{"--scenario", "no-limiter", "--mode", "aimd"}, "--mode"},
		{[]string{"--initial", "-1"}, "--initial"},
		{[]string{"--cubic-scale-constant", "0"}, "--cubic-scale-constant"},
		{[]string{"--headers", "github"}, "--headers"},
		{[]string{"--headers", "ietf", "--headers-reset", "unix"}, "--headers-reset"},
		{[]string{"--compare", "--json"}, "--compare"},
		{[]string{"--share", "cloud"}, "--share"},
		{[]string{"--share", "fleet", "--share-delay", "-1s"}, "--share-delay"},
		{[]string{"--svg", "/nonexistent/dir/x.svg", "--duration", "1m"}, "--svg"},
		{[]string{"--api", "token"}, "--api"},
		{[]string{"--window", "0s"}, "--window"},
		{[]string{"--api", "bucket", "--fill-interval", "0s"}, "--fill-interval"},
		{[]string{"--api", "bucket", "--burst-units", "1"}, "burst_units"},
		{[]string{"--api", "leaky", "--count-refused"}, "count_refused"},
		{[]string{"--concurrency", "-1"}, "--concurrency"},
		{[]string{"--latency", "0s"}, "--latency"},
		{[]string{"--idle", "20m"}, "--idle"},
		{[]string{"--seeds", "1"}, "--seeds"},
		{[]string{"--zoo", "--compare"}, "--zoo: cannot be combined with --compare"},
		{[]string{"--zoo", "--window", "10s"}, "--zoo: cannot be combined with --window"},
		{[]string{"--zoo", "--mode", "static"}, "--mode"},
		{[]string{"--zoo", "--seeds", "1,x"}, "--seeds"},
	} {
		_, err := testkit.RunCLI(t.Context(), newRootCmd, append([]string{"simulate"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.want)
		}
	}
}

// The new model APIs and options run from the command line.
func TestSimulateAPIs(t *testing.T) {
	for _, args := range [][]string{
		{"--api", "fixed", "--window", "10s", "--count-refused", "--idle", "30s"},
		{"--api", "bucket", "--fill-interval", "2s"},
		{"--api", "window", "--concurrency", "5", "--latency", "1s"},
	} {
		out, err := testkit.RunCLI(t.Context(), newRootCmd, append([]string{"simulate", "--duration", "3m", "--json"}, args...)...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		var s struct{ Requests, Throttled int }
		if err := json.Unmarshal([]byte(out), &s); err != nil || s.Requests == 0 {
			t.Fatalf("%v: %s (%v)", args, out, err)
		}
	}
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "simulate", "--duration", "2m", "--api", "fixed", "--idle", "30s")
	if err != nil || !strings.Contains(out, "api fixed,") || !strings.Contains(out, "the demand starts after 30s") {
		t.Fatalf("summary: %v\n%s", err, out)
	}
}

// A small zoo: one API, one quota, one controller, one seed, 2 minutes, no
// idle row: a table of its three settings and the summary line; --json
// gives the same cells.
func TestSimulateZoo(t *testing.T) {
	args := []string{"simulate", "--zoo", "--api", "bucket", "--quota", "900", "--mode", "aimd", "--seeds", "3", "--duration", "2m", "--idle", "0"}
	out, err := testkit.RunCLI(t.Context(), newRootCmd, args...)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out, "\n| bucket | 900 | fill "); n != 3 {
		t.Fatalf("want 3 rows:\n%s", out)
	}
	if !strings.Contains(out, "cells failing of 3") || !strings.Contains(out, "zoo 100% (6 of 6 jobs") || !strings.Contains(out, "Seeds 3;") {
		t.Fatalf("no summary or progress:\n%s", out)
	}
	out, err = testkit.RunCLI(t.Context(), newRootCmd, append(args, "--json")...)
	if err != nil {
		t.Fatal(err)
	}
	var z struct {
		Cells []struct {
			Setting string
			Seeds   []struct{ Seed uint64 }
		}
	}
	last := out[strings.LastIndex(strings.TrimSpace(out), "\n")+1:]
	if err := json.Unmarshal([]byte(last), &z); err != nil || len(z.Cells) != 3 || z.Cells[2].Setting != "fill 60s, size 1 fill" || z.Cells[0].Seeds[0].Seed != 3 {
		t.Fatalf("--json: %v\n%s", err, out)
	}
}
