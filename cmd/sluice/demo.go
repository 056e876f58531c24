package main

import (
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/demo"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

func newDemoCmd() *cobra.Command {
	o := demo.DefaultOptions()
	o.Version = currentVersion()
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Drain a backlog into a model API with a hidden quota, all in one process",
		Long: `demo needs no infrastructure: in one process it starts an embedded NATS
JetStream server (a free port, a temporary store removed at the end), the
model API of 'sluice testserver' with a hidden quota, and --workers workers
sharing the budget (limiter.instances = --workers, each with its own limiter,
as separate 'sluice run' processes would). It enqueues --jobs jobs of cost 1,
2 and 5 and drains them, showing the progress live: jobs drained, each
worker's rate and their sum, 429s and an estimate of the time left.

At the end it prints a summary (jobs done and dead-lettered, requests and
throttles, utilization of the quota, drain time against the ideal of total
units ÷ quota) and writes a chart to --svg.

The model API counts its quota over a 10 s sliding window, and the limiter
is tuned for such an API (burst 1s, aimd.increase_interval 2s, max_pause
10s; the other options are the defaults), so that the defaults show the
climb, the first throttle, the cut and the steady state in about a minute.
Ctrl-C stops the demo cleanly; a second Ctrl-C exits at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(); err != nil {
				return cli.UsageError(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			go func() {
				<-ctx.Done()
				stop() // a second signal ends the process at once
			}()
			out := cmd.OutOrStdout()
			width := 0 // not a terminal: progress as plain lines
			if f, ok := out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
				width = 80
				if w, _, err := term.GetSize(int(f.Fd())); err == nil && w > 0 {
					width = w
				}
			}
			rep, err := demo.Run(ctx, o, out, width)
			if err != nil {
				return err
			}
			if rep.Interrupted() {
				// 130; after SIGTERM cli.ExitStatus makes it 143.
				return &cli.ExitError{Code: 130}
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Workers, "workers", o.Workers, "workers sharing the budget, each with its own limiter (limiter.instances)")
	fl.IntVar(&o.Jobs, "jobs", o.Jobs, "jobs to enqueue, of cost 1, 2 and 5 units")
	fl.Float64Var(&o.Quota, "quota", o.Quota, "the model API's hidden quota, units per minute (counted over a 10 s window)")
	fl.Float64Var(&o.Rate, "rate", o.Rate, "initial rate of the whole budget, units per minute (limiter.initial_units_per_minute)")
	fl.StringVar(&o.SVG, "svg", o.SVG, `chart of the run; "" writes none`)
	fl.IntVar(&o.NATSPort, "nats-port", -1, "embedded NATS server's port on 127.0.0.1; 0 or -1 for a free one")
	fl.IntVar(&o.APIPort, "api-port", -1, "the model API's port on 127.0.0.1; 0 or -1 for a free one")
	return cmd
}
