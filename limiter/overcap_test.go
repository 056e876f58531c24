package limiter

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// A Retry-After beyond max_pause pauses for max_pause at most once per
// 2 × max_pause; one within max_pause is honoured as always (#15).
func TestOvercapRetryAfterPausesOncePerWindow(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlowStart = false
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	huge := call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 24 * time.Hour}
	for i, st := range []struct {
		at    time.Duration
		ra    time.Duration // 0: the huge one
		until time.Duration // -1: not paused
	}{
		{0, 0, 30 * time.Second},
		// During the pause: no extension.
		{10 * time.Second, 0, 30 * time.Second},
		// After it, within max_pause of its end: no pause.
		{40 * time.Second, 0, -1},
		// A Retry-After within max_pause is honoured meanwhile.
		{45 * time.Second, 10 * time.Second, 55 * time.Second},
		{50 * time.Second, 0, 55 * time.Second},
		// 2 × max_pause after the first: it pauses again.
		{60 * time.Second, 0, 90 * time.Second},
		{70 * time.Second, 0, 90 * time.Second},
	} {
		now := t0.Add(st.at)
		o := huge
		if st.ra > 0 {
			o.RetryAfter = st.ra
		}
		c.Observe(now, now.Add(-10*time.Millisecond), 1, o)
		until, paused := c.PausedUntil()
		switch {
		case st.until < 0 && paused:
			t.Fatalf("step %d (t0+%v): paused until t0+%v, want no pause", i, st.at, until.Sub(t0))
		case st.until >= 0 && (!paused || !until.Equal(t0.Add(st.until))):
			t.Fatalf("step %d (t0+%v): paused %v until t0+%v, want until t0+%v", i, st.at, paused, until.Sub(t0), st.until)
		}
	}
}

// A quota hint whose limit is beyond max_units_per_minute, or over a
// window under a second, sets no ceiling and raises nothing; a throttle
// that contradicted the hints holds their raise back a minute even when
// the target announces a window of one second (#23).
func TestAbsurdQuotaHintsIgnored(t *testing.T) {
	cfg := DefaultConfig()
	cfg.SlowStart, cfg.InitialFill = false, 1
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	hint := func(limit float64, window time.Duration) call.Outcome {
		return call.Outcome{Kind: call.Success, Status: 200, Quota: call.Quota{Limit: limit, Window: window}}
	}
	for _, q := range []call.Outcome{hint(1e15, time.Second), hint(cfg.MaxUnitsPerMinute*2, time.Minute), hint(600, time.Millisecond)} {
		c, err := NewCore(cfg, t0)
		if err != nil {
			t.Fatal(err)
		}
		c.Observe(at(1), at(0.9), 1, q)
		if r := c.Rate(); r != cfg.InitialUnitsPerMinute {
			t.Errorf("limit %v over %v: rate %v, want the initial %v unchanged", q.Quota.Limit, q.Quota.Window, r, cfg.InitialUnitsPerMinute)
		}
		if _, ok := c.QuotaCeiling(); ok {
			t.Errorf("limit %v over %v set a ceiling", q.Quota.Limit, q.Quota.Window)
		}
	}
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.Observe(at(1), at(0.9), 1, hint(300, time.Second)) // 18,000 a minute: the rate rises to it
	c.Observe(at(10), at(9.9), 1, call.Outcome{Kind: call.Throttle, Status: 429})
	c.Observe(at(20), at(19.9), 1, hint(300, time.Second))
	if r := c.Rate(); r >= 18000 {
		t.Errorf("rate %v 10 s after a contradicting throttle, want it held below the announced 18000", r)
	}
	c.Observe(at(71), at(70.9), 1, hint(300, time.Second))
	if r := c.Rate(); r != 18000 {
		t.Errorf("rate %v a minute after the contradicting throttle, want 18000", r)
	}
}
