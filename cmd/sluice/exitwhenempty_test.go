package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
)

// `sluice run --exit-when-empty` drains the queue and exits with status 0
// on its own; on the way it logs "drained N jobs in T" and, when it stops,
// a summary line (#15).
func TestRunExitWhenEmpty(t *testing.T) {
	natsURL := backends.StartNATS(t)
	api := newAPILog()
	api.answers["flaky"] = func(n int, w http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusOK)
	}
	target := httptest.NewServer(api)
	defer target.Close()
	cfg := e2eConfig(t, natsURL, target.URL)
	src := client(t, cfg)
	for i := range 5 {
		enqueueJob(t, src, fmt.Sprintf("job-%d", i), map[string]any{"headers": map[string]string{"X-Job": fmt.Sprintf("job-%d", i)}})
	}
	enqueueJob(t, src, "flaky", map[string]any{"headers": map[string]string{"X-Job": "flaky"}})

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := testkit.RunCLI(ctx, newRootCmd, "run", "--exit-when-empty", "--target", target.URL,
		"--nats-url", natsURL, "--metrics-listen", "off", "--log-format", "text",
		"--set", "source.jetstream.fetch_wait=200ms", "--set", "worker.backoff.base=10ms", "--set", "worker.backoff.cap=50ms")
	if err != nil {
		t.Fatalf("run --exit-when-empty: %v\n%s", err, out)
	}
	if ctx.Err() != nil {
		t.Fatalf("run did not exit by itself:\n%s", out)
	}
	if !drained(t, src) {
		t.Fatalf("run exited with jobs left:\n%s", out)
	}
	for _, want := range []string{`msg="drained 6 jobs in `, `msg="worker summary"`, "succeeded=6"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %q:\n%s", want, out)
		}
	}
	// On an empty queue it exits at once.
	if out, err := testkit.RunCLI(ctx, newRootCmd, "run", "--exit-when-empty", "--target", target.URL,
		"--nats-url", natsURL, "--metrics-listen", "off"); err != nil || ctx.Err() != nil {
		t.Fatalf("run --exit-when-empty on an empty queue: %v\n%s", err, out)
	}
}
