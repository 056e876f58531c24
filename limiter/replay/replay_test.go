package replay

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden outputs of testdata/traces")

// TestReplayGolden replays every trace in testdata/traces and compares the
// output with its .golden file. Run with -update to rewrite the goldens;
// every golden was checked by hand against the rules in docs/limiter.md before it was kept.
func TestReplayGolden(t *testing.T) {
	traces, err := filepath.Glob(filepath.Join("testdata", "traces", "*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) < 17 {
		t.Fatalf("found %d traces, want at least 17", len(traces))
	}
	for _, path := range traces {
		name := strings.TrimSuffix(filepath.Base(path), ".jsonl")
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			if err := replayTrace(bytes.NewReader(in), &out); err != nil {
				t.Fatalf("replay: %v", err)
			}
			golden := strings.TrimSuffix(path, ".jsonl") + ".golden"
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			gotLines := strings.Split(out.String(), "\n")
			wantLines := strings.Split(string(want), "\n")
			for i := 0; i < max(len(gotLines), len(wantLines)); i++ {
				var g, w string
				if i < len(gotLines) {
					g = gotLines[i]
				}
				if i < len(wantLines) {
					w = wantLines[i]
				}
				if g != w {
					t.Errorf("output line %d:\n got %s\nwant %s", i+1, g, w)
				}
			}
		})
	}
}

func TestReplayErrors(t *testing.T) {
	const opts = `{"options": {}}` + "\n"
	for _, tc := range []struct {
		name, in string
		line     int
		msg      string
	}{
		{"no options", `{"at": 0, "op": "tick"}`, 1, `"options"`},
		{"unknown option", `{"options": {"burts": "1s"}}`, 1, `burts: unknown key (did you mean "burst"?)`},
		{"unknown nested option", `{"options": {"aimd": {"step": 1}}}`, 1, `aimd.step: unknown key`},
		{"bad duration", `{"options": {"burst": 10}}`, 1, `burst: must be a duration`},
		{"invalid option", `{"options": {"min_units_per_minute": -1}}`, 1, `min_units_per_minute`},
		{"empty", ``, 1, `missing the {"options"`},
		{"bad json", opts + `{"at": 0, "op": "tick"`, 2, `bad JSON`},
		{"missing at", opts + `{"op": "tick"}`, 2, `missing "at"`},
		{"decreasing at", opts + `{"at": 2, "op": "tick"}` + "\n" + `{"at": 1, "op": "tick"}`, 3, `before the previous`},
		{"unknown op", opts + `{"at": 0, "op": "grab"}`, 2, `unknown op "grab"`},
		{"unknown id", opts + `{"at": 0, "op": "success", "id": "r1"}`, 2, `unknown id "r1"`},
		{"unknown id cancel", opts + `{"at": 0, "op": "cancel", "id": "r1"}`, 2, `unknown id "r1"`},
		{"id still waiting", opts + `{"at": 0, "op": "acquire", "id": "r1", "units": 100}` + "\n" +
			`{"at": 0, "op": "acquire", "id": "r2"}` + "\n" + `{"at": 0, "op": "acquire", "id": "r2"}`, 4, `"r2" is already waiting`},
		{"negative units", opts + `{"at": 0, "op": "acquire", "id": "r1", "units": -1}`, 2, `units`},
		{"bad count", opts + `{"at": 0, "op": "instances", "count": 0}`, 2, `count`},
		{"throttle while waiting", opts +
			`{"at": 0, "op": "acquire", "id": "r1", "units": 100}` + "\n" +
			`{"at": 0, "op": "acquire", "id": "r2", "units": 1}` + "\n" +
			`{"at": 0, "op": "throttle", "id": "r2"}`, 4, `"r2" was not granted (waiting)`},
		{"success after rejection", `{"options": {"queue_limit": 0}}` + "\n" +
			`{"at": 0, "op": "acquire", "id": "r1", "units": 100}` + "\n" +
			"\n" +
			`{"at": 0, "op": "acquire", "id": "r2", "units": 1}` + "\n" +
			`{"at": 1, "op": "success", "id": "r2"}`, 5, `"r2" was not granted (rejected)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := replayTrace(strings.NewReader(tc.in), &out)
			var le *LineError
			if !errors.As(err, &le) {
				t.Fatalf("err = %v, want a *LineError", err)
			}
			if le.Line != tc.line || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %v (line %d), want line %d and %q", err, le.Line, tc.line, tc.msg)
			}
		})
	}
}

// TestReplayCancelNotWaiting checks that cancelling a request that is no
// longer waiting changes nothing and prints no rejection.
func TestReplayCancelNotWaiting(t *testing.T) {
	in := `{"options": {"initial_fill": 1, "slow_start": false}}
{"at": 0, "op": "acquire", "id": "r1"}
{"at": 1, "op": "cancel", "id": "r1"}
`
	var out bytes.Buffer
	if err := replayTrace(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := `{"at": 1, "op": "cancel", "rate": 600, "tokens": 100, "queue": 0, "paused_until": null, "granted": [], "rejected": []}`
	if len(lines) != 2 || lines[1] != want {
		t.Errorf("got\n%s\nwant second line\n%s", out.String(), want)
	}
}

// TestReplayReacquire checks that an id may be acquired again (a retry)
// once its request no longer waits, and that later events name the new one.
func TestReplayReacquire(t *testing.T) {
	in := `{"options": {"initial_fill": 1, "slow_start": false, "burst": "1s"}}
{"at": 0, "op": "acquire", "id": "j", "units": 10}
{"at": 1, "op": "throttle", "id": "j"}
{"at": 1, "op": "acquire", "id": "j", "units": 7}
{"at": 1, "op": "acquire", "id": "j", "units": 1}
{"at": 1, "op": "acquire", "id": "j", "units": 1}
`
	var out bytes.Buffer
	err := replayTrace(strings.NewReader(in), &out)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 6 {
		t.Fatalf("err = %v, want an error on line 6 (j waits)", err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	want := `{"at": 1, "op": "acquire", "rate": 420, "tokens": 0, "queue": 0, "paused_until": null, "granted": [{"id": "j", "at": 1}], "rejected": []}`
	if len(lines) != 4 || lines[2] != want {
		t.Errorf("got\n%s\nwant third line\n%s", out.String(), want)
	}
}
