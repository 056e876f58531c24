package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/queue"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/worker"
)

// writeConfig writes a config file for a worker on natsURL and returns its
// path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// `sluice dlq replay` re-enqueues the dead letters that match its filter,
// and a worker then runs them again; --dry-run changes nothing.
func TestDLQReplay(t *testing.T) {
	natsURL := backends.StartNATS(t)
	api := newAPILog()
	var gone atomic.Bool
	gone.Store(true)
	api.answers["a"] = func(_ int, w http.ResponseWriter, _ *http.Request) {
		if gone.Load() {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	api.answers["b"] = api.answers["a"]
	target := httptest.NewServer(api)
	defer target.Close()

	file := writeConfig(t, fmt.Sprintf(`
source:
  jetstream: {url: %s, fetch_wait: 200ms}
target: {base_url: %s}
jobs:
  types:
    export: {path: /exports}
limiter: {enabled: false}
metrics: {listen: "off"}
`, natsURL, target.URL))
	cfg, err := config.Load(file, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q := client(t, cfg)
	enqueueJob(t, q, "a", map[string]any{"type": "export", "headers": map[string]string{"X-Job": "a"}})
	enqueueJob(t, q, "b", map[string]any{"headers": map[string]string{"X-Job": "b"}})
	enqueueRawJob(t, q, "c", []byte(`not json`))
	r := startRun(t, cfg, nil)
	testkit.Eventually(t, "three dead letters", func() bool { return len(deadLetters(t, cfg)) == 3 })
	r.stop(t)

	out, err := testkit.RunCLI(t.Context(), newRootCmd, "dlq", "replay", "-c", file, "--status", "410", "--type", "export", "--dry-run")
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.Contains(out, "replay id=a type=export reason=client_error status=410") || strings.Contains(out, "id=b") ||
		!strings.Contains(out, "would replay 1 of 3 dead letters (1 matched, 0 skipped)") {
		t.Errorf("dry run output:\n%s", out)
	}
	if len(deadLetters(t, cfg)) != 3 {
		t.Errorf("dry run changed the dead letters")
	}

	out, err = testkit.RunCLI(t.Context(), newRootCmd, "dlq", "replay", "-c", file, "--reason", "client_error")
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.Contains(out, "replayed 2 of 3 dead letters (2 matched, 0 skipped)") {
		t.Errorf("replay output:\n%s", out)
	}
	dl := deadLetters(t, cfg)
	if len(dl) != 1 || dl["c"].Reason != worker.ReasonBadJSON.String() {
		t.Errorf("dead letters after replay: %v", dl)
	}

	gone.Store(false)
	startRun(t, cfg, nil)
	testkit.Eventually(t, "the replayed jobs to run", func() bool { return api.count("a") == 2 && api.count("b") == 2 })
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
	if n := len(deadLetters(t, cfg)); n != 1 {
		t.Errorf("dead letters after the replayed jobs ran: %d, want 1", n)
	}
}

// A JSONL dead-letter file is read back, and never changed.
func TestDLQReplayJSONL(t *testing.T) {
	natsURL := backends.StartNATS(t)
	dir := t.TempDir()
	dlPath := filepath.Join(dir, "dead.jsonl")
	records := []worker.DeadLetter{
		{ID: "x", Type: "t", Reason: worker.ReasonClientError.String(), Status: 404, Payload: `{"id":"x"}`},
		{ID: "y", Type: "t", Reason: worker.ReasonTooLarge.String(), Payload: `{"id":"y","body":"`, PayloadTruncated: true},
		{ID: "z", Type: "u", Reason: worker.ReasonClientError.String(), Status: 404, PayloadBase64: "eyJpZCI6InoifQ=="},
	}
	var buf bytes.Buffer
	for _, r := range records {
		b, _ := json.Marshal(r)
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(dlPath, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	file := writeConfig(t, fmt.Sprintf("source:\n  jetstream: {url: %s}\ndead_letters: {kind: jsonl, path: %s}\n", natsURL, dlPath))
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "dlq", "replay", "-c", file)
	if err != nil {
		t.Fatal(err, out)
	}
	if !strings.Contains(out, "replayed 2 of 3 dead letters (3 matched, 1 skipped)") || !strings.Contains(out, "skip id=y") {
		t.Errorf("output:\n%s", out)
	}
	after, _ := os.ReadFile(dlPath)
	if !bytes.Equal(after, buf.Bytes()) {
		t.Errorf("the dead-letter file was changed")
	}
	out, err = testkit.RunCLI(t.Context(), newRootCmd, "status", "-c", file, "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	var st queue.StatusReport
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status output %q: %v", out, err)
	}
	if st.Pending != 2 {
		t.Errorf("pending after replay = %d, want 2", st.Pending)
	}
}

// enqueue and status take -c FILE and use its source section.
func TestEnqueueStatusWithConfig(t *testing.T) {
	natsURL := backends.StartNATS(t)
	file := writeConfig(t, fmt.Sprintf("source:\n  jetstream:\n    url: %s\n    stream: CFGTEST\n    subjects: [cfgtest.jobs]\n", natsURL))
	jobs := filepath.Join(t.TempDir(), "jobs.jsonl")
	if err := os.WriteFile(jobs, []byte("{\"id\":\"1\"}\n{\"id\":\"2\"}\n{\"id\":\"3\"}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := testkit.RunCLI(t.Context(), newRootCmd, "enqueue", "-c", file, jobs); err != nil {
		t.Fatal(err, out)
	}
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "status", "-c", file, "--json")
	if err != nil {
		t.Fatal(err, out)
	}
	var st queue.StatusReport
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status output %q: %v", out, err)
	}
	if st.Pending != 3 {
		t.Errorf("pending = %d, want 3 (in stream CFGTEST from the config file)", st.Pending)
	}
	if _, err := testkit.RunCLI(t.Context(), newRootCmd, "status", "-c", filepath.Join(t.TempDir(), "missing.yaml")); err == nil {
		t.Errorf("status with a missing config file succeeded")
	}
}
