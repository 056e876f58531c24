package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/spf13/cobra"
)

// exitRow is one command line and the exit status it must give.
type exitRow struct {
	args []string
	want int
}

// exitFixtures are the files and servers the exit-status rows use.
type exitFixtures struct {
	good, bad, jobs, badJobs, trace, dir, dlq string
	health, closed                            string
}

func newExitFixtures(t *testing.T) exitFixtures {
	t.Helper()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	health := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	t.Cleanup(health.Close)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := l.Addr().String()
	l.Close()
	store := filepath.Join(dir, "store")
	return exitFixtures{
		good:    write("good.yaml", fmt.Sprintf("source:\n  jetstream:\n    embedded: {store_dir: %s, port: -1}\ntarget: {base_url: http://127.0.0.1:1/}\n", store)),
		bad:     write("bad.yaml", "limiter:\n  burst: -1s\n  nope: 1\n"),
		jobs:    write("jobs.jsonl", `{"id":"a"}`+"\n"+`{"id":"b"}`+"\n"),
		badJobs: write("bad.jsonl", `{"id":"a"}`+"\nnot json\n"),
		trace:   write("trace.jsonl", `{"options": {"burst": "1s"}}`+"\n"+`{"at": 0, "op": "acquire", "id": "a", "units": 3}`+"\n"),
		dlq:     write("dlq.yaml", fmt.Sprintf("source:\n  jetstream:\n    embedded: {store_dir: %s, port: -1}\ndead_letters: {kind: jsonl, path: %s}\n", store, write("dead.jsonl", ""))),
		dir:     store,
		health:  health.URL + "/healthz",
		closed:  closed,
	}
}

// exitRows lists, for every command, command lines that end in each
// status the command can give in-process (signals: TestExitStatusSignals).
func exitRows(f exitFixtures) map[string][]exitRow {
	r := func(want int, args ...string) exitRow { return exitRow{args, want} }
	emb := []string{"--nats-port", "-1", "--data-dir", f.dir}
	deadNATS := "nats://" + f.closed
	return map[string][]exitRow{
		"sluice":         {r(0), r(0, "--version"), r(0, "-v"), r(2, "nope"), r(2, "stauts"), r(2, "--nope")},
		"sluice version": {r(0, "version"), r(2, "version", "extra"), r(2, "version", "--nope")},
		"sluice run": {
			r(2, "run", "--nope"), r(2, "run", "--rate", "x"), r(2, "run", "-c", f.bad),
			r(2, "run", "-c", filepath.Join(f.dir, "missing.yaml")), r(2, "run", "extra"),
			r(1, "run", "--nats-url", deadNATS, "--target", "http://127.0.0.1:1/"),
		},
		"sluice enqueue": {
			r(0, append(append([]string{"enqueue"}, emb...), f.jobs)...),
			r(1, append(append([]string{"enqueue"}, emb...), f.badJobs)...),
			r(1, "enqueue", "--nats-url", deadNATS, f.jobs),
			r(2, "enqueue"), r(2, "enqueue", "--nope", f.jobs), r(2, "enqueue", "--nats-port", "x", f.jobs),
			r(2, "enqueue", "-c", f.bad, f.jobs),
		},
		"sluice status": {
			r(0, append([]string{"status"}, emb...)...), r(0, append([]string{"status", "--json"}, emb...)...),
			r(1, "status", "--nats-url", deadNATS),
			r(2, "status", "--nope"), r(2, "status", "--interval", "0s"), r(2, "status", "--interval", "x"),
			r(2, "status", "-c", f.bad), r(2, "status", "extra"),
		},
		"sluice config":          {r(0, "config"), r(2, "config", "nope.yaml"), r(2, "config", "--nope")},
		"sluice config example":  {r(0, "config", "example"), r(2, "config", "example", "extra")},
		"sluice config schema":   {r(0, "config", "schema"), r(2, "config", "schema", "extra")},
		"sluice config validate": {r(0, "config", "validate", f.good), r(0, "config", "validate", "-c", f.good), r(2, "config", "validate", f.bad), r(2, "config", "validate", "nope.yaml"), r(2, "config", "validate"), r(2, "config", "validate", "-c", f.good, f.bad), r(2, "config", "validate", "--nope")},
		"sluice dlq":             {r(0, "dlq"), r(2, "dlq", "nope")},
		"sluice dlq replay": {
			r(0, "dlq", "replay", "-c", f.dlq, "--dry-run"),
			r(1, "dlq", "replay", "-c", writeTemp(f, "dlq-dead.yaml", fmt.Sprintf("source:\n  jetstream: {url: %s}\n", deadNATS))),
			r(2, "dlq", "replay", "-c", f.bad), r(2, "dlq", "replay", "--status", "x"), r(2, "dlq", "replay", "extra"),
		},
		"sluice limiter":        {r(0, "limiter"), r(2, "limiter", "nope")},
		"sluice limiter replay": {r(0, "limiter", "replay", f.trace), r(2, "limiter", "replay"), r(2, "limiter", "replay", f.jobs), r(2, "limiter", "replay", "missing.jsonl")},
		"sluice healthcheck": {
			r(0, "healthcheck", "--url", f.health), r(1, "healthcheck", "--url", "http://"+f.closed+"/healthz", "--timeout", "2s"),
			r(2, "healthcheck", "--url", "ftp://x"), r(2, "healthcheck", "--timeout", "0s"), r(2, "healthcheck", "--timeout", "x"),
		},
		"sluice simulate": {
			r(0, "simulate", "--duration", "1m"), r(2, "simulate", "--mode", "foo"), r(2, "simulate", "--scenario", "nope"),
			r(2, "simulate", "--duration", "0s"), r(2, "simulate", "--compare", "--json"), r(2, "simulate", "--nope"),
		},
		"sluice testserver": {
			r(1, "testserver", "--listen", "256.0.0.1:1"),
			r(2, "testserver", "--quota", "0"), r(2, "testserver", "--type-cost", "x"), r(2, "testserver", "--window", "x"),
		},
		"sluice demo":                  {r(2, "demo", "--quota", "5"), r(2, "demo", "--workers", "0"), r(2, "demo", "--nope")},
		"sluice help":                  {r(0, "help"), r(0, "help", "run"), r(2, "help", "--nope"), r(2, "help", "nope"), r(2, "help", "config", "nope")},
		"sluice completion":            {r(0, "completion"), r(2, "completion", "nope")},
		"sluice completion bash":       {r(0, "completion", "bash"), r(2, "completion", "bash", "--nope")},
		"sluice completion zsh":        {r(0, "completion", "zsh"), r(2, "completion", "zsh", "--nope")},
		"sluice completion fish":       {r(0, "completion", "fish"), r(2, "completion", "fish", "--nope")},
		"sluice completion powershell": {r(0, "completion", "powershell"), r(2, "completion", "powershell", "--nope")},
	}
}

func writeTemp(f exitFixtures, name, body string) string {
	p := filepath.Join(filepath.Dir(f.dir), name)
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		panic(err)
	}
	return p
}

// commandPaths lists every command of the tree, generated ones included.
func commandPaths(root *cobra.Command) []string {
	var out []string
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		out = append(out, c.CommandPath())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	sort.Strings(out)
	return out
}

// Every command gives 0 when done, 1 on a runtime failure and 2 on a
// usage or config error; every command of the tree has rows here.
func TestExitStatusTable(t *testing.T) {
	f := newExitFixtures(t)
	rows := exitRows(f)
	for _, path := range commandPaths(newRootCmd()) {
		if len(rows[path]) == 0 {
			t.Errorf("%s: no exit-status rows", path)
		}
	}
	for path, rs := range rows {
		for _, row := range rs {
			t.Run(strings.Join(append([]string{path}, row.args...), " "), func(t *testing.T) {
				out, err := testkit.RunCLI(t.Context(), newRootCmd, row.args...)
				if got := cli.ExitStatus(err, nil); got != row.want {
					t.Errorf("sluice %s: exit status %d, want %d (error %v)\n%s", strings.Join(row.args, " "), got, row.want, err, out)
				}
			})
		}
	}
}

func TestExitStatusRules(t *testing.T) {
	usage := cli.UsageError(errors.New("bad flag"))
	for _, tc := range []struct {
		err  error
		sig  os.Signal
		want int
	}{
		{nil, nil, 0},
		{errors.New("queue down"), nil, 1},
		{&cli.ExitError{Code: 1}, nil, 1},
		{usage, nil, 2},
		{fmt.Errorf("wrapped: %w", usage), nil, 2},
		{nil, syscall.SIGINT, 130},
		{nil, syscall.SIGTERM, 143},
		{errors.New("context canceled"), syscall.SIGTERM, 143},
		{&cli.ExitError{Code: 130}, syscall.SIGTERM, 143},
		{usage, syscall.SIGINT, 2},
	} {
		if got := cli.ExitStatus(tc.err, tc.sig); got != tc.want {
			t.Errorf("cli.ExitStatus(%v, %v) = %d, want %d", tc.err, tc.sig, got, tc.want)
		}
	}
	if cli.UsageError(nil) != nil {
		t.Error("cli.UsageError(nil) is not nil")
	}
}

// A mistyped flag or command gets a suggestion.
func TestSuggestions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "--max-inflight", "3"}, `did you mean --max-in-flight?`},
		{[]string{"run", "--targt", "x"}, `did you mean --target?`},
		{[]string{"status", "--jsn"}, `did you mean --json?`},
		{[]string{"stauts"}, `did you mean "sluice status"?`},
		{[]string{"config", "valdate"}, `did you mean "sluice config validate"?`},
		{[]string{"config", "nope.yaml"}, `did you mean "sluice config validate nope.yaml"?`},
		{[]string{"limiter", "trace.jsonl"}, `did you mean "sluice limiter replay trace.jsonl"?`},
	} {
		_, err := testkit.RunCLI(t.Context(), newRootCmd, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("sluice %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	// Nothing close: no suggestion, and no made-up one.
	if _, err := testkit.RunCLI(t.Context(), newRootCmd, "run", "--zzzzzzzz"); err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("--zzzzzzzz: %v", err)
	}
}

// A command stopped by SIGINT exits 130, by SIGTERM 143, after its clean
// shutdown: the long-running commands, in a child process each.
func TestExitStatusSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	target := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer target.Close()
	runConfig := func() string {
		return writeConfig(t, fmt.Sprintf("source:\n  jetstream:\n    embedded: {store_dir: %s, port: -1}\ntarget: {base_url: %s}\nmetrics: {listen: \"off\"}\nlog: {format: json}\n", t.TempDir(), target.URL))
	}
	for _, tc := range []struct {
		name  string
		args  []string
		ready string // printed once the command runs
		sig   syscall.Signal
		want  int
	}{
		{"run SIGTERM", []string{"run", "-c", runConfig()}, "sluice running", syscall.SIGTERM, 143},
		{"run SIGINT", []string{"run", "-c", runConfig()}, "sluice running", syscall.SIGINT, 130},
		{"testserver", []string{"testserver", "--listen", "127.0.0.1:0"}, "listening on", syscall.SIGINT, 130},
		{"status --watch", []string{"status", "--watch", "--interval", "50ms", "--nats-port", "-1", "--data-dir", t.TempDir()}, "backlog (pending)", syscall.SIGTERM, 143},
		{"simulate --serve", []string{"simulate", "--serve", "127.0.0.1:0"}, "serving the simulator page", syscall.SIGTERM, 143},
		{"demo", []string{"demo", "--jobs", "2000", "--quota", "30", "--rate", "60", "--svg", "", "--nats-port", "-1"}, "backlog", syscall.SIGTERM, 143},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := startSluice(t, tc.args...)
			testkit.Eventually(t, tc.ready, func() bool { return strings.Contains(c.out.String(), tc.ready) })
			if err := c.cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-c.done:
			case <-time.After(time.Minute):
				t.Fatalf("did not exit; output:\n%s", c.out.String())
			}
			if got := c.cmd.ProcessState.ExitCode(); got != tc.want {
				t.Errorf("exit status %d, want %d; output:\n%s", got, tc.want, c.out.String())
			}
		})
	}
}
