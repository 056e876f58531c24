package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limiter"
)

// TestLimiterReplayGolden runs every trace of the limiter package through
// the command (and so through the config file's option decoder) and
// compares with the goldens.
func TestLimiterReplayGolden(t *testing.T) {
	traces, err := filepath.Glob(filepath.Join("..", "..", "limiter", "testdata", "traces", "*.jsonl"))
	if err != nil || len(traces) == 0 {
		t.Fatalf("no traces: %v", err)
	}
	for _, path := range traces {
		t.Run(filepath.Base(path), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(path, ".jsonl") + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			var out bytes.Buffer
			root := newRootCmd()
			root.SetArgs([]string{"limiter", "replay", path})
			root.SetOut(&out)
			if err := root.ExecuteContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			if out.String() != string(want) {
				t.Errorf("output differs from the golden:\n%s\nwant\n%s", out.String(), want)
			}
		})
	}
}

func TestLimiterReplayStdinAndErrors(t *testing.T) {
	replay := func(in string) (string, error) {
		var out bytes.Buffer
		root := newRootCmd()
		root.SetArgs([]string{"limiter", "replay", "-"})
		root.SetIn(strings.NewReader(in))
		root.SetOut(&out)
		err := root.ExecuteContext(context.Background())
		return out.String(), err
	}
	out, err := replay(`{"options": {"burst": "1s"}}` + "\n" + `{"at": 0, "op": "acquire", "id": "a", "units": 3}` + "\n")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"at": 0, "op": "acquire", "rate": 600, "tokens": 7, "queue": 0, "paused_until": null, "granted": [{"id": "a", "at": 0}], "rejected": []}` + "\n"
	if out != want {
		t.Errorf("got %s want %s", out, want)
	}
	for _, tc := range []struct{ in, msg string }{
		{`{"options": {"burst": "1s", "aimd": {"step": 1}}}`, `line 1: options: unknown option "aimd.step"`},
		{`{"options": {"max_wait": 5}}`, `line 1: options: max_wait: must be a duration string`},
		{`{"options": {"queue_limit": "x"}}`, `line 1: options: queue_limit: must be an integer`},
		{`{"options": {"burst": "-1s"}}`, `burst: must be >= 0`},
		{`{"options": {}}` + "\n" + `{"at": 1, "op": "tick"}` + "\n" + `{"at": 0.5, "op": "tick"}`, `line 3:`},
		{`{"options": {}}` + "\n" + `{"at": 1, "op": "success", "id": "nope"}`, `line 2: success: unknown id "nope"`},
		{`{"options": {}}` + "\n" + `not json`, `line 2: bad JSON`},
	} {
		_, err := replay(tc.in)
		var ee *exitError
		if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("input %q: err %v, want exit status 2 and %q", tc.in, err, tc.msg)
		}
	}
}

// TestLimiterOptionsMatchTraceOptions checks that the config file's options
// and the limiter package's own trace decoder read the same names the same
// way.
func TestLimiterOptionsMatchTraceOptions(t *testing.T) {
	raw := []byte(`{"enabled": false, "initial_units_per_minute": 900, "min_units_per_minute": 30,
		"max_units_per_minute": 5000, "burst": "2s", "queue_limit": 7, "max_wait": "1m",
		"decrease_cooldown": "3s", "max_pause": "0s", "controller": "cubic",
		"aimd": {"decrease_factor": 0.5, "increase_step": 60, "increase_interval": "4s"},
		"cubic": {"beta": 0.8, "scale_constant": 2.5}, "instances": 3}`)
	got, err := decodeLimiterOptionsJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	want, err := limiter.DecodeTraceOptions(raw)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("config file options %+v\ntrace options %+v", got, want)
	}
	if want.MaxWait != time.Minute || !want.Disabled || want.CUBIC.ScaleConstant != 2.5 || want.Instances != 3 {
		t.Errorf("decoded %+v", want)
	}
	def, err := decodeLimiterOptionsJSON([]byte(`{}`))
	if err != nil || def != limiter.DefaultConfig() {
		t.Errorf("empty options = %+v, %v; want the defaults", def, err)
	}
}
