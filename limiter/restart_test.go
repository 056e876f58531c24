package limiter

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// The restart after a pause ends by itself max_pause after the pause's
// end when the answer of the request in flight never comes, and there is
// none without slow start.
func TestCoreRestartEndsWithoutAnswer(t *testing.T) {
	for _, slow := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.Burst, cfg.MaxPause, cfg.SlowStart = time.Second, 5*time.Second, slow
		c, err := NewCore(cfg, t0)
		if err != nil {
			t.Fatal(err)
		}
		a := c.Acquire(at(0), 1)
		c.Advance(at(0.1))
		c.Observe(at(0.5), at(0.1), a.Units, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
		c.Acquire(at(1), 1) // the first after the pause: granted one unit's time at the cut rate after its end
		second := c.Acquire(at(1), 1)
		c.Advance(at(1.5)) // the pause ends
		due, ok := c.NextDue()
		perUnit := 60 / c.Rate()
		want := at(1.5 + perUnit)
		if !ok || due.Sub(want).Abs() > time.Microsecond {
			t.Fatalf("slow_start %v: next due %v, want the first request's grant at %v", slow, secs(due), secs(want))
		}
		c.Advance(due)
		due, _ = c.NextDue()
		if slow {
			want = at(6.5) // held until the pause's end + max_pause
		} else {
			want = at(1.5 + 2*perUnit)
		}
		if due.Sub(want).Abs() > time.Microsecond {
			t.Fatalf("slow_start %v: second request due at %v, want %v", slow, secs(due), secs(want))
		}
		c.Advance(due)
		var got []Decision
		if got = c.Drain(got); len(got) != 3 || got[2].ID != second.ID || got[2].Status != Granted || !got[2].At.Equal(want) {
			t.Fatalf("slow_start %v: decisions %+v, want the last granted at %v", slow, got, secs(want))
		}
	}
}

// A throttle during a restart halves the window into a threshold; the next
// restart doubles only up to it, then grows by one request per round trip.
func TestCoreRestartThreshold(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Burst, cfg.InitialUnitsPerMinute, cfg.MaxUnitsPerMinute = time.Second, 6000, 6000
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.restart = restartState{on: true, from: 0, until: time.Hour, window: 8, inflight: 8}
	c.restartAnswer(time.Second, 900*time.Millisecond, 1, false, true)
	if rs := c.restart; rs.thresh != 4 || rs.inflight != 7 || rs.window != 8 {
		t.Fatalf("after a throttle: %+v, want threshold 4, 7 in flight", rs)
	}
	c.startRestart(2 * time.Second)
	for i, want := range []float64{2, 3, 4, 4 + 1.0/4} { // window 1 after the first grant
		if i == 0 {
			c.restartGrant(2*time.Second, 1)
		}
		c.restartGrant(2*time.Second, 1)
		c.restartAnswer(2*time.Second+time.Second, 2*time.Second, 1, true, false)
		if got := c.restart.window; got != want {
			t.Fatalf("success %d: window %v, want %v", i+1, got, want)
		}
	}
	if !c.restart.on || c.restart.thresh != 4 {
		t.Fatalf("restart %+v, want it on with the threshold kept", c.restart)
	}
	// A success whose round trip the window covers ends it and clears the
	// threshold: 100 units/s × 0.05 s = 5 ≤ 5.
	c.restart.window = 4.9
	c.restartGrant(4*time.Second, 1)
	c.restartAnswer(4*time.Second+50*time.Millisecond, 4*time.Second, 1, true, false)
	if c.restart.on || c.restart.thresh != 0 {
		t.Fatalf("restart %+v, want it ended with no threshold", c.restart)
	}
}

// The restart's backoff doubles the Retry-After for each restart in a row
// that the API refused, up to max_pause, without overflow whatever
// max_pause is: a long streak of long waits pauses for max_pause, never
// for a wrapped-around (negative) duration that would mean no pause.
func TestRestartBackoffCapped(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxPause = 1000 * time.Hour
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.startRestart(time.Second)
	for _, tc := range []struct {
		streak int
		ra     time.Duration
		want   time.Duration
	}{
		{0, 3 * time.Hour, 3 * time.Hour},       // no streak: the Retry-After
		{1, 3 * time.Hour, 6 * time.Hour},       // one refused restart: twice
		{3, 3 * time.Hour, 24 * time.Hour},      // three: 2³ times
		{40, 300 * time.Hour, 1000 * time.Hour}, // capped at max_pause
		{40, 3 * time.Hour, 1000 * time.Hour},   // 3 h × 2⁴⁰ would overflow
		{2, 2000 * time.Hour, 2000 * time.Hour}, // beyond max_pause: not scaled (pauseEnd caps it)
	} {
		c.restart.streak = tc.streak
		if got := c.restartBackoff(2*time.Second, tc.ra); got != tc.want {
			t.Errorf("streak %d, Retry-After %v: wait %v, want %v", tc.streak, tc.ra, got, tc.want)
		}
	}
}
