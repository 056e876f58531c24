package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/cli"
)

// TestLimiterReplayGolden runs every trace of package limiter/replay through
// the command (and so through the config file's option decoder) and
// compares with the goldens.
func TestLimiterReplayGolden(t *testing.T) {
	traces, err := filepath.Glob(filepath.Join("..", "..", "limiter", "replay", "testdata", "traces", "*.jsonl"))
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
	out, err := replay(`{"options": {"burst": "1s", "initial_fill": 1, "slow_start": false}}` + "\n" + `{"at": 0, "op": "acquire", "id": "a", "units": 3}` + "\n")
	if err != nil {
		t.Fatal(err)
	}
	want := `{"at": 0, "op": "acquire", "rate": 600, "tokens": 7, "queue": 0, "paused_until": null, "granted": [{"id": "a", "at": 0}], "rejected": []}` + "\n"
	if out != want {
		t.Errorf("got %s want %s", out, want)
	}
	for _, tc := range []struct{ in, msg string }{
		{`{"options": {"burst": "1s", "aimd": {"step": 1}}}`, `line 1: aimd.step: unknown key`},
		{`{"options": {"max_wait": 5}}`, `line 1: max_wait: must be a duration such as`},
		{`{"options": {"queue_limit": "x"}}`, `line 1: queue_limit: must be an integer`},
		{`{"options": {"burst": "-1s"}}`, `burst: must be >= 0`},
		{`{"options": {}}` + "\n" + `{"at": 1, "op": "tick"}` + "\n" + `{"at": 0.5, "op": "tick"}`, `line 3:`},
		{`{"options": {}}` + "\n" + `{"at": 1, "op": "success", "id": "nope"}`, `line 2: success: unknown id "nope"`},
		{`{"options": {}}` + "\n" + `not json`, `line 2: bad JSON`},
	} {
		_, err := replay(tc.in)
		var ee *cli.ExitError
		if !errors.As(err, &ee) || ee.Code != 2 || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("input %q: err %v, want exit status 2 and %q", tc.in, err, tc.msg)
		}
	}
}
