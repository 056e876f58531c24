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
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/sources"
)

// defaultStatusInterval is how long status measures the throughput when
// jobs are in flight, and how often --watch refreshes.
const defaultStatusInterval = 2 * time.Second

// statusOptions are status's own flags.
type statusOptions struct {
	json     bool
	watch    bool
	interval time.Duration
}

func newStatusCmd() *cobra.Command {
	var f sourceFlags
	var o statusOptions
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

With --watch it refreshes every --interval until SIGINT or SIGTERM.

With the embedded server (the default), status uses the server of a sluice
process already running on the same --data-dir, or starts its own on that
directory for the time it runs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := f.load(cmd)
			if err != nil {
				return err
			}
			if o.interval <= 0 {
				return usageError(fmt.Errorf("--interval: must be > 0, got %v", o.interval))
			}
			return runStatusCmd(cmd.Context(), cfg, o, f.config, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&o.json, "json", false, "print JSON instead of a table (with --watch, one object per line)")
	cmd.Flags().BoolVarP(&o.watch, "watch", "w", false, "refresh every --interval until interrupted")
	cmd.Flags().DurationVar(&o.interval, "interval", defaultStatusInterval, "how long to measure the throughput; with --watch, the refresh interval")
	return cmd
}

// runStatusCmd opens the queue once and prints its state, once or, with
// --watch, until ctx ends.
func runStatusCmd(ctx context.Context, cfg config.Source, o statusOptions, file string, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	src, err := openSource(ctx, cfg, commandLogger(stderr))
	if err != nil {
		return err
	}
	defer src.Close()
	read := func(ctx context.Context) (sources.Stats, error) { return readStats(ctx, src) }
	log := commandLogger(stderr)
	if o.watch {
		clear := !o.json && isTerminal(stdout)
		return watchStatus(ctx, read, o.interval, func(s statusSample, p drainProgress) error {
			if clear {
				io.WriteString(stdout, "\x1b[H\x1b[2J")
			}
			if !o.json {
				fmt.Fprintf(stdout, "%s\n", s.at.Format(time.TimeOnly))
			}
			return printStatusWith(stdout, s.st, p, o.json, nil)
		})
	}
	s, p, err := measureStatus(ctx, read, o.interval)
	if err != nil {
		return err
	}
	if !o.json {
		if err := printStatusWith(stdout, s.st, p, false, nil); err != nil {
			return err
		}
		return printMembers(ctx, file, cfg, stdout, log) // limiter.share members
	}
	members, err := listMembers(ctx, file, cfg, log)
	if err != nil {
		return err
	}
	return printStatusWith(stdout, s.st, p, true, members)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// runStatus prints the state of the source cfg describes, once.
func runStatus(ctx context.Context, cfg config.Source, asJSON bool, stdout, stderr io.Writer) error {
	if err := cfg.Check(); err != nil {
		return err
	}
	return runStatusCmd(ctx, cfg, statusOptions{json: asJSON, interval: defaultStatusInterval}, "", stdout, stderr)
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

// statusJSON is the output of status --json; dead_letters is null when the
// source cannot tell, done when it cannot count them, throughput and eta
// when they were not measured; members is there only when
// limiter.share.mode is members or leases.
type statusJSON struct {
	Pending     int64       `json:"pending"`
	AckPending  int64       `json:"ack_pending"`
	Redelivered int64       `json:"redelivered"`
	DeadLetters *int64      `json:"dead_letters"`
	Done        *int64      `json:"done,omitempty"`
	Throughput  *float64    `json:"throughput_per_second,omitempty"`
	ETA         *float64    `json:"eta_seconds,omitempty"`
	Share       *memberList `json:"share,omitempty"`
}

func printStatusWith(w io.Writer, st sources.Stats, p drainProgress, asJSON bool, members *memberList) error {
	if asJSON {
		out := statusJSON{Pending: st.Pending, AckPending: st.AckPending, Redelivered: st.Redelivered, Share: members}
		if st.DeadLetters >= 0 {
			out.DeadLetters = &st.DeadLetters
		}
		if st.Done >= 0 {
			out.Done = &st.Done
		}
		if p.measured {
			out.Throughput = &p.rate
			if p.eta >= 0 {
				eta := p.eta.Seconds()
				out.ETA = &eta
			}
		}
		return json.NewEncoder(w).Encode(out)
	}
	dead, done := "unknown", "unknown"
	if st.DeadLetters >= 0 {
		dead = strconv.FormatInt(st.DeadLetters, 10)
	}
	if st.Done >= 0 {
		done = strconv.FormatInt(st.Done, 10)
	}
	_, err := fmt.Fprintf(w, "%-24s %10d\n%-24s %10d\n%-24s %10d\n%-24s %10s\n%-24s %10s\n",
		"backlog (pending)", st.Pending,
		"in flight (ack pending)", st.AckPending,
		"redelivered", st.Redelivered,
		"dead letters", dead,
		"done", done)
	if err != nil || !p.measured {
		return err
	}
	eta := "unknown (not draining)"
	switch {
	case p.eta == 0:
		eta = "0s (drained)"
	case p.eta > 0:
		eta = fmtDuration(p.eta)
	}
	_, err = fmt.Fprintf(w, "%-24s %10s\n%-24s %10s\n", "throughput", strconv.FormatFloat(p.rate, 'f', 1, 64)+"/s", "eta", eta)
	return err
}
