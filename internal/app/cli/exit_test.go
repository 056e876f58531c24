package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
)

const secondSignalEnv = "SLUICE_TEST_SECOND_SIGNAL"

// TestSecondSignalProcess is not a test: it is the child process of
// TestSecondSignalEndsProcess. It signals itself once, waits for the
// command context to end, signals itself again, and then waits for
// nothing: only that second signal can end it.
func TestSecondSignalProcess(t *testing.T) {
	if os.Getenv(secondSignalEnv) == "" {
		t.Skip("runs only as the child process of TestSecondSignalEndsProcess")
	}
	ctx, signals := CatchSignals(context.Background())
	defer signals.Stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-ctx.Done()
	if !StoppedBySignal(ctx) {
		t.Fatalf("context ended by %v, not by the signal", context.Cause(ctx))
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {} // a second signal the catcher swallowed leaves the process here
}

// Once the command context has ended with the first signal, the catcher no
// longer listens: a second signal ends the process at once. sluice run
// relies on it, announcing "a second signal exits at once" when its context
// ends; a catcher that cancelled before it stopped listening swallowed a
// second signal sent right after the announcement.
func TestSecondSignalEndsProcess(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestSecondSignalProcess$")
	cmd.Env = append(os.Environ(), secondSignalEnv+"=1")
	out := &testkit.SyncBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(time.Minute): // only a net: the child ends at once or never
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("the second signal did not end the process; output:\n%s", out.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("child: %v, want it killed by SIGTERM; output:\n%s", err, out.String())
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGTERM {
		t.Fatalf("child: %v, want it killed by SIGTERM; output:\n%s", err, out.String())
	}
}
