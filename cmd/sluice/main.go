// Command sluice drains a durable queue of jobs into a capacity-limited
// HTTP API at the rate the API can absorb.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/internal/memlimit"
)

func main() {
	// The runtime's soft memory limit from the cgroup's (a container's
	// limits.memory), unless GOMEMLIMIT is set: docs/deployment.md.
	if _, _, err := memlimit.Apply(os.Getenv, os.DirFS("/")); err != nil {
		fmt.Fprintln(os.Stderr, "sluice: warning:", err)
	}
	os.Exit(run(context.Background(), os.Args[1:]))
}

// run executes the command line and returns the process exit status
// (exitStatus: 0, 1, 2, or 128 + the signal that stopped it).
func run(ctx context.Context, args []string) int {
	ctx, signals := catchSignals(ctx)
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	sig := signals.stop()
	if err != nil {
		if msg := err.Error(); !isSilent(err) && msg != "" {
			fmt.Fprintln(os.Stderr, "sluice:", msg)
		}
	}
	return exitStatus(err, sig)
}

// isSilent reports an exitError without a message: the command already
// said what went wrong.
func isSilent(err error) bool {
	var ee *exitError
	return errors.As(err, &ee) && ee.err == nil
}
