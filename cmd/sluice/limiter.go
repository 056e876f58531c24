package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/limiter/replay"
)

func newLimiterCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "limiter",
		Short: "Inspect the adaptive rate limiter",
	}
	cmd.AddCommand(newLimiterReplayCmd())
	return cmd
}

func newLimiterReplayCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "replay FILE|-",
		Short: "Replay a trace of limiter events in virtual time",
		Long: `replay reads a trace (JSON lines; - for stdin) and prints one JSON line per
event with the limiter's state after it: rate, tokens, queue, paused_until,
and the requests granted or rejected since the previous line.

The first line is {"options": {...}} with the option names of the config
file's limiter section; the events are acquire, throttle, success, cancel,
instances and tick, with "at" in seconds. See docs/limiter.md.
A bad trace line is reported with its number, and the exit status is 2.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var in io.Reader = cmd.InOrStdin()
			name := args[0]
			if name != "-" {
				f, err := os.Open(name)
				if err != nil {
					return cli.UsageError(err)
				}
				defer f.Close()
				in = f
			} else {
				name = "stdin"
			}
			r := replay.Replayer{Decode: replay.DecodeOptions}
			if err := r.Run(in, cmd.OutOrStdout()); err != nil {
				return cli.UsageError(fmt.Errorf("%s: %w", name, err))
			}
			return nil
		},
	}
}
