package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/sluicehq/sluice/sources"
)

// drain follows the worker's drains: from the first message received
// after the queue was last seen empty (or since Run began) to the last job
// finished before it is next seen empty.
type drain struct {
	start    time.Time // first receipt of the current drain; zero: none
	finished int64     // jobs finished (succeeded or dead-lettered) before it
}

// finished returns the jobs finished so far: succeeded or dead-lettered.
func (w *Worker) finished() int64 {
	return w.stats.jobs[OutcomeSucceeded].Load() + w.stats.jobs[OutcomeDeadLettered].Load()
}

// received notes that messages arrived at now: a drain starts if none runs.
func (w *Worker) received(now time.Time) {
	if w.drain.start.IsZero() {
		w.drain = drain{start: now, finished: w.finished()}
	}
}

// empty reports whether the queue is empty and nothing is in flight, after
// a receive that returned nothing: the worker holds no job and, when the
// source can tell, the queue holds none either (no job waiting, none
// delivered and unsettled, to this worker or another, or handed back
// with a delay). A source that cannot tell counts as empty then. When a
// drain was running, empty logs "drained N jobs in T" and ends it. With no
// drain running and no ExitWhenEmpty there is nothing to do: it asks the
// source nothing and returns false.
func (w *Worker) empty(ctx context.Context, now time.Time) bool {
	if w.stats.inFlight.Load() != 0 || (w.drain.start.IsZero() && !w.cfg.ExitWhenEmpty) {
		return false
	}
	if qs, ok := w.deps.Source.(sources.StatsSource); ok {
		st, err := qs.Stats(ctx)
		if err != nil || st.Pending > 0 || st.AckPending > 0 {
			return false
		}
	}
	if !w.drain.start.IsZero() {
		if n := w.finished() - w.drain.finished; n > 0 {
			// The drain ended with its last job, not when the queue was
			// next seen empty (up to a receive's wait later).
			took := now.Sub(w.drain.start)
			if last := time.Unix(0, w.stats.lastFinished.Load()); last.After(w.drain.start) && last.Before(now) {
				took = last.Sub(w.drain.start)
			}
			w.log.Info(fmt.Sprintf("drained %d jobs in %s", n, took.Round(time.Millisecond)), "jobs", n, "took", took)
		}
		w.drain = drain{}
	}
	return true
}

// summary logs what the worker did since Run began at start.
func (w *Worker) summary(start, now time.Time) {
	s := w.Stats()
	args := []any{"ran", now.Sub(start), "received", s.Received}
	for o := range numOutcomes {
		args = append(args, o.String(), s.Jobs[o])
	}
	w.log.Info("worker summary", args...)
}
