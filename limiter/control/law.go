package control

import (
	"math"
	"time"
)

// The adaptive law (docs/limiter.md, "The adaptive law"): one model of the
// API's capacity and one rate. The API is taken to accept about C units
// per window W. The law keeps what the API was seen to accept (bound) and
// the upper bound a refusal set (ceil), paces at lawMargin of the bound, and
// probes above it with steps proportional to the rate, less often while
// probes find nothing more.

// The law's constants; docs/limiter.md has them in one table.
const (
	startupInterval = 2 * time.Second        // startup doubles the rate this often
	probeMaxFactor  = 16                     // the probe interval grows to this many times its base
	probeStep       = 0.02                   // a probe's step, a fraction of the ceil
	sameBound       = 0.05                   // a cut at most this fraction above the bound finds nothing new (and a startup estimate this close to half the rate is no measure; a refusal above the pace this close to the measure halves the bracket; a climb across a wide bracket of a window shown steps by this much; an echo's lag leaves out at most this fraction of a startup's units),
	sameDrop        = 0.25                   // nor one at most this fraction below it: noise, not a new capacity
	wideBracket     = 1.5                    // a ceil above this many times the bound and the rate is climbed to every climbHold, or, once a window was shown, every max(climbHold, W) by sameBound steps; a nearer one every max(climbHold, W)
	jitterUnits     = 10000                  // a refusal at the bound this many units' time after the last cut or such refusal is one burst or jitter
	moreSpan        = 16 * time.Second       // the least span that can show more capacity
	longestSpan     = 128 * time.Second      // the longest power-of-two span the estimate tries
	binWidth        = 250 * time.Millisecond // the tally's resolution
	binCount        = 1024                   // the tally's length: 256 s
)

// lawMargin is the fraction of the bound the law paces at.
const lawMargin = 0.98

// usedRate is the fraction of the rate that must have been sent over the
// last startupInterval for a raise above it.
const usedRate = 0.9

// climbHold is the least hold of a step of the climb back toward the
// ceil, and the least time a window's echo of an overshoot lasts.
const climbHold = 4 * time.Second

// probeBase is the least probe interval: a probe holds at least the span
// over which the API can show more capacity.
const probeBase = moreSpan

// longestHold is the longest probe interval the law sets (W is at most
// MaxWindow).
const longestHold = max(probeMaxFactor*probeBase, 4*MaxWindow)

// LawRetryAfter is the pause for a refusal naming no wait; restarts double it.
const LawRetryAfter = 250 * time.Millisecond

// RefusalWait returns the wait a refusal with the Retry-After ra asks
// for under the law: ra, or LawRetryAfter when it names none (0 or less),
// since a 429 says slow down even without a wait.
func RefusalWait(ra time.Duration) time.Duration {
	if ra <= 0 {
		return LawRetryAfter
	}
	return ra
}

// Law is the adaptive rule's state: a pure function of the grants, answers
// and refusals it is told about, with time as an argument (an offset from
// the start of the instance, or of the decision for a fleet). It is not
// safe for concurrent use. Use NewLaw; the zero Law is not usable.
type Law struct {
	// Every grant writes lastSent and a bin of past.sent, and reads from
	// and past.last: they come first, on the cache line of the first bins.
	from     time.Duration // the start of the span the next refusal measures; -1: none
	lastSent time.Duration
	learn    learning // what the next refusal learns of W
	past     tally

	min, max float64          // the rate's limits for this part of the budget
	cubic    bool             // probes follow x³/16, not x
	lawState                  // what a fleet shares
	refs     [4]time.Duration // the sends of the last refusals, newest first; -1: none
}

// lawState is the part of the law that a fleet shares (LawState): all of
// it but the instance's record of its own sending.
type lawState struct {
	rate    float64       // the pacing rate, units per minute
	startup bool          // doubling; no refusal yet
	moved   time.Duration // the last raise or cut
	probes  int           // probes since the last cut
	hold    time.Duration // the probe interval

	bound float64       // what the API was seen to accept, units per minute; 0: nothing yet
	ceil  float64       // the upper bound the last cutting refusal set: its rate, or on the climb the middle of it and the bound
	cut   time.Duration // when the last cut was; refusals of requests sent before it belong to it
	open  time.Duration // when the API said, at the last cut, it would take more; refusals of requests sent before it belong to that cut too

	noise  time.Duration // the last cut, or refusal at the bound that the API was seen to accept (its echo, or jitter)
	window time.Duration // W: the API's memory, learned at the first refusal after an idle start
	wfrom  windowSource  // where W came from
}

// refusal is what one refusal measured: when its request was sent, the
// Retry-After (LawRetryAfter when none was named), what the API accepted
// per minute over the best span (ok: some span was long enough), the
// window it shows (0: none), and whether this part sent at most its pace,
// lawMargin × bound, over the max(climbHold, W) before, W as the refusal
// leaves it (paced: then the refusal is no echo of its own overshoot; not
// known for a fleet's report).
type refusal struct {
	sent, retryAfter time.Duration
	accepted         float64
	ok, paced        bool
	window           time.Duration
}

// NewLaw returns the law of cfg in startup at rate, within the limits lo
// and hi of this part of the budget.
func NewLaw(cfg Config, rate, lo, hi float64) *Law {
	l := &Law{min: lo, max: hi, cubic: cfg.Controller == ControllerCUBIC, from: -1, refs: noRefs,
		lawState: lawState{rate: rate, startup: true, hold: probeBase, noise: never, open: never, window: cfg.Window, wfrom: fromRefusal}}
	if cfg.Window > 0 {
		l.wfrom = fromConfig
	}
	return l
}

var noRefs = [4]time.Duration{-1, -1, -1, -1}

// never is a time long before any: the law's "not yet".
const never = time.Duration(math.MinInt64 / 4)

func perMin(units float64, span time.Duration) float64 {
	if span <= 0 {
		return 0
	}
	return units / span.Seconds() * 60
}

func (l *Law) clamp(r float64) float64 { return math.Min(l.max, math.Max(l.min, r)) }

// Sent records a grant of u units at t; idle says the bucket was full and
// nobody waited. Sending after an idle gap longer than a second (or four
// units' time at the rate) starts a new span: the API's memory of the
// time before it is not the limiter's to measure. The record of the last
// refusals goes with it.
func (l *Law) Sent(t time.Duration, u float64, idle bool) {
	gap := (t - l.lastSent).Seconds() // in seconds: four units at a tiny rate overflow a Duration
	if l.from < 0 || idle && gap > 1 && gap > 4/l.rate*60 {
		l.from, l.learn, l.refs = t, learnFirst, noRefs
	}
	l.lastSent = t
	l.past.addSent(t, u)
}

// Accepted records that the API accepted u units of a request sent at sent.
func (l *Law) Accepted(sent time.Duration, u float64) { l.past.addAcc(sent, u) }

// beyond returns how much longer than a second a Retry-After of ra says
// the API takes nothing, within MaxWindow, the longest window the law
// models: an absurd Retry-After must not read as an API that accepts
// nothing.
func (l *Law) beyond(ra time.Duration) time.Duration {
	return max(min(ra, MaxWindow)-time.Second, 0)
}

// estimate returns what the API accepted, per minute, over the best span
// ending at sent, each span stretched by the Retry-After beyond a second
// (the API said it takes no more until then): spans back from sent of 1,
// 2, 4, … seconds within the current span; the span itself; the spans
// from the last refusals' sends, when the API was full; and one window
// back from when the API has room again, since a window API accepts
// exactly its quota per window. A span's length is its sending time: the
// last cut's pause, when the limiter sent nothing by its own choice, is
// taken out. Spans shorter than the window are not tried. ok is false
// when no span is.
func (l *Law) estimate(sent, ra time.Duration) (a float64, ok bool) {
	extra := l.beyond(ra)
	try := func(from time.Duration) {
		d := sent - from
		if from < l.cut && l.from > l.cut && l.from <= sent {
			d -= l.from - l.cut // the last cut's pause: the limiter sent nothing then
		}
		if from < 0 || d < max(time.Second, l.window-extra) {
			return
		}
		a, ok = math.Max(a, perMin(l.past.sum(&l.past.acc, from, sent), d+extra)), true
	}
	for d := time.Second; d <= longestSpan && sent-d >= l.from; d *= 2 {
		try(sent - d)
	}
	try(l.from)
	for _, r := range l.refs {
		try(r)
	}
	if W := l.window; W >= 2*time.Second {
		// Its sending time is W − the wait beyond a second; one under a
		// second is not tried (nothing to read), nor, at an idle start's
		// first refusal, one reaching back past that start.
		if from := sent + extra - W; from >= 0 && sent-from >= time.Second && (l.learn != learnFirst || from >= l.from) {
			a, ok = math.Max(a, perMin(l.past.sum(&l.past.acc, from, sent), W)), true
		}
	}
	return a, ok
}

// Refused applies a refusal at t of a request sent at sent, with the
// Retry-After ra (0 or less: none, read as LawRetryAfter), after which
// the limiter sends again at resume (the end of the pause it keeps). It
// returns whether the rate changed.
func (l *Law) Refused(t, sent, ra, resume time.Duration) bool {
	if sent < l.open { // open is never before cut
		// One of the refusals the last cut answered, or a request sent
		// before the API said it would take more (a pause shorter than
		// its Retry-After, capped by max_pause): the same overshoot.
		return false
	}
	ra = RefusalWait(ra)
	if !l.decide(t, l.measure(sent, ra)) {
		return false
	}
	l.afterCut(sent, resume)
	return true
}

// MeasureRefusal returns what the record measured for a refusal of a
// request sent at sent with the Retry-After ra (0 or less: none, read as
// LawRetryAfter), for a fleet that decides the cut: what the API accepted
// per minute of this part over the best span, -1 when no span was long
// enough or the request was sent before the API said, at the last cut, it
// would take more (one of the refusals that cut answered); and the window
// the refusal shows, 0 for none. It changes no rate; a refusal measured
// ends the first one after an idle start, as with Refused.
func (l *Law) MeasureRefusal(sent, ra time.Duration) (accepted float64, window time.Duration) {
	if sent < l.open {
		return -1, 0
	}
	m := l.measure(sent, RefusalWait(ra))
	if !m.ok {
		return -1, 0 // no window either: one is measured only with a span
	}
	return m.accepted, m.window
}

// ReportedRefusal applies, for a fleet, a refusal that a worker reported:
// the law's offsets are from now, the time of the decision (Load's base).
// Its request was sent at sent, with the Retry-After ra (0 or less: none,
// read as LawRetryAfter); accepted is what the API was measured to accept
// per minute (0 or less, or not finite: no measure) and window the window
// the refusal showed (0: none), which counts only at the first refusal,
// in startup, and is capped at MaxWindow like a learned one. It returns
// whether the rate was cut.
func (l *Law) ReportedRefusal(now, sent time.Time, ra time.Duration, accepted float64, window time.Duration) bool {
	m := refusal{sent: offset(now, sent), retryAfter: RefusalWait(ra)}
	if accepted > 0 && !math.IsInf(accepted, 0) {
		m.accepted, m.ok = accepted, true
	}
	if l.startup && window > 0 {
		m.window = min(window, MaxWindow)
	}
	return l.decide(0, m)
}

// FollowCut starts the next span at resume, after a cut a fleet decided:
// the request of its refusal was sent at full (the zero time: not known),
// when the API was full, with offsets from base.
func (l *Law) FollowCut(base, full time.Time, resume time.Duration) {
	l.afterCut(offset(base, full), resume)
}

// measure reads the record for a refusal of a request sent at sent with
// the Retry-After ra: what the API accepted (estimate) and, at the first
// refusal after an idle start, the window: the time since sending began,
// and the wait beyond a second. The next refusal checks that W by its
// echo.
func (l *Law) measure(sent, ra time.Duration) refusal {
	m := refusal{sent: sent, retryAfter: ra}
	l.falsify(sent)
	if l.learn == learnEcho {
		l.echo(sent)
	}
	// Read over the W this refusal leaves: one its echo showed shorter, or
	// none when it forgot W. A longer one can reach back into a slow
	// startup and read an overshoot as pacing.
	if span := max(climbHold, l.window); sent >= span {
		m.paced = perMin(l.past.sum(&l.past.sent, sent-span, sent), span) <= lawMargin*l.bound
	}
	m.accepted, m.ok = l.estimate(sent, ra)
	next := learnNone
	if m.ok && l.learn == learnFirst {
		m.window = min(sent-l.from+l.beyond(ra), MaxWindow)
		next = learnEcho
	}
	l.learn = next
	return m
}

// afterCut starts the next span at resume, after a cut by a refusal of a
// request sent at sent: the API was full then.
func (l *Law) afterCut(sent, resume time.Duration) {
	copy(l.refs[1:], l.refs[:])
	l.refs[0] = sent
	l.from = resume
}

// decide applies a refusal at t that measured m to the shared state, and
// returns whether it cut the rate.
func (l *Law) decide(t time.Duration, m refusal) bool {
	if m.sent < l.open {
		return false // see Refused
	}
	if m.window > 0 && l.wfrom.learned() {
		l.window, l.wfrom = m.window, fromRefusal
	}
	prev, a := l.rate, m.accepted
	switch {
	case !m.ok && l.bound > 0:
		a = l.bound
	case !m.ok:
		a = prev / 2
	}
	c, ceil := prev, prev
	switch {
	case l.startup && a < (1-sameBound)*prev/2:
		// The API accepted clearly less than half the rate: a measure.
		// Within sameBound of half, it took what was sent before the last
		// doubling, and the capacity is anywhere up to the rate.
		c, ceil = a, a
	case l.startup:
		c = prev / 2 // the rate before the last doubling
	case a < 0.99*prev && prev > lawMargin*l.bound*1.001 && prev < lawMargin*l.ceil*0.995:
		// Refused climbing back toward the ceil: the API took the bound,
		// and a span's average over the climb understates it. The
		// capacity lies between the bound and the rate refused: the ceil
		// comes down to their middle, so that each refusal on the climb
		// halves the bracket.
		c = math.Max(a, l.bound)
		ceil = (c + prev) / 2
	case a < 0.99*prev:
		// Refused above what the API accepted. Above the pace (the
		// climb's top, or a probe) and within sameBound of a, the
		// capacity lies in that narrow bracket: the ceil comes down to
		// its middle, as on the climb, or the climb back would end above
		// the capacity again.
		c = a
		if prev > lawMargin*l.bound*1.001 && a >= (1-sameBound)*prev {
			ceil = (a + prev) / 2
		}
	case prev > lawMargin*l.bound*1.001:
		c = math.Min(l.bound, prev) // refused while probing: back below the bound
	case t-l.cut < max(climbHold, l.window) && !m.paced || (t-l.noise).Seconds() >= jitterUnits/prev*60:
		// Refused at the bound, with the API seen to accept the rate:
		// a window's echo of this part's overshoot, or one burst or
		// jitter, the first since the last cut or such refusal for
		// jitterUnits of sending at the rate. The pause is all.
		l.noise = t
		return false
	}
	l.noise = t
	base := max(probeBase, l.window)
	if l.bound > 0 && c <= (1+sameBound)*l.bound && c >= (1-sameDrop)*l.bound {
		l.hold = min(max(2*l.hold, base), max(probeMaxFactor*probeBase, 4*base))
	} else {
		l.hold = base
	}
	l.bound, l.ceil = c, ceil
	l.startup = false
	l.rate = l.clamp(lawMargin * c)
	l.cut, l.moved, l.probes = t, t, 0
	l.open = t + min(max(m.retryAfter, 0), MaxWindow)
	return true
}

// view is what a raise reads of the record, per minute of this part: what
// the API accepted over the last max(moreSpan, W) (got; -1 when the span
// reaches back before the current one) and what was sent over the last
// startupInterval (sent; -1 before the first).
type view struct{ got, sent float64 }

// viewer gives the view at t: the law's own record, or (for a fleet) what
// a worker saw (*view).
type viewer interface{ view(t time.Duration) view }

func (v *view) view(time.Duration) view { return *v }

func (l *Law) view(t time.Duration) view {
	v := view{got: -1, sent: -1}
	if span := max(moreSpan, l.window); t-span >= l.from {
		v.got = perMin(l.past.sum(&l.past.acc, t-span, t), span)
	}
	v.sent = l.SentRate(t)
	return v
}

// SentRate returns what was sent over the last startupInterval before t,
// per minute of this part; -1 before the first.
func (l *Law) SentRate(t time.Duration) float64 {
	if t < startupInterval {
		return -1
	}
	return perMin(l.past.sum(&l.past.sent, t-startupInterval, t), startupInterval)
}

// Raise is called at t when a request that waited was accepted, with the
// law's own record. It returns whether the rate changed.
func (l *Law) Raise(t time.Duration) bool { return l.raise(t, l) }

// RaiseOn is Raise with what a worker saw instead of the law's record:
// got, what the API accepted lately (-1 or not finite: not known), and
// sent, what was sent over the last 2 s (the same), per minute of this
// part. In startup the doubling goes no higher than limit (+Inf or NaN:
// no limit); a limit below the rate does not lower it.
func (l *Law) RaiseOn(t time.Duration, got, sent, limit float64) bool {
	finite := func(x float64) float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return -1 // not known: a sum of absurd reports is no measure
		}
		return x
	}
	if math.IsNaN(limit) {
		limit = math.Inf(1)
	}
	v := &view{got: finite(got), sent: finite(sent)}
	if l.startup {
		return l.double(t, v, limit)
	}
	return l.raise(t, v)
}

// raise is called at t when a request that waited was accepted; rec gives
// what the record shows then. It returns whether the rate changed.
func (l *Law) raise(t time.Duration, rec viewer) bool {
	if l.startup {
		return l.double(t, rec, math.Inf(1))
	}
	climbing := l.rate < lawMargin*l.ceil*0.995
	hold := l.hold
	if climbing {
		// A wide bracket (startup's halving) is crossed fast; in a narrow
		// one, once the rate is near the ceil, or when the echo showed a
		// window, each step waits a window, so that the API has seen it
		// before the next: a window refuses late.
		hold = climbHold
		if l.wfrom == fromEcho || !l.wide() {
			hold = max(climbHold, l.window)
		}
	}
	if t-l.moved < hold {
		return false
	}
	v := rec.view(t)
	if v.sent >= 0 && v.sent < usedRate*l.rate {
		// The demand does not fill the rate: a higher one would test
		// nothing, and the API has not been seen to accept this one.
		return false
	}
	// W is weighed only at a raise that goes ahead: a success that finds
	// the rate unused costs no more than the view.
	if w := l.window; w > 0 {
		if l.falsify(t); l.window != w {
			v = rec.view(t) // what the API accepted, over the span without W
		}
	}
	// What the API accepted lately, when it is more than the bound, moves
	// the bound up and restarts the probes from it: above a ceiling it
	// passed, the ceiling too (a refusal there is out of date).
	if got := v.got; got > (1+probeStep)*l.bound {
		l.bound, l.probes, l.hold = got, 0, max(probeBase, l.window)
		l.ceil = math.Max(l.ceil, got)
	}
	if hold >= l.window {
		// The API took the rate for a window. A shorter hold shows nothing
		// of a window's capacity: a window refuses late.
		l.bound = math.Max(l.bound, l.rate)
	}
	var next float64
	if climbing {
		next = math.Min(lawMargin*l.ceil, math.Min(1.25*l.rate, (l.rate+l.ceil)/2))
		if l.wfrom == fromEcho && l.wide() {
			// A window refuses late, far above what it counts: once one
			// was shown, a ceil this far above is an overshoot it let
			// through, and the bound its count over W, good to sameBound.
			// Each step tests that much more.
			next = math.Min(next, (1+sameBound)*l.rate)
		}
	} else {
		l.probes++
		x := float64(l.probes)
		f := x
		if l.cubic {
			f = x * x * x / 16
		}
		next = l.ceil * (lawMargin + probeStep*f)
	}
	next = l.clamp(math.Max(next, l.rate))
	l.moved = t
	if next <= l.rate {
		return false
	}
	l.rate = next
	return true
}

// wide reports whether the ceil is wideBracket or more above the bound and
// the rate: startup's halving, or an overshoot a window let through.
func (l *Law) wide() bool { return l.ceil >= wideBracket*math.Max(l.bound, l.rate) }

// double is startup's raise: ×2 every startupInterval, at most twice what
// was sent in the last interval, so the rate does not run ahead of the
// demand, and at most limit.
func (l *Law) double(t time.Duration, rec viewer, limit float64) bool {
	if t-l.moved < startupInterval {
		return false
	}
	next := 2 * l.rate
	if sent := rec.view(t).sent; sent >= 0 {
		next = math.Min(next, 2*sent)
	}
	next = math.Min(next, limit)
	l.moved = t
	if next = l.clamp(next); next <= l.rate {
		return false
	}
	l.rate = next
	return true
}

// Rescale scales the law's rates by f when the instance's part of the
// budget changes, with the part's new limits. The record is scaled too:
// what the API accepted of the old part is what it would have accepted of
// the new one, so that the spans across the change measure the new part.
func (l *Law) Rescale(f, lo, hi float64) {
	l.min, l.max = lo, hi
	l.rate = l.clamp(l.rate * f)
	l.bound *= f
	l.ceil *= f
	for i := range l.past.sent {
		l.past.sent[i] *= f
		l.past.acc[i] *= f
	}
}

// Limits sets the rate's limits for this part of the budget.
func (l *Law) Limits(lo, hi float64) {
	l.min, l.max = lo, hi
	l.rate = l.clamp(l.rate)
}

// Quota applies a limit the API announced at t, q units per minute for
// this part: it is what the API accepts, so it is both bounds and the
// rate, and the probes above it are clamped by the limits.
func (l *Law) Quota(t time.Duration, q float64) {
	l.startup = false
	l.bound, l.ceil = q, q
	l.rate = l.clamp(q)
	l.moved, l.probes = t, 0
}
