package limiter

import (
	"testing"
	"time"
)

// A probe's cut (after the plateau ended) that measures a quota within 5%
// of the one the cut before measured (the probe found no more room)
// doubles the plateau: 10, 20, 40 minutes, and no longer. A cut that
// measures another quota, or none, or comes within the plateau, sets it
// back to 5 minutes.
func TestFleetPlateauBackoff(t *testing.T) {
	f := testRules(t, func(c *Config) { c.SlowStart = false; c.InitialUnitsPerMinute = 3000 })
	s := f.Start(fat(0))
	steps := []struct {
		at, accepted float64
		plateau      time.Duration
	}{
		{100, 3000, 0},                 // the first measure: 5 minutes
		{500, 3100, 10 * time.Minute},  // within 5% of 3000
		{1200, 3000, 20 * time.Minute}, // within 5% of 3100
		{2500, 3050, 40 * time.Minute}, // the most
		{5000, 3000, 40 * time.Minute}, // still the most
		{7500, 3500, 0},                // the quota rose: 5 minutes again
		{7800, 3500, 10 * time.Minute}, // the same again
		{7802, 3500, 10 * time.Minute}, // within the cooldown: no cut, unchanged
		{7820, 3500, 0},                // a cut within a minute measures nothing
		{7900, 3500, 0},                // the last cut measured nothing: 5 minutes
		{8200, 3500, 10 * time.Minute}, // the probe after it: the same quota
		{8400, 3500, 0},                // within the plateau (the quota went down): 5 minutes
	}
	for i, st := range steps {
		ns, _, _ := f.Throttle(s, report(st.at, st.at-0.1, 0), st.accepted)
		if ns.Plateau != st.plateau {
			t.Fatalf("step %d at %v: plateau %v, want %v", i, st.at, ns.Plateau, st.plateau)
		}
		s = ns
	}
	// The raise keeps to 97% of the quota for the whole plateau.
	s, _, _ = f.Throttle(s, report(9000, 8999.9, 0), 3500) // plateau 10 minutes from 9000
	if s.Plateau != 10*time.Minute {
		t.Fatalf("plateau %v, want 10m", s.Plateau)
	}
	s.Rate = 0.97 * 3500
	for _, at := range []float64{9010, 9300, 9599} {
		if _, raised := f.Raise(s, fat(at), FleetView{LastWait: fat(at - 1)}); raised {
			t.Fatalf("raised at %v, above 97%% of 3500 within the plateau", at)
		}
	}
	if ns, raised := f.Raise(s, fat(9600), FleetView{LastWait: fat(9599)}); !raised || ns.Rate <= 0.97*3500 {
		t.Fatalf("at the plateau's end: raised %v rate %v, want above %v", raised, ns.Rate, 0.97*3500)
	}
}
