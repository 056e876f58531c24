package main

import (
	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/spf13/cobra"
)

// newRootCmd builds the whole command tree. Each subcommand is built by its
// own constructor; there is no package-level command state.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "sluice",
		Short: "Drain a durable queue of jobs into a quota-limited HTTP API",
		Long: `sluice pulls jobs from NATS JetStream or Google Cloud Pub/Sub, waits on an
adaptive rate limiter for each job's units, calls the target API, and acks,
redelivers or dead-letters each job according to the response.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       currentVersion(),
	}
	root.SetVersionTemplate(versionLine() + "\n")
	root.AddCommand(
		newVersionCmd(),
		// subcommands: keep one per line
		newEnqueueCmd(),
		newStatusCmd(),
		newConfigCmd(),
		newRunCmd(),
		newDLQCmd(),
		newLimiterCmd(),
		newHealthcheckCmd(),
		newSimulateCmd(),
		newTestserverCmd(),
		newDemoCmd(),
	)
	cli.ApplyConventions(root)
	cli.SetExamples(root)
	return root
}
