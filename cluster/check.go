package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// Shared state is input. What a worker reads from a bucket was written by
// another process: another version, a worker whose clock is wrong, or a
// person with the nats CLI. Every read is checked here against what each
// value means, before any rule uses it; a value that breaks its rule is
// replaced by the nearest one that keeps it (or by "none"), and the state
// is rewritten at the next write.

// Bounds of shared state as a reader judges it.
const (
	// maxSkew is how far ahead of the reader's clock a time that a
	// writer took from its own clock may be: clocks of the same fleet
	// agree within it.
	maxSkew = 5 * time.Second
	// rateFactor: a rate that rose above rateFactor times what the fleet
	// was measured to accept (or the initial rate, if more) was not
	// reached by the rules, which raise from what the API accepts...
	rateFactor = 10
	// ...unless it is within raiseFactor of the rate held before: one
	// raise of the rules at most doubles the rate (startup).
	raiseFactor = 2
	// maxHold bounds the adaptive law's probe interval: longer than any
	// the law sets.
	maxHold = time.Hour
	// maxProbes bounds the law's count of probes since a cut.
	maxProbes = 1 << 20
)

// problem is one value of shared state that broke its rule.
type problem struct {
	field string // its name in the JSON of the state
	why   string
}

func (p problem) String() string { return p.field + ": " + p.why }

// reading is what a worker knows when it reads the fleet state.
type reading struct {
	now time.Time      // the reader's clock
	cfg limiter.Config // the budget's limiter options
	// accepted is the units the API accepted from the whole fleet in the
	// last minute, from the heartbeats; 0 when not known.
	accepted float64
	// held is the rate of the last state this worker took; 0 for none.
	// A rate no higher was checked when it was reached.
	held float64
}

// decodeFleetState decodes a stored fleet state. A literal null, an empty
// value and anything that is not a JSON object of the state are no state
// (false).
func decodeFleetState(data []byte) (fleet.State, error) {
	var s fleet.State
	data = bytes.TrimSpace(data)
	if len(data) == 0 || data[0] != '{' {
		return s, fmt.Errorf("not a JSON object: %.32q", data)
	}
	if err := json.Unmarshal(data, &s); err != nil {
		return s, err
	}
	return s, nil
}

// checkFleetState returns s as the reader r may use it, and what broke its
// rule (nothing: s is returned as it is). The rules, by meaning:
//   - A time that a writer took from its clock (when it wrote the state,
//     cut, moved the rate) is not after r.now + maxSkew; later, it is
//     r.now. The law's open (when the API said it takes more) is at most
//     the longest window the law models ahead.
//   - The end of the fleet's pause is at most max_pause (+ maxSkew) after
//     r.now; later, no writer's rules set it, and there is no pause.
//   - A rate is a finite number in [min, max], and at most rateFactor
//     times what the fleet was measured to accept (the law's estimate, the
//     fleet's last minute) or the initial rate, whichever is more, unless
//     it is within raiseFactor of the rate r.held.
//   - An estimate (the law's bound and ceil) is finite and in [0,
//     rateFactor × max]; a count or a duration (probes, the probe
//     interval, W, CUBIC's K) is finite, not negative and within its own
//     bound; W's source is one the law names.
//   - With the adaptive law (slow_start) the state has the law's part
//     (without, the law goes on from the rate); with the classic rules it
//     has none.
func checkFleetState(s fleet.State, r reading) (fleet.State, []problem) {
	var ps []problem
	bad := func(field, format string, args ...any) { ps = append(ps, problem{field, fmt.Sprintf(format, args...)}) }
	past := func(field string, t *time.Time) {
		if t.After(r.now.Add(maxSkew)) {
			bad(field, "%s is %v ahead of this worker's clock", t.Format(time.RFC3339), t.Sub(r.now).Round(time.Second))
			*t = r.now
		}
	}
	past("seen", &s.Seen)
	past("last_cut", &s.LastCut)
	past("inc_clock", &s.IncClock)
	past("cut_time", &s.CutTime)
	if end := r.now.Add(r.cfg.MaxPause + maxSkew); s.PausedUntil.After(end) {
		bad("paused_until", "%s is %v ahead, more than max_pause %v", s.PausedUntil.Format(time.RFC3339), s.PausedUntil.Sub(r.now).Round(time.Second), r.cfg.MaxPause)
		s.PausedUntil = time.Time{}
	}
	hi := r.cfg.MaxUnitsPerMinute
	estimate := 0.0
	switch adaptive := r.cfg.SlowStart && !r.cfg.Disabled; {
	case adaptive && s.Law == nil:
		bad("law", "none, while slow_start is on (a worker alone wrote only its rate, or an older version): the law goes on from the rate")
	case !adaptive && s.Law != nil:
		bad("law", "present, while slow_start is off")
		s.Law = nil
	}
	if s.Law != nil {
		l := *s.Law
		checkLaw(&l, r, bad, past)
		estimate = l.Bound
		s.Law = &l
	}
	check := func(field string, rate *float64) {
		lo := r.cfg.MinUnitsPerMinute
		measured := max(estimate, r.accepted, r.cfg.InitialUnitsPerMinute)
		limit := max(rateFactor*measured, raiseFactor*r.held)
		switch {
		case math.IsNaN(*rate):
			bad(field, "NaN")
			*rate = r.cfg.InitialUnitsPerMinute
		case *rate < lo || *rate > hi && hi <= limit:
			bad(field, "%v is outside [min %v, max %v]", *rate, lo, hi)
			*rate = min(max(*rate, lo), hi)
		case *rate > limit:
			bad(field, "%v is more than %d times what the fleet was measured to accept (%v) and %d times the rate before (%v)",
				*rate, rateFactor, measured, raiseFactor, r.held)
			*rate = max(min(limit, hi), lo)
		}
	}
	check("rate", &s.Rate)
	if s.Law != nil {
		check("law.rate", &s.Law.Rate)
		s.Rate = s.Law.Rate
	}
	if !finite(s.WMax) || s.WMax < 0 || s.WMax > hi {
		bad("w_max", "%v is not a rate in [0, max %v]", s.WMax, hi)
		s.WMax = s.Rate
	}
	if kMax := cubicKMax(r.cfg); !finite(s.K) || s.K < 0 || s.K > kMax {
		bad("k", "%v is not a time in [0, %v] s", s.K, kMax)
		s.K = 0
	}
	return s, ps
}

// checkLaw applies checkFleetState's rules to the law's part of a state.
func checkLaw(l *control.LawState, r reading, bad func(field, format string, args ...any), past func(string, *time.Time)) {
	past("law.moved", &l.Moved)
	past("law.cut", &l.Cut)
	past("law.noise", &l.Noise)
	past("law.full", &l.Full)
	if end := r.now.Add(control.MaxWindow + maxSkew); l.Open.After(end) {
		bad("law.open", "%s is %v ahead, more than the longest window %v", l.Open.Format(time.RFC3339), l.Open.Sub(r.now).Round(time.Second), control.MaxWindow)
		l.Open = r.now
	}
	top := rateFactor * r.cfg.MaxUnitsPerMinute
	if !finite(l.Bound) || l.Bound < 0 || l.Bound > top {
		bad("law.bound", "%v is not a rate in [0, %v]", l.Bound, top)
		l.Bound = 0
	}
	if !finite(l.Ceil) || l.Ceil < 0 || l.Ceil > top {
		bad("law.ceil", "%v is not a rate in [0, %v]", l.Ceil, top)
		l.Ceil = l.Bound
	}
	if l.Probes < 0 || l.Probes > maxProbes {
		bad("law.probes", "%d is not in [0, %d]", l.Probes, maxProbes)
		l.Probes = 0
	}
	if l.Hold < 0 || l.Hold > maxHold {
		bad("law.hold", "%v is not in [0, %v]", l.Hold, maxHold)
		l.Hold = 0
	}
	if l.Window < 0 || l.Window > control.MaxWindow {
		bad("law.window", "%v is not in [0, %v]", l.Window, control.MaxWindow)
		l.Window = 0
	}
	if !control.ParseWindowSource(l.From) {
		bad("law.window_from", "%q is none of refusal, echo, headers, config", l.From)
		l.From = "refusal"
	}
}

// cubicKMax is the largest K that CUBIC's rule sets: the K of a cut at max.
func cubicKMax(cfg limiter.Config) float64 {
	if !(cfg.CUBIC.ScaleConstant > 0) {
		return math.MaxFloat64
	}
	return math.Cbrt(cfg.MaxUnitsPerMinute * (1 - cfg.CUBIC.Beta) / cfg.CUBIC.ScaleConstant)
}

// checkMember returns the heartbeat v as a reader at now may use it, and
// what broke its rule. stored is when the server stored it: the writer's
// clock is measured against it (Member.Skew). A time that the writer took
// from its clock to tell when its requests waited is not after now +
// maxSkew (later: never); rates and counts are finite and not negative; a
// share is at most 1.
func checkMember(v Member, stored, now time.Time) (Member, []problem) {
	var ps []problem
	bad := func(field, format string, args ...any) { ps = append(ps, problem{field, fmt.Sprintf(format, args...)}) }
	v.Skew = 0 // the reader's measure, never the writer's word
	if !stored.IsZero() && !v.Refreshed.IsZero() {
		v.Skew = v.Refreshed.Sub(stored)
	}
	if v.Waited.After(now.Add(maxSkew)) {
		bad("waited", "%s is %v ahead of this worker's clock", v.Waited.Format(time.RFC3339), v.Waited.Sub(now).Round(time.Second))
		v.Waited = time.Time{}
	}
	for _, f := range []struct {
		name string
		v    *float64
		hi   float64
	}{{"rate", &v.Rate, math.MaxFloat64}, {"share", &v.Share, 1}, {"accepted", &v.Accepted, math.MaxFloat64}} {
		if !finite(*f.v) || *f.v < 0 || *f.v > f.hi {
			bad(f.name, "%v is not a number in [0, %v]", *f.v, f.hi)
			*f.v = 0
		}
	}
	if v.Leases < 0 {
		bad("leases", "%d is negative", v.Leases)
		v.Leases = 0
	}
	return v, ps
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// inputLog reports invalid shared state: at warn the first time each
// value of each key breaks its rule (not at every read), at debug after
// that, and counted every time.
type inputLog struct {
	log     *slog.Logger
	metrics *Metrics

	mu     sync.Mutex
	warned map[string]bool
}

func newInputLog(s settings) *inputLog {
	return &inputLog{log: s.log, metrics: s.metrics, warned: map[string]bool{}}
}

// report reports the problems of key's state (kind "fleet" or "member"),
// and what is done about them.
func (l *inputLog) report(kind, key string, ps []problem, done string) {
	for _, p := range ps {
		l.metrics.invalidState(kind, p.field)
		l.mu.Lock()
		first := !l.warned[kind+"."+p.field]
		l.warned[kind+"."+p.field] = true
		l.mu.Unlock()
		level := slog.LevelDebug
		if first {
			level = slog.LevelWarn
		}
		l.log.Log(context.Background(), level, "cluster: invalid shared state ignored",
			"key", key, "field", p.field, "problem", p.why, "action", done)
	}
}
