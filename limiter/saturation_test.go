package limiter

import (
	"context"
	"math"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// satStep is one line of a saturation script: at `at` seconds, either set
// the waiting state (op "set") or read the fraction (op "frac", want).
type satStep struct {
	at      float64
	op      string
	waiting bool
	want    float64
}

func runSaturation(t *testing.T, s *Saturation, steps []satStep) {
	t.Helper()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i, st := range steps {
		at := t0.Add(time.Duration(st.at * float64(time.Second)))
		switch st.op {
		case "set":
			s.SetAt(at, st.waiting)
		case "frac":
			got := s.FractionAt(at)
			if math.Abs(got-st.want) > 1e-12 {
				t.Errorf("step %d: FractionAt(t0+%gs) = %.6f, want %.6f", i, st.at, got, st.want)
			}
		default:
			t.Fatalf("step %d: bad op %q", i, st.op)
		}
	}
}

func TestSaturationFixedInstants(t *testing.T) {
	cases := []struct {
		name   string
		window time.Duration
		steps  []satStep
	}{
		{"nothing seen", 0, []satStep{
			{0, "frac", false, 0},
			{0, "frac", false, 0},
		}},
		{"never waiting", 0, []satStep{
			{0, "set", false, 0},
			{30, "frac", false, 0},
			{3600, "frac", false, 0},
		}},
		{"one wait slides out of the window", 0, []satStep{
			{0, "set", false, 0},
			{10, "set", true, 0},
			{25, "set", false, 0},
			{30, "frac", false, 15.0 / 30},
			{60, "frac", false, 15.0 / 60},
			// Within step 60: the window is steps 0..60, 60.5 s long.
			{60.5, "frac", false, 15.0 / 60.5},
			// Step 61 starts: step 0 leaves the window.
			{61, "frac", false, 15.0 / 60},
			{71, "frac", false, 14.0 / 60},
			{84.5, "frac", false, 1.0 / 60.5},
			{85, "frac", false, 0},
		}},
		{"reading does not change the state", 0, []satStep{
			{0, "set", true, 0},
			{0, "frac", false, 0},
			{0.5, "frac", false, 1},
			{20, "frac", false, 1},
			{20, "set", false, 0},
			{40, "frac", false, 0.5},
		}},
		{"waiting throughout", 0, []satStep{
			{0, "set", true, 0},
			{59.999, "frac", false, 1},
			{600, "frac", false, 1},
		}},
		{"long gap while waiting, then idle", 0, []satStep{
			{0, "set", true, 0},
			{3600, "set", false, 0},
			{3630, "frac", false, 0.5},
			{3660, "frac", false, 0},
		}},
		{"long idle gap, then waiting", 0, []satStep{
			{0, "set", false, 0},
			{36000, "set", true, 0},
			{36015, "frac", false, 15.0 / 60},
			{36060, "frac", false, 1},
		}},
		{"instants in the past are taken as the latest", 0, []satStep{
			{0, "set", false, 0},
			{10, "set", true, 0},
			{5, "set", false, 0}, // applied at 10
			{20, "frac", false, 0},
			{10, "frac", false, 0}, // read at 20: nothing waited
		}},
		{"repeated sets keep accounting", 0, []satStep{
			{0, "set", true, 0},
			{10, "set", true, 0},
			{20, "set", true, 0},
			{30, "set", false, 0},
			{60, "frac", false, 0.5},
		}},
		{"six-second window, 100 ms steps", 6 * time.Second, []satStep{
			{0, "set", true, 0},
			{3, "set", false, 0},
			{6, "frac", false, 0.5},
			// Step 75 holds 7.5 s: the window is steps 15..75, from 1.5 s.
			{7.5, "frac", false, 1.5 / 6},
			{9.1, "frac", false, 0},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			runSaturation(t, NewSaturation(c.window), c.steps)
		})
	}
}

func TestSaturationManyChangesPerStep(t *testing.T) {
	// 60,000 changes in a minute: waiting 1 ms out of every 4 ms.
	s := NewSaturation(time.Minute)
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for i := range 15000 {
		at := t0.Add(time.Duration(i) * 4 * time.Millisecond)
		s.SetAt(at, true)
		s.SetAt(at.Add(time.Millisecond), false)
	}
	if got := s.FractionAt(t0.Add(time.Minute)); math.Abs(got-0.25) > 1e-12 {
		t.Fatalf("FractionAt = %v, want 0.25", got)
	}
	if len(s.busy) != saturationSteps+1 {
		t.Fatalf("ring grew to %d slots", len(s.busy))
	}
}

func TestSaturationPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		// Requests wait from 10 s to 40 s after the start.
		queueLen := func() int {
			if d := time.Since(start); d >= 10*time.Second && d < 40*time.Second {
				return 3
			}
			return 0
		}
		s := NewSaturation(time.Minute)
		ctx, cancel := context.WithCancel(t.Context())
		var wg sync.WaitGroup
		wg.Go(func() { s.Poll(ctx, 250*time.Millisecond, queueLen) })

		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got, want := s.FractionAt(time.Now()), 20.0/30; math.Abs(got-want) > 1e-12 {
			t.Errorf("after 30 s: %v, want %v", got, want)
		}
		time.Sleep(30 * time.Second)
		synctest.Wait()
		if got := s.FractionAt(time.Now()); math.Abs(got-0.5) > 1e-12 {
			t.Errorf("after 60 s: %v, want 0.5", got)
		}
		cancel()
		wg.Wait()
	})
}

func TestSaturationConcurrentUse(t *testing.T) {
	s := NewSaturation(time.Minute)
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			for j := range 1000 {
				s.SetAt(time.Now(), (i+j)%2 == 0)
				if f := s.FractionAt(time.Now()); f < 0 || f > 1 {
					t.Errorf("fraction %v out of [0, 1]", f)
					return
				}
			}
		})
	}
	wg.Wait()
}
