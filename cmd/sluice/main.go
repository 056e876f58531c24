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

// run executes the command line and returns the process exit status.
func run(ctx context.Context, args []string) int {
	root := newRootCmd()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			if ee.err != nil {
				fmt.Fprintln(os.Stderr, "sluice:", ee.err)
			}
			return ee.code
		}
		fmt.Fprintln(os.Stderr, "sluice:", err)
		return 1
	}
	return 0
}

// exitError makes a command exit with a given status. A nil err prints
// nothing (the command already reported).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }
