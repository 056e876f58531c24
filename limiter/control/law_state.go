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

// Resume restarts a remembered law, as a fleet does when a worker starts
// on a state it remembered: out of startup with a bound, the rate resumes
// at lawMargin (0.98) of the bound, so that a probe above it, or a climb
// below it, starts over. In startup, or with no bound, it is unchanged.
func (l *Law) Resume() {
	if !l.startup && l.bound > 0 {
		l.rate = l.clamp(lawMargin * l.bound)
	}
}

// LawState is the adaptive law's shared state with absolute times, for
// the whole budget: the estimator a fleet keeps in its bucket. Each worker
// keeps its own record of what it sent and what the API accepted, and
// reads it, divided by its share, when it decides for the fleet.
type LawState struct {
	Rate    float64       `json:"rate"`           // units per minute
	Startup bool          `json:"startup"`        // doubling; no refusal yet
	Moved   time.Time     `json:"moved"`          // the last raise or cut
	Probes  int           `json:"probes"`         // probes since the last cut
	Hold    time.Duration `json:"hold"`           // the probe interval
	Bound   float64       `json:"bound"`          // what the API was seen to accept
	Ceil    float64       `json:"ceil"`           // the upper bound the last cutting refusal set
	Cut     time.Time     `json:"cut"`            // the last cut
	Open    time.Time     `json:"open"`           // when the API said, at the last cut, it would take more
	Noise   time.Time     `json:"noise,omitzero"` // the last cut, or refusal at the bound forgiven (echo or jitter)
	Window  time.Duration `json:"window"`         // W; 0: not known
	From    string        `json:"window_from"`    // where W came from: refusal, echo, headers or config
	// Full is when the request of the last cutting refusal was sent: the
	// API was full then, and each worker measures spans from it.
	Full time.Time `json:"full,omitzero"`
}

var windowSources = [...]string{fromRefusal: "refusal", fromHeaders: "headers", fromConfig: "config", fromEcho: "echo"}

// LawStateAt returns the shared state of a law known only by its rate (a
// rate one instance on its own remembered): out of startup at rate, which
// the API was seen to accept (the bound and the ceil), last moved at
// moved and last cut at cut, with W to be learned from a refusal.
func LawStateAt(rate float64, moved, cut time.Time) LawState {
	return LawState{Rate: rate, Moved: moved, Bound: rate, Ceil: rate, Cut: cut, Open: cut, From: windowSources[fromRefusal]}
}

// ParseWindowSource reports whether s names where a W came from.
func ParseWindowSource(s string) bool {
	for _, v := range windowSources {
		if v == s {
			return true
		}
	}
	return false
}

// abs and offset convert the law's offsets from base to times and back;
// never is the zero time.
func abs(base time.Time, d time.Duration) time.Time {
	if d <= never {
		return time.Time{}
	}
	return base.Add(d)
}

// offset returns t as the law's offset from base; the zero time is the
// law's "not yet".
func offset(base, t time.Time) time.Duration {
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
// rates times scale; the record of the instance stays, and so does a W
// this instance's config set. A window or probe interval longer than the
// law ever sets is cut to its longest.
func (l *Law) Load(ls LawState, base time.Time, scale float64) {
	window, wfrom := l.window, l.wfrom
	l.lawState = lawState{rate: l.clamp(ls.Rate * scale), startup: ls.Startup, moved: offset(base, ls.Moved), probes: ls.Probes,
		hold: min(ls.Hold, longestHold), bound: ls.Bound * scale, ceil: ls.Ceil * scale, cut: offset(base, ls.Cut), open: offset(base, ls.Open),
		noise: offset(base, ls.Noise), window: max(min(ls.Window, MaxWindow), 0)}
	if l.hold <= 0 {
		l.hold = probeBase
	}
	for i, v := range windowSources {
		if v == ls.From {
			l.wfrom = windowSource(i)
		}
	}
	if wfrom == fromConfig {
		l.window, l.wfrom = window, wfrom
	}
}
