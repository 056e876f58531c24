package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
)

// TestSluiceProcess is not a test: it is `sluice` itself, run by the
// signal tests in a child process (the test binary re-executed with
// SLUICE_TEST_ARGS set).
func TestSluiceProcess(t *testing.T) {
	args := os.Getenv("SLUICE_TEST_ARGS")
	if args == "" {
		t.Skip("runs only as the child process of the signal tests")
	}
	os.Exit(execute(context.Background(), strings.Split(args, "\x1f")))
}

// child is a `sluice` child process.
type child struct {
	cmd  *exec.Cmd
	out  *testkit.SyncBuffer
	done chan struct{} // closed when the process has exited
	err  error         // cmd.Wait's error, once done is closed
}

// startSluice runs `sluice args...` in a child process.
func startSluice(t *testing.T, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], "-test.run=^TestSluiceProcess$"), out: &testkit.SyncBuffer{}, done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), "SLUICE_TEST_ARGS="+strings.Join(args, "\x1f"))
	c.cmd.Stderr = c.out
	c.cmd.Stdout = c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// A first SIGTERM stops `sluice run` gracefully: the job whose request
// hangs is handed back when shutdown_timeout ends, and the process exits
// with status 143 (128 + SIGTERM). A second signal during that wait exits
// at once.
func TestRunSignals(t *testing.T) {
	for _, second := range []bool{false, true} {
		t.Run(fmt.Sprintf("second_signal=%v", second), func(t *testing.T) {
			natsURL := backends.StartNATS(t)
			var mu sync.Mutex
			hits := 0
			hang := make(chan struct{})
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				hits++
				mu.Unlock()
				select {
				case <-hang:
				case <-r.Context().Done():
				}
			}))
			defer target.Close()
			defer close(hang)

			timeout := "3s"
			if second {
				timeout = "10m" // only the second signal can end it soon
			}
			file := writeConfig(t, fmt.Sprintf(`
source:
  jetstream: {url: %s, fetch_wait: 200ms}
target: {base_url: %s, timeout: 1h}
worker: {shutdown_timeout: %s}
metrics: {listen: "off"}
log: {format: json}
`, natsURL, target.URL, timeout))
			cfg, err := config.Load(file, config.Options{})
			if err != nil {
				t.Fatal(err)
			}
			q := client(t, cfg)
			enqueueJob(t, q, "slow", nil)

			c := startSluice(t, "run", "-c", file)
			testkit.Eventually(t, "the request to reach the target", func() bool { mu.Lock(); defer mu.Unlock(); return hits == 1 })
			if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			testkit.Eventually(t, "the shutdown message", func() bool { return strings.Contains(c.out.String(), "shutting down") })
			if second {
				if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			select {
			case <-c.done:
			case <-time.After(time.Minute):
				t.Fatalf("sluice run did not exit; output:\n%s", c.out.String())
			}
			err2, out := c.err, c.out
			var ee *exec.ExitError
			switch {
			case second && !(errors.As(err2, &ee) && !ee.Exited()):
				t.Errorf("after a second signal: %v, want the process killed by it; output:\n%s", err2, out.String())
			case !second && c.cmd.ProcessState.ExitCode() != 143:
				t.Errorf("graceful stop: %v, want exit status 143; output:\n%s", err2, out.String())
			}
			if !second {
				// The hanging job was handed back (Nak, no delay), so it
				// is at once available again, not held for the ack wait.
				st, err := q.Stats(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				if st.Redelivered != 0 || st.Pending+st.AckPending != 1 {
					t.Errorf("after the graceful stop: %+v", st)
				}
			}
		})
	}
}

// The shutdown is announced when the first signal arrives, before the
// worker sees its context end: "shutting down" comes before anything the
// worker logs as it stops (it came after "worker stopped" in 4 of 5
// stops). A run that ends on its own announces nothing.
func TestUntilSignalAnnouncesFirst(t *testing.T) {
	var mu sync.Mutex
	var lines []string
	logLine := func(s string) { mu.Lock(); lines = append(lines, s); mu.Unlock() }

	sigCtx, signal := context.WithCancel(t.Context())
	err := untilSignal(sigCtx, func() { logLine("shutting down") }, func(ctx context.Context) error {
		signal() // the first signal, while the worker runs
		<-ctx.Done()
		logLine("worker stopped")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(lines, ", "); got != "shutting down, worker stopped" {
		t.Errorf("logged %s, want the announcement first", got)
	}

	lines = nil
	err = untilSignal(t.Context(), func() { logLine("shutting down") }, func(context.Context) error {
		logLine("worker stopped")
		return nil
	})
	if err != nil || strings.Join(lines, ", ") != "worker stopped" {
		t.Errorf("a run that ends on its own: %v, logged %q", err, lines)
	}
}
