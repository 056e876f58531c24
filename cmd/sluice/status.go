package main

import (
	"fmt"
	"time"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/queue"
	"github.com/spf13/cobra"
)

// defaultStatusInterval is how long status measures the throughput when
// jobs are in flight, and how often --watch refreshes.
const defaultStatusInterval = 2 * time.Second

func newStatusCmd() *cobra.Command {
	var f sourceFlags
	var o queue.StatusOptions
	cmd := &cobra.Command{
		Use:   "status [flags]",
		Short: "Show the queue's backlog, jobs in flight and done, the throughput and the time left",
		Long: `status reads the state of the queue:
  backlog       jobs waiting to be delivered (pending)
  in flight     jobs delivered to a worker and not yet settled (ack pending)
  redelivered   jobs in flight or waiting that were delivered more than once
  dead letters  records in the dead-letter stream ("unknown" when there is none)
  done          jobs settled for good (acked or dead-lettered) since the
                queue was created
  throughput    jobs done per second, measured over --interval while jobs
                are in flight (a worker is running); with --watch over the
                last 30 s
  eta           backlog and in flight divided by the throughput
  members       with limiter.share in members or leases mode, the live
                workers of the budget: rate, share, uptime and clock, how
                far each one's clock is ahead of the NATS server's (from
                its last heartbeat, which carries its writer's clock)

With --watch it refreshes every --interval until SIGINT or SIGTERM.

With the embedded server (the default), status uses the server of a sluice
process already running on the same --data-dir, or starts its own on that
directory for the time it runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Interval <= 0 {
				return cli.UsageError(fmt.Errorf("--interval: must be > 0, got %v", o.Interval))
			}
			cfg, err := f.loadConfig(cmd)
			if err != nil {
				return err
			}
			return queue.Status(cmd.Context(), cfg, o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&o.JSON, "json", false, "print JSON instead of a table (with --watch, one object per line)")
	cmd.Flags().BoolVarP(&o.Watch, "watch", "w", false, "refresh every --interval until interrupted")
	cmd.Flags().DurationVar(&o.Interval, "interval", defaultStatusInterval, "how long to measure the throughput; with --watch, the refresh interval")
	return cmd
}
