// Command sluice drains a durable queue of jobs into a capacity-limited
// HTTP API at the rate the API can absorb.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/memlimit"
)

func main() {
	// The runtime's soft memory limit from the cgroup's (a container's
	// limits.memory), unless GOMEMLIMIT is set: docs/deployment.md.
	if _, _, err := memlimit.Apply(os.Getenv, os.DirFS("/")); err != nil {
		fmt.Fprintln(os.Stderr, "sluice: warning:", err)
	}
	os.Exit(execute(context.Background(), os.Args[1:]))
}

// execute runs the command line and returns the process exit status
// (cli.ExitStatus: 0, 1, 2, or 128 + the signal that stopped it).
func execute(ctx context.Context, args []string) int {
	ctx, signals := cli.CatchSignals(ctx)
	root := newRootCmd()
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	sig := signals.Stop()
	if err != nil {
		if msg := err.Error(); !cli.Silent(err) && msg != "" {
			fmt.Fprintln(os.Stderr, "sluice:", msg)
		}
	}
	return cli.ExitStatus(err, sig)
}
