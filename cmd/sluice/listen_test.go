package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// Two workers on one machine: the second finds the metrics port taken, the
// error names the flag that fixes it, and with --metrics-listen
// 127.0.0.1:0 (and --ui-listen 127.0.0.1:0) it starts (#15).
func TestRunSecondWorkerMetricsListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	data := filepath.Join(t.TempDir(), "data")
	run := func(ctx context.Context, out *testkit.SyncBuffer, listen ...string) error {
		root := newRootCmd()
		args := []string{"run", "--target", "http://127.0.0.1:1", "--data-dir", data,
			"--nats-port", "-1", "--log-format", "text"}
		root.SetArgs(append(args, listen...))
		root.SetOut(out)
		root.SetErr(out)
		return root.ExecuteContext(ctx)
	}

	var first testkit.SyncBuffer
	err = run(t.Context(), &first, "--metrics-listen", taken.Addr().String())
	if err == nil || !strings.Contains(err.Error(), "metrics.listen") || !strings.Contains(err.Error(), "address already in use") ||
		!strings.Contains(err.Error(), "--metrics-listen 127.0.0.1:0") {
		t.Fatalf("run on a metrics port in use: %v, want an error naming --metrics-listen 127.0.0.1:0", err)
	}
	// It failed before it said it runs, and before it opened the source:
	// the embedded server's store directory was never made.
	if strings.Contains(first.String(), "sluice running") {
		t.Errorf("run on a metrics port in use said it runs:\n%s", first.String())
	}
	if _, err := os.Stat(data); !os.IsNotExist(err) {
		t.Errorf("run on a metrics port in use opened the source first (stat %s: %v)", data, err)
	}

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var second testkit.SyncBuffer
	done := make(chan error, 1)
	go func() { done <- run(ctx, &second, "--metrics-listen", "127.0.0.1:0", "--ui-listen", "127.0.0.1:0") }()
	testkit.Eventually(t, "the ops endpoints and the live page to listen", func() bool {
		select {
		case err := <-done:
			t.Fatalf("run stopped: %v\n%s", err, second.String())
		default:
		}
		out := second.String()
		return strings.Contains(out, "sluice running")
	})
	// Bound, then running: the addresses are logged before it says so.
	out := second.String()
	running := strings.Index(out, "sluice running")
	for _, bound := range []string{"ops endpoints listening", "live page listening"} {
		if i := strings.Index(out, bound); i < 0 || i > running {
			t.Errorf("%q is not logged before \"sluice running\":\n%s", bound, out)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run: %v", err)
	}
	if strings.Contains(second.String(), taken.Addr().String()) {
		t.Errorf("the second worker used the taken port:\n%s", second.String())
	}
}
