package cluster

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// Each rule of checkFleetState, by what the value means: a table of
// stored states of the classic rules read at t0 with the default options
// (min 60, initial 600, max 10,000,000, max_pause 30s) but slow_start
// false, by a worker whose fleet accepted 3,100 units in the last minute.
func TestCheckFleetState(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := limiter.DefaultConfig()
	cfg.SlowStart = false
	valid := fleet.State{Adapt: control.Adapt{Rate: 3000, Throttled: true, LastCut: t0.Add(-time.Minute),
		IncClock: t0.Add(-10 * time.Second), WMax: 4000, CutTime: t0.Add(-time.Minute), K: 20},
		PausedUntil: t0.Add(20 * time.Second), Seen: t0.Add(-time.Second)}
	r := reading{now: t0, cfg: cfg, accepted: 3100}
	for _, c := range []struct {
		name   string
		edit   func(*fleet.State)
		r      func(*reading)
		fields string // the fields reported, in order
		want   func(*fleet.State)
	}{
		{name: "valid"},
		{name: "seen within the skew", edit: func(s *fleet.State) { s.Seen = t0.Add(maxSkew) }},
		{name: "seen a day ahead: a fast clock", edit: func(s *fleet.State) { s.Seen = t0.Add(24 * time.Hour) },
			fields: "seen", want: func(s *fleet.State) { s.Seen = t0 }},
		{name: "clocks ahead", edit: func(s *fleet.State) {
			s.LastCut, s.IncClock, s.CutTime = t0.Add(time.Hour), t0.Add(time.Hour), t0.Add(time.Hour)
		}, fields: "last_cut inc_clock cut_time", want: func(s *fleet.State) { s.LastCut, s.IncClock, s.CutTime = t0, t0, t0 }},
		{name: "a pause of max_pause", edit: func(s *fleet.State) { s.PausedUntil = t0.Add(cfg.MaxPause) }},
		{name: "a pause a day ahead", edit: func(s *fleet.State) { s.PausedUntil = t0.Add(24 * time.Hour) },
			fields: "paused_until", want: func(s *fleet.State) { s.PausedUntil = time.Time{} }},
		{name: "a pause beyond a shorter max_pause", r: func(r *reading) { r.cfg.MaxPause = time.Second },
			fields: "paused_until", want: func(s *fleet.State) { s.PausedUntil = time.Time{} }},
		{name: "rate NaN", edit: func(s *fleet.State) { s.Rate = math.NaN() },
			fields: "rate", want: func(s *fleet.State) { s.Rate = 600 }},
		{name: "rate below min", edit: func(s *fleet.State) { s.Rate = -5 },
			fields: "rate", want: func(s *fleet.State) { s.Rate = 60 }},
		{name: "rate +Inf", edit: func(s *fleet.State) { s.Rate = math.Inf(1) },
			fields: "rate", want: func(s *fleet.State) { s.Rate = 31000 }},
		{name: "rate 1e308", edit: func(s *fleet.State) { s.Rate = 1e308 },
			fields: "rate", want: func(s *fleet.State) { s.Rate = 31000 }},
		{name: "rate 10 times the measured quota", edit: func(s *fleet.State) { s.Rate = 31000 }},
		{name: "rate above 10 times the quota", edit: func(s *fleet.State) { s.Rate = 40000 },
			fields: "rate", want: func(s *fleet.State) { s.Rate = 31000 }},
		{name: "rate above 10 times the quota, the fleet accepting more", edit: func(s *fleet.State) { s.Rate = 40000 },
			r: func(r *reading) { r.accepted = 5000 }},
		{name: "rate doubled from the one held", edit: func(s *fleet.State) { s.Rate = 40000 },
			r: func(r *reading) { r.held = 20000 }},
		{name: "rate more than doubled from the one held", edit: func(s *fleet.State) { s.Rate = 1e6 },
			r: func(r *reading) { r.held = 20000 }, fields: "rate", want: func(s *fleet.State) { s.Rate = 40000 }},
		{name: "nothing measured: 10 times the initial rate", edit: func(s *fleet.State) { s.Rate = 1e9 },
			r: func(r *reading) { r.accepted = 0 }, fields: "rate", want: func(s *fleet.State) { s.Rate = 6000 }},
		{name: "a law with the classic rules", edit: func(s *fleet.State) { s.Law = &control.LawState{Rate: 3000} },
			fields: "law", want: func(s *fleet.State) { s.Law = nil }},
		{name: "w_max negative", edit: func(s *fleet.State) { s.WMax = -1 },
			fields: "w_max", want: func(s *fleet.State) { s.WMax = 3000 }},
		{name: "k infinite", edit: func(s *fleet.State) { s.K = math.Inf(1) },
			fields: "k", want: func(s *fleet.State) { s.K = 0 }},
		{name: "k beyond a cut at max", edit: func(s *fleet.State) { s.K = 1e6 },
			fields: "k", want: func(s *fleet.State) { s.K = 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, rr, want := valid, r, valid
			if c.edit != nil {
				c.edit(&in)
				c.edit(&want)
			}
			if c.r != nil {
				c.r(&rr)
			}
			if c.want != nil {
				c.want(&want)
			}
			got, ps := checkFleetState(in, rr)
			var fields []string
			for _, p := range ps {
				fields = append(fields, p.field)
				if p.why == "" {
					t.Errorf("%s: no reason", p.field)
				}
			}
			if f := strings.Join(fields, " "); f != c.fields {
				t.Errorf("problems %v, want fields %q", ps, c.fields)
			}
			if got.Adapt != want.Adapt || got.PausedUntil != want.PausedUntil || got.Seen != want.Seen || (got.Law == nil) != (want.Law == nil) {
				t.Errorf("checked state\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

// Each rule of checkFleetState for the adaptive law's part, read at t0
// with the default options (slow_start on, max 10,000,000, max_pause 30s)
// by a worker whose fleet accepted nothing known.
func TestCheckFleetLaw(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cfg := limiter.DefaultConfig()
	law := control.LawState{Rate: 2940, Moved: t0.Add(-4 * time.Second), Probes: 2, Hold: 8 * time.Second, Bound: 3000, Ceil: 3100,
		Cut: t0.Add(-time.Minute), Open: t0.Add(-30 * time.Second), Noise: t0.Add(-10 * time.Second), Window: time.Minute,
		From: "refusal", Full: t0.Add(-61 * time.Second)}
	valid := fleet.State{Adapt: control.Adapt{Rate: 2940, Throttled: true, LastCut: law.Cut, IncClock: law.Moved},
		Law: &law, Seen: t0.Add(-time.Second)}
	r := reading{now: t0, cfg: cfg}
	for _, c := range []struct {
		name   string
		edit   func(*control.LawState)
		fields string
		want   func(*control.LawState)
	}{
		{name: "valid"},
		{name: "open within the longest window", edit: func(l *control.LawState) { l.Open = t0.Add(control.MaxWindow) }},
		{name: "open a day ahead", edit: func(l *control.LawState) { l.Open = t0.Add(24 * time.Hour) },
			fields: "law.open", want: func(l *control.LawState) { l.Open = t0 }},
		{name: "clocks ahead", edit: func(l *control.LawState) {
			l.Moved, l.Cut, l.Noise, l.Full = t0.Add(time.Hour), t0.Add(time.Hour), t0.Add(time.Hour), t0.Add(time.Hour)
		}, fields: "law.moved law.cut law.noise law.full", want: func(l *control.LawState) { l.Moved, l.Cut, l.Noise, l.Full = t0, t0, t0, t0 }},
		{name: "bound NaN, ceil negative", edit: func(l *control.LawState) { l.Bound, l.Ceil = math.NaN(), -1 },
			fields: "law.bound law.ceil", want: func(l *control.LawState) { l.Bound, l.Ceil = 0, 0 }},
		{name: "bound beyond any rate", edit: func(l *control.LawState) { l.Bound = 1e300 },
			fields: "law.bound", want: func(l *control.LawState) { l.Bound = 0 }},
		{name: "rate ten times the estimate", edit: func(l *control.LawState) { l.Rate = 30000 }},
		{name: "rate more than ten times the estimate", edit: func(l *control.LawState) { l.Rate = 1e7 },
			fields: "law.rate", want: func(l *control.LawState) { l.Rate = 30000 }},
		{name: "probes, hold and window out of range", edit: func(l *control.LawState) { l.Probes, l.Hold, l.Window = -1, 100*time.Hour, -time.Second },
			fields: "law.probes law.hold law.window", want: func(l *control.LawState) { l.Probes, l.Hold, l.Window = 0, 0, 0 }},
		{name: "window beyond the longest", edit: func(l *control.LawState) { l.Window = time.Hour },
			fields: "law.window", want: func(l *control.LawState) { l.Window = 0 }},
		{name: "an unknown window source", edit: func(l *control.LawState) { l.From = "oracle" },
			fields: "law.window_from", want: func(l *control.LawState) { l.From = "refusal" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, want := valid, law
			l := law
			in.Law = &l
			if c.edit != nil {
				c.edit(in.Law)
				c.edit(&want)
			}
			if c.want != nil {
				c.want(&want)
			}
			got, ps := checkFleetState(in, r)
			var fields []string
			for _, p := range ps {
				fields = append(fields, p.field)
			}
			if f := strings.Join(fields, " "); f != c.fields {
				t.Errorf("problems %v, want fields %q", ps, c.fields)
			}
			if got.Law == nil || *got.Law != want {
				t.Errorf("checked law\n%+v\nwant\n%+v", got.Law, want)
			}
			if got.Rate != want.Rate {
				t.Errorf("rate %v, want the law's %v", got.Rate, want.Rate)
			}
		})
	}
	// A state with no law, while slow_start is on (written by a worker
	// alone, or an old version), is reported; the law goes on from its
	// rate (fleet.Rules).
	s := valid
	s.Law = nil
	got, ps := checkFleetState(s, r)
	if len(ps) != 1 || ps[0].field != "law" || got.Law != nil || got.Rate != 2940 {
		t.Errorf("no law: %+v, problems %v; want it reported, the rate kept", got, ps)
	}
}

// A literal null, garbage, an empty value and a JSON value that is not an
// object are no state.
func TestDecodeFleetState(t *testing.T) {
	for _, in := range []string{"null", " null\n", "", "{", `"rate"`, "[]", "42", `{"rate":"fast"}`} {
		if s, err := decodeFleetState([]byte(in)); err == nil {
			t.Errorf("%q: decoded as %+v, want no state", in, s)
		}
	}
	s, err := decodeFleetState([]byte(` {"rate":420}`))
	if err != nil || s.Rate != 420 {
		t.Errorf("a state: %+v, %v", s, err)
	}
}

// Each rule of checkMember: the clock skew is the reader's measure, a wait
// ahead of the reader's clock is none, numbers are finite and not
// negative, a share at most 1.
func TestCheckMember(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	valid := Member{ID: "w1", Started: t0.Add(-time.Hour), Refreshed: t0, Rate: 200, Share: 0.5, Leases: 2,
		Waited: t0.Add(-time.Second), Accepted: 180}
	for _, c := range []struct {
		name   string
		edit   func(*Member)
		stored time.Time
		fields string
		want   func(*Member)
	}{
		{name: "valid", stored: t0},
		{name: "a clock a day fast", stored: t0, edit: func(m *Member) { m.Refreshed, m.Waited = t0.Add(24*time.Hour), t0.Add(24*time.Hour) },
			fields: "waited", want: func(m *Member) { m.Skew, m.Waited = 24*time.Hour, time.Time{} }},
		{name: "a clock behind", stored: t0.Add(3 * time.Second), want: func(m *Member) { m.Skew = -3 * time.Second }},
		{name: "a skew claimed by the writer", stored: t0, edit: func(m *Member) { m.Skew = time.Hour }, want: func(m *Member) { m.Skew = 0 }},
		{name: "no stored time", edit: func(m *Member) { m.Skew = time.Hour }, want: func(m *Member) { m.Skew = 0 }},
		{name: "rate NaN, share 2, accepted -1, leases -3", stored: t0,
			edit:   func(m *Member) { m.Rate, m.Share, m.Accepted, m.Leases = math.NaN(), 2, -1, -3 },
			fields: "rate share accepted leases", want: func(m *Member) { m.Rate, m.Share, m.Accepted, m.Leases = 0, 0, 0, 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, want := valid, valid
			if c.edit != nil {
				c.edit(&in)
				c.edit(&want)
			}
			if c.want != nil {
				c.want(&want)
			}
			got, ps := checkMember(in, c.stored, t0)
			var fields []string
			for _, p := range ps {
				fields = append(fields, p.field)
			}
			if f := strings.Join(fields, " "); f != c.fields {
				t.Errorf("problems %v, want fields %q", ps, c.fields)
			}
			if !(got.Rate == want.Rate || math.IsNaN(got.Rate) && math.IsNaN(want.Rate)) || got.Skew != want.Skew || !got.Waited.Equal(want.Waited) ||
				got.Share != want.Share || got.Accepted != want.Accepted || got.Leases != want.Leases {
				t.Errorf("checked member\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}
