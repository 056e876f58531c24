package worker

import (
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/call"
)

// FailureLogInterval is the least time between two warn lines about the
// target's failures of one kind (network errors, 5xx): the first failure
// of a kind is logged at once, later ones are counted and the count goes
// into the next line due.
const FailureLogInterval = 30 * time.Second

// TargetHealth says whether the target has failed every call lately. A
// call fails when it gets no answer (a network error or a timeout) or a 5xx
// that is not a throttle; any other answer (a success, a 4xx, a throttle)
// shows the target up and ends the run of failures.
type TargetHealth struct {
	// FailingSince is when the first of the calls that failed in a row
	// ended; zero when the last call was answered, or before any call.
	FailingSince time.Time
	// Failures counts the calls that failed in a row.
	Failures int64
}

// Down reports whether, at now, the target has failed every call for at
// least after (and after > 0).
func (h TargetHealth) Down(now time.Time, after time.Duration) bool {
	return after > 0 && !h.FailingSince.IsZero() && now.Sub(h.FailingSince) >= after
}

// failureKinds are the outcomes that count as a failure of the target, and
// the index of each in targetHealth.kinds.
var failureKinds = [...]call.Kind{call.NetworkError, call.ServerError}

func failureIndex(k call.Kind) int {
	for i, f := range failureKinds {
		if f == k {
			return i
		}
	}
	return -1
}

// targetHealth tracks the target's failures: the run of failed calls
// (TargetHealth) and, per kind, what the next warn line reports.
type targetHealth struct {
	// failing is set while a run of failures lasts, so that an answer
	// from a healthy target (the common case, on every call) takes no
	// lock.
	failing atomic.Bool

	mu    sync.Mutex
	state TargetHealth
	kinds [len(failureKinds)]failureLog
}

// failureLog is one kind's failures since its last warn line.
type failureLog struct {
	logged time.Time // when the last line was written; zero: never
	count  int64     // failures not yet reported
	status int
	err    error
}

// healthNote is a line the worker logs about the target.
type healthNote struct {
	recovered bool // "target answering again"; else "target failing"
	kind      call.Kind
	count     int64 // failures of kind since the last line (failing), or in the run (recovered)
	status    int
	err       error
	failingAt time.Time // start of the run of failures
	now       time.Time
}

// observe records the outcome of a call that ended at now and returns the
// line due, if any: a warn line for a failure when FailureLogInterval has
// passed since the last line of its kind (or there was none), an info line
// when an answer ends a run of failures that lasted at least
// FailureLogInterval.
func (h *targetHealth) observe(now time.Time, k call.Kind, status int, err error) (healthNote, bool) {
	i := failureIndex(k)
	if i < 0 && !h.failing.Load() {
		return healthNote{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if i < 0 {
		run := h.state
		h.state = TargetHealth{}
		h.failing.Store(false)
		if run.FailingSince.IsZero() || now.Sub(run.FailingSince) < FailureLogInterval {
			return healthNote{}, false
		}
		return healthNote{recovered: true, kind: k, status: status, count: run.Failures, failingAt: run.FailingSince, now: now}, true
	}
	if h.state.FailingSince.IsZero() {
		h.state.FailingSince = now
		h.failing.Store(true)
	}
	h.state.Failures++
	l := &h.kinds[i]
	l.count++
	l.status, l.err = status, err
	if !l.logged.IsZero() && now.Sub(l.logged) < FailureLogInterval {
		return healthNote{}, false
	}
	n := healthNote{kind: k, count: l.count, status: l.status, err: l.err, failingAt: h.state.FailingSince, now: now}
	l.logged, l.count, l.err = now, 0, nil
	return n, true
}

func (h *targetHealth) snapshot() TargetHealth {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.state
}

// log writes the note: failures at warn level, a recovery at info level.
// failing_for is the time since the run of failures began (0 when the call
// before this one was answered).
func (n healthNote) log(log *slog.Logger) {
	if n.recovered {
		log.Info("target answering again", "failures", n.count, "failed_for", n.now.Sub(n.failingAt), "status", n.status)
		return
	}
	args := []any{"result", n.kind.String(), "count", n.count, "failing_for", n.now.Sub(n.failingAt)}
	if n.status != 0 {
		args = append(args, "status", n.status)
	}
	if n.err != nil {
		args = append(args, "err", n.err)
	}
	log.Warn("target failing", args...)
}
