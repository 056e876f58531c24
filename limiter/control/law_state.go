package control

import "time"

// What is read of the law, and the part of it a fleet shares (LawState).

// Rate returns the pacing rate, units per minute of this part.
func (l *Law) Rate() float64 { return l.rate }

// Startup reports whether the law is in startup: doubling, no refusal yet.
func (l *Law) Startup() bool { return l.startup }

// Bound returns what the API was seen to accept, units per minute of this
// part; 0 before the first refusal or quota.
func (l *Law) Bound() float64 { return l.bound }

// Open returns when the API said, at the last cut, it would take more: a
// refusal of a request sent before it belongs to that cut.
func (l *Law) Open() time.Duration { return l.open }

// PaceAtBound sets the rate to LawMargin of the bound, out of startup
// with a bound: a probe above it, or a climb below it, starts over.
func (l *Law) PaceAtBound() {
	if !l.startup && l.bound > 0 {
		l.rate = l.clamp(LawMargin * l.bound)
	}
}

// SetRate sets the pacing rate to r, within the limits.
func (l *Law) SetRate(r float64) { l.rate = l.clamp(r) }

// LawState is the adaptive law's shared state with absolute times, for
// the whole budget: the estimator a fleet keeps in its bucket. Each worker
// keeps its own record of what it sent and what the API accepted, and
// reads it, divided by its share, when it decides for the fleet.
type LawState struct {
	Rate    float64       `json:"rate"`    // units per minute
	Startup bool          `json:"startup"` // doubling; no refusal yet
	Moved   time.Time     `json:"moved"`   // the last raise or cut
	Probes  int           `json:"probes"`  // probes since the last cut
	Hold    time.Duration `json:"hold"`    // the probe interval
	Bound   float64       `json:"bound"`   // what the API was seen to accept
	Ceil    float64       `json:"ceil"`    // the rate the last cutting refusal came at
	Cut     time.Time     `json:"cut"`     // the last cut
	Open    time.Time     `json:"open"`    // when the API said, at the last cut, it would take more
	Noise   time.Time     `json:"noise,omitzero"`
	Window  time.Duration `json:"window"`      // W; 0: not known
	From    string        `json:"window_from"` // where W came from: refusal, headers or config
	// Full is when the request of the last cutting refusal was sent: the
	// API was full then, and each worker measures spans from it.
	Full time.Time `json:"full,omitzero"`
}

// WindowFromRefusal is LawState.From for a W learned from the first
// refusal after an idle start.
const WindowFromRefusal = "refusal"

var windowSources = [...]string{fromRefusal: WindowFromRefusal, fromHeaders: "headers", fromConfig: "config"}

// ParseWindowSource reports whether s names where a W came from.
func ParseWindowSource(s string) bool {
	for _, v := range windowSources {
		if v == s {
			return true
		}
	}
	return false
}

// abs and Offset convert the law's offsets from base to times and back;
// never is the zero time.
func abs(base time.Time, d time.Duration) time.Time {
	if d <= never {
		return time.Time{}
	}
	return base.Add(d)
}

// Offset returns t as the law's offset from base; the zero time is the
// law's "not yet".
func Offset(base, t time.Time) time.Duration {
	if t.IsZero() {
		return never
	}
	return max(t.Sub(base), never)
}

// Export returns the shared state with offsets from base, its rates
// times scale.
func (l *Law) Export(base time.Time, scale float64) LawState {
	s := &l.lawState
	return LawState{Rate: s.rate * scale, Startup: s.startup, Moved: abs(base, s.moved), Probes: s.probes, Hold: s.hold,
		Bound: s.bound * scale, Ceil: s.ceil * scale, Cut: abs(base, s.cut), Open: abs(base, s.open),
		Noise: abs(base, s.noise), Window: s.window, From: windowSources[s.wfrom]}
}

// Load makes ls the law's shared state, with offsets from base and its
// rates times scale; the record of the instance stays.
func (l *Law) Load(ls LawState, base time.Time, scale float64) {
	l.lawState = lawState{rate: l.clamp(ls.Rate * scale), startup: ls.Startup, moved: Offset(base, ls.Moved), probes: ls.Probes,
		hold: ls.Hold, bound: ls.Bound * scale, ceil: ls.Ceil * scale, cut: Offset(base, ls.Cut), open: Offset(base, ls.Open),
		noise: Offset(base, ls.Noise), window: ls.Window}
	if l.hold <= 0 {
		l.hold = ProbeBase
	}
	for i, v := range windowSources {
		if v == ls.From {
			l.wfrom = windowSource(i)
		}
	}
}
