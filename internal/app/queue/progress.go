package queue

import (
	"context"
	"time"

	"github.com/sluicehq/sluice/sources"
)

// The throughput and time left that `sluice status` shows come from the
// queue's own counters (sources.Stats.Done), so they count every worker
// draining the queue, wherever it runs.

// watchWindow is how far back --watch measures the throughput.
const watchWindow = 30 * time.Second

// statusSample is one reading of the queue.
type statusSample struct {
	at time.Time
	st sources.Stats
}

// drainProgress is the throughput between two readings and the time left
// at that speed.
type drainProgress struct {
	measured bool
	rate     float64       // jobs done per second
	eta      time.Duration // -1 when nothing is being done
}

// progressBetween measures the drain from first to last: the jobs done in
// between over the time between, and the jobs left at last (backlog and in
// flight) at that rate.
func progressBetween(first, last statusSample) drainProgress {
	dt := last.at.Sub(first.at)
	if dt <= 0 || first.st.Done < 0 || last.st.Done < 0 {
		return drainProgress{}
	}
	done := last.st.Done - first.st.Done
	p := drainProgress{measured: true, rate: float64(max(done, 0)) / dt.Seconds(), eta: -1}
	left := last.st.Pending + last.st.AckPending
	switch {
	case left == 0:
		p.eta = 0
	case p.rate > 0:
		p.eta = time.Duration(float64(left) / p.rate * float64(time.Second)).Round(time.Second)
	}
	return p
}

// measureStatus reads the queue and, when jobs are in flight (a worker is
// draining it), reads it again after interval to measure the throughput.
func measureStatus(ctx context.Context, read func(context.Context) (sources.Stats, error), interval time.Duration) (statusSample, drainProgress, error) {
	st, err := read(ctx)
	if err != nil {
		return statusSample{}, drainProgress{}, err
	}
	first := statusSample{at: time.Now(), st: st}
	if st.AckPending == 0 || st.Done < 0 {
		return first, drainProgress{}, nil
	}
	t := time.NewTimer(interval)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return first, drainProgress{}, nil
	case <-t.C:
	}
	if st, err = read(ctx); err != nil {
		return first, drainProgress{}, err
	}
	last := statusSample{at: time.Now(), st: st}
	return last, progressBetween(first, last), nil
}

// watchStatus reads the queue every interval until ctx ends, and hands
// each reading to emit with the throughput over the last watchWindow (or
// since the first reading, while that is shorter). It returns nil when ctx
// ends: the exit status then says which signal stopped it.
func watchStatus(ctx context.Context, read func(context.Context) (sources.Stats, error), interval time.Duration, emit func(statusSample, drainProgress) error) error {
	var window []statusSample
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		st, err := read(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		now := statusSample{at: time.Now(), st: st}
		window = append(window, now)
		for len(window) > 2 && now.at.Sub(window[1].at) >= watchWindow {
			window = window[1:]
		}
		var p drainProgress
		if len(window) > 1 {
			p = progressBetween(window[0], now)
		}
		if err := emit(now, p); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}
