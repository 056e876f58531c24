package limiter

import (
	"context"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// A throttle whose wait was beyond the classifier's cap is not believed:
// in slow start it neither ends slow start nor cuts nor pauses; a throttle
// at the cap does all three.
func TestThrottleBeyondCapNotBelieved(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InitialFill = 1
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	if !c.adapt.SlowStart {
		t.Fatal("the default config does not start in slow start")
	}
	hostile := call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: call.DefaultMaxRetryAfter, WaitBeyondCap: true}
	for i := range 5 {
		c.Observe(at(float64(i)+0.5), at(float64(i)), 1, hostile)
	}
	if _, paused := c.PausedUntil(); paused || c.Rate() != cfg.InitialUnitsPerMinute || !c.adapt.SlowStart {
		t.Fatalf("after 5 throttles beyond the cap: rate %v, paused %v, slow start %v; want %v, not paused, still in slow start",
			c.Rate(), paused, c.adapt.SlowStart, cfg.InitialUnitsPerMinute)
	}
	atCap := hostile
	atCap.WaitBeyondCap = false
	c.Observe(at(6), at(5.5), 1, atCap)
	if _, paused := c.PausedUntil(); !paused || c.adapt.SlowStart || c.Rate() >= cfg.InitialUnitsPerMinute {
		t.Errorf("after a throttle at the cap: rate %v, paused %v, slow start %v; want a cut, a pause and slow start over",
			c.Rate(), paused, c.adapt.SlowStart)
	}
}

// A throttle beyond the cap is counted in the metrics and the limiter's
// stats, but not reported to a fleet.
func TestThrottleBeyondCapNotReported(t *testing.T) {
	cfg := DefaultConfig()
	cfg.InitialFill = 1
	var reports int
	l, err := New(cfg, WithThrottleHook(func(fleet.Report) { reports++ }))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := l.Wait(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 503, RetryAfter: time.Hour, WaitBeyondCap: true})
	if reports != 0 {
		t.Errorf("%d fleet reports for a throttle beyond the cap, want 0", reports)
	}
	if n := l.Stats().Throttles[503]; n != 1 {
		t.Errorf("throttles counted with status 503: %d, want 1", n)
	}
	tk, err = l.Wait(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429})
	if reports != 1 {
		t.Errorf("%d fleet reports after a believed throttle, want 1", reports)
	}
}
