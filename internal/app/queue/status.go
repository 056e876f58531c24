package queue

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

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/sources"
)

// StatusOptions are the choices of `sluice status`.
type StatusOptions struct {
	JSON     bool          // one JSON object (per reading with Watch)
	Watch    bool          // refresh every Interval until ctx ends
	Interval time.Duration // how long to measure the throughput; the refresh interval with Watch
}

// Status opens the queue that cfg's source section names once and prints
// its state, once or, with o.Watch, until ctx ends. Once, it also prints
// the live members of limiter.share.
func Status(ctx context.Context, cfg config.Config, o StatusOptions, stdout, stderr io.Writer) error {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	if o.Interval <= 0 {
		return fmt.Errorf("--interval: must be > 0, got %v", o.Interval)
	}
	log := clientLogger(stderr)
	src, err := run.OpenSource(ctx, cfg.Source, log)
	if err != nil {
		return err
	}
	defer src.Close()
	read := func(ctx context.Context) (sources.Stats, error) { return readStats(ctx, src, cfg.Source.Kind) }
	if o.Watch {
		clear := !o.JSON && isTerminal(stdout)
		return watchStatus(ctx, read, o.Interval, func(s statusSample, p drainProgress) error {
			if clear {
				io.WriteString(stdout, "\x1b[H\x1b[2J")
			}
			if !o.JSON {
				fmt.Fprintf(stdout, "%s\n", s.at.Format(time.TimeOnly))
			}
			return printStatus(stdout, s.st, p, o.JSON, nil, readWorker(ctx, cfg))
		})
	}
	s, p, err := measureStatus(ctx, read, o.Interval)
	if err != nil {
		return err
	}
	ws := readWorker(ctx, cfg)
	if !o.JSON {
		// The queue's table first: it stands even if the members cannot
		// be listed.
		if err := printStatus(stdout, s.st, p, false, nil, ws); err != nil {
			return err
		}
	}
	members, err := run.ListMembers(ctx, cfg, log) // limiter.share members
	if err != nil {
		return err
	}
	if !o.JSON {
		return members.Print(stdout)
	}
	return printStatus(stdout, s.st, p, true, members, ws)
}

// readWorker asks the worker on cfg's metrics.listen, on this machine, for
// its state; nil when none answers (status then shows the queue alone).
func readWorker(ctx context.Context, cfg config.Config) *run.WorkerState {
	ws, err := run.ReadWorkerState(ctx, cfg.Metrics)
	if err != nil {
		return nil
	}
	return ws
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// readStats reads the state of src, a source of kind.
func readStats(ctx context.Context, src sources.Source, kind string) (sources.Stats, error) {
	ss, ok := src.(sources.StatsSource)
	if !ok {
		return sources.Stats{}, fmt.Errorf("status: source.kind %s cannot report the queue's state", kind)
	}
	st, err := ss.Stats(ctx)
	if err != nil {
		return st, fmt.Errorf("status: %w", err)
	}
	return st, nil
}

// StatusReport is the output of status --json; dead_letters is null when the
// source cannot tell, done when it cannot count them, throughput and eta
// when they were not measured; members is there only when
// limiter.share.mode is members or leases; worker only when a worker
// answered on the config's metrics.listen.
type StatusReport struct {
	Pending     int64            `json:"pending"`
	AckPending  int64            `json:"ack_pending"`
	Redelivered int64            `json:"redelivered"`
	DeadLetters *int64           `json:"dead_letters"`
	Done        *int64           `json:"done,omitempty"`
	Throughput  *float64         `json:"throughput_per_second,omitempty"`
	ETA         *float64         `json:"eta_seconds,omitempty"`
	Share       *run.MemberList  `json:"share,omitempty"`
	Worker      *run.WorkerState `json:"worker,omitempty"`
}

// printStatus prints the queue's state st, the drain's progress p and, when
// one answered, the state of the worker on metrics.listen ws.
func printStatus(w io.Writer, st sources.Stats, p drainProgress, asJSON bool, members *run.MemberList, ws *run.WorkerState) error {
	if asJSON {
		out := StatusReport{Pending: st.Pending, AckPending: st.AckPending, Redelivered: st.Redelivered, Share: members, Worker: ws}
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
		"unsettled (ack pending)", st.AckPending,
		"redelivered", st.Redelivered,
		"dead letters", dead,
		"done", done)
	if err == nil && ws != nil {
		_, err = fmt.Fprintf(w, "%-24s %s\n%s", "worker "+ws.ID, workerLine(ws, time.Now()), paceLines(ws.Pace()))
	}
	if err != nil || !p.measured {
		return err
	}
	eta := "unknown (" + strconv.FormatInt(st.AckPending, 10) + " unsettled, none done)"
	switch {
	case p.eta == 0:
		eta = "0s (drained)"
	case p.eta > 0:
		eta = FormatDuration(p.eta)
	case ws != nil && ws.Paused:
		eta = "unknown (paused)"
	}
	_, err = fmt.Fprintf(w, "%-24s %10s\n%-24s %10s\n", "throughput", strconv.FormatFloat(p.rate, 'f', 1, 64)+"/s", "eta", eta)
	return err
}

// workerLine says what the worker ws is doing at now: paused (until when)
// or running, and the jobs it holds.
func workerLine(ws *run.WorkerState, now time.Time) string {
	held := strconv.FormatInt(ws.InFlight, 10) + " in flight"
	if !ws.Paused {
		return "running, " + held
	}
	left := max(ws.PausedUntil.Sub(now), 0).Round(100 * time.Millisecond)
	return fmt.Sprintf("paused by the API until %s (%s left), %s", ws.PausedUntil.Local().Format(time.TimeOnly), FormatDuration(left), held)
}

// paceLines are the lines under a worker or a fleet: the rate it sends at
// beside the rate the API accepted, the limiter's estimate of what the API
// accepts, and the burst it can send at once (neither for a fleet), each
// indented.
func paceLines(p run.Pace) string {
	out := "  " + p.String() + "\n"
	if e := p.EstimateText(); e != "" {
		out += "  " + e + "\n"
	}
	if b := p.BurstText(); b != "" {
		out += "  " + b + "\n"
	}
	return out
}

// FormatDuration prints a duration in seconds with one decimal, or in whole
// seconds as 1h2m3s from 100 s on.
func FormatDuration(d time.Duration) string {
	if d < 100*time.Second {
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
	return d.Round(time.Second).String()
}
