package main

import (
	"fmt"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/dlq"
)

func newDLQCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Work with dead letters",
	}
	cmd.AddCommand(newDLQReplayCmd())
	return cmd
}

func newDLQReplayCmd() *cobra.Command {
	var (
		file string
		o    dlq.Options
	)
	cmd := &cobra.Command{
		Use:   "replay [-c FILE] [--type T] [--reason R] [--status N] [--dry-run]",
		Short: "Enqueue dead letters again",
		Long: `replay reads the dead letters (dead_letters.kind nats, pubsub or jsonl), and
enqueues again the original job of each one that matches every filter given:
--type, --reason (client_error, max_deliveries, bad_json, bad_path, ...) and
--status (the last HTTP status). With --dry-run it only lists them.

A replayed record is removed from a NATS dead-letter stream, or acknowledged
on the Pub/Sub subscription that keeps the dead-letter topic's records
(dead_letters.subscription, default <topic>-records), unless --keep, so that
running replay twice does not enqueue a job twice; records not replayed stay.
A JSONL file is never changed. Records of oversized envelopes hold only the
first bytes of the payload and are skipped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := commandConfig(file)
			if err != nil {
				return cli.UsageError(err)
			}
			ctx := cmd.Context()
			r, err := dlq.Open(ctx, cfg, slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			n, err := r.Replay(ctx, o, cmd.OutOrStdout())
			if cerr := r.Close(); err == nil && cerr != nil {
				err = fmt.Errorf("dlq replay: %w", cerr)
			}
			if err != nil {
				return err
			}
			verb := "replayed"
			if o.DryRun {
				verb = "would replay"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %d of %d dead letters (%d matched, %d skipped)\n", verb, n.Replayed, n.Seen, n.Matched, n.Skipped)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "config", "c", "", "config file (default: the embedded JetStream default)")
	fl.StringVar(&o.Filter.Type, "type", "", "only dead letters of this job type")
	fl.StringVar(&o.Filter.Reason, "reason", "", "only dead letters with this reason")
	fl.IntVar(&o.Filter.Status, "status", 0, "only dead letters whose last HTTP status is this")
	fl.BoolVar(&o.DryRun, "dry-run", false, "list what would be replayed, change nothing")
	fl.BoolVar(&o.Keep, "keep", false, "keep replayed records in the NATS dead-letter stream or the Pub/Sub subscription")
	return cmd
}

// commandConfig loads the config file, or the defaults without one, for
// the commands that use the queue but not the target.
func commandConfig(file string) (config.Config, error) {
	if file = configFile(file); file == "" {
		// The defaults, with the environment's overrides (NATS_URL...).
		return config.Parse(nil, config.Options{NoTarget: true})
	}
	data, err := config.ReadFile(file)
	if err != nil {
		return config.Config{}, err
	}
	return config.Parse(data, config.Options{NoTarget: true})
}
