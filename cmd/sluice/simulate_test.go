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
	} {
		_, err := testkit.RunCLI(t.Context(), newRootCmd, append([]string{"simulate"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want one naming %s", c.args, err, c.want)
		}
	}
}
