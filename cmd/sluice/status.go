package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/sources"
)

func newStatusCmd() *cobra.Command {
	var f sourceFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status [flags]",
		Short: "Show the queue's backlog, jobs in flight, redeliveries and dead letters",
		Long: `status reads the state of the queue:
  backlog       jobs waiting to be delivered (pending)
  in flight     jobs delivered to a worker and not yet settled (ack pending)
  redelivered   jobs in flight or waiting that were delivered more than once
  dead letters  records in the dead-letter stream ("unknown" when there is none)

With the embedded server (the default), status uses the server of a sluice
process already running on the same --data-dir, or starts its own on that
directory for the time it runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := loadSourceConfig(f.config)
			if err != nil {
				return err
			}
			if err := f.apply(cmd, &cfg); err != nil {
				return err
			}
			log := commandLogger(cmd.ErrOrStderr())
			if !asJSON {
				if err := runStatus(cmd.Context(), cfg, false, cmd.OutOrStdout(), cmd.ErrOrStderr()); err != nil {
					return err
				}
				return printMembers(cmd.Context(), f.config, cfg, cmd.OutOrStdout(), log) // limiter.share members
			}
			st, err := queueStats(cmd.Context(), cfg, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			members, err := listMembers(cmd.Context(), f.config, cfg, log)
			if err != nil {
				return err
			}
			return writeStatusJSON(cmd.OutOrStdout(), st, members)
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON instead of a table")
	return cmd
}

// statusJSON is the output of status --json; dead_letters is null when the
// source cannot tell, and members is there only when limiter.share.mode is
// members or leases.
type statusJSON struct {
	Pending     int64       `json:"pending"`
	AckPending  int64       `json:"ack_pending"`
	Redelivered int64       `json:"redelivered"`
	DeadLetters *int64      `json:"dead_letters"`
	Share       *memberList `json:"share,omitempty"`
}

// runStatus prints the state of the source cfg describes.
func runStatus(ctx context.Context, cfg sourceConfig, asJSON bool, stdout, stderr io.Writer) error {
	st, err := queueStats(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	return printStatus(stdout, st, asJSON)
}

// queueStats reads the state of the source cfg describes.
func queueStats(ctx context.Context, cfg sourceConfig, stderr io.Writer) (sources.Stats, error) {
	if err := cfg.validate(); err != nil {
		return sources.Stats{}, err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := cfg.open(ctx, commandLogger(stderr))
	if err != nil {
		return sources.Stats{}, err
	}
	st, err := readStats(ctx, src)
	if cerr := src.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return st, err
}

func readStats(ctx context.Context, src sources.Source) (sources.Stats, error) {
	ss, ok := src.(sources.StatsSource)
	if !ok {
		return sources.Stats{}, fmt.Errorf("status: this source (%T) cannot report its state", src)
	}
	st, err := ss.Stats(ctx)
	if err != nil {
		return st, fmt.Errorf("status: %w", err)
	}
	return st, nil
}

func printStatus(w io.Writer, st sources.Stats, asJSON bool) error {
	if asJSON {
		return writeStatusJSON(w, st, nil)
	}
	dead := "unknown"
	if st.DeadLetters >= 0 {
		dead = strconv.FormatInt(st.DeadLetters, 10)
	}
	_, err := fmt.Fprintf(w, "%-24s %10d\n%-24s %10d\n%-24s %10d\n%-24s %10s\n",
		"backlog (pending)", st.Pending,
		"in flight (ack pending)", st.AckPending,
		"redelivered", st.Redelivered,
		"dead letters", dead)
	return err
}

// writeStatusJSON writes one statusJSON object; members may be nil.
func writeStatusJSON(w io.Writer, st sources.Stats, members *memberList) error {
	out := statusJSON{Pending: st.Pending, AckPending: st.AckPending, Redelivered: st.Redelivered, Share: members}
	if st.DeadLetters >= 0 {
		out.DeadLetters = &st.DeadLetters
	}
	return json.NewEncoder(w).Encode(out)
}
