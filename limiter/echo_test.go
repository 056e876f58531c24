package limiter

import (
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// echoRun ends slow start with a throttle at 1.5 s (the hold then lasts
// 3 s), lets the request granted after the pause be answered with then,
// and returns the grant times of five 1-unit requests queued at 2.9 s.
func echoRun(t *testing.T, then call.Outcome) []float64 {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Burst = time.Second
	cfg.MinUnitsPerMinute = 600
	cfg.MaxPause = time.Second // the restart after the pause ends by 3.5 s
	c, err := NewCore(cfg, t0)
	if err != nil {
		t.Fatal(err)
	}
	c.Acquire(at(0), 1) // granted at 0.1, accepted
	c.Acquire(at(0), 1) // granted at 0.2, throttled
	c.Advance(at(0.3))
	c.Observe(at(0.3), at(0.1), 1, call.Outcome{Kind: call.Success, Status: 200})
	c.Observe(at(1.5), at(0.2), 1, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
	if !c.Adapt().HoldUntil.After(at(4)) {
		t.Fatalf("hold until %v, want beyond 4 s", c.Adapt().HoldUntil.Sub(t0))
	}
	b := c.Acquire(at(2), 1) // after the pause: granted at 2.6
	c.Advance(at(2.7))
	c.Observe(at(2.7), at(2.6), b.Units, then)
	var ids []uint64
	got := make([]float64, 0, 5)
	for range 5 {
		d := c.Acquire(at(2.9), 1)
		if d.Status == Granted {
			got = append(got, 2.9)
		}
		ids = append(ids, d.ID)
	}
	// The first of them to be granted is answered at once, a success.
	answered := false
	for step := 2.95; step < 10; step += 0.05 {
		c.Advance(at(step))
		for _, d := range c.Drain(nil) {
			if !slices.Contains(ids, d.ID) || d.Status != Granted {
				continue
			}
			got = append(got, d.At.Sub(t0).Seconds())
			if !answered {
				answered = true
				c.Observe(at(step), d.At, d.Units, call.Outcome{Kind: call.Success, Status: 200})
			}
		}
	}
	return got
}

// An API that accepts what is sent after slow start's fallback (a leaky
// bucket) is not held by the echo: the queued requests leave at the rate.
// One that still refuses (a sliding window that slow start filled) turns
// the echo on for the rest of the hold: nothing was accepted a minute
// before and nothing in the last second, so one request per second passes
// until the hold ends (4.5 s), and the rate after it.
func TestEchoOnlyAfterARefusalInTheHold(t *testing.T) {
	free := echoRun(t, call.Outcome{Kind: call.Success, Status: 200})
	held := echoRun(t, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
	if len(free) != 5 || len(held) != 5 {
		t.Fatalf("grants: free %v, held %v; want 5 each", free, held)
	}
	for i := 1; i < len(free); i++ {
		if d := free[i] - free[i-1]; d > 0.11 {
			t.Errorf("without a refusal, grants %v are %v s apart, want the rate's 0.1 s", free, d)
		}
	}
	if held[len(held)-1] <= free[len(free)-1] {
		t.Errorf("with a refusal in the hold the grants %v end no later than without %v", held, free)
	}
	perSecond := map[int]int{}
	for _, g := range held {
		if end := 1.5 + 3; g < end {
			perSecond[int(g)]++
		}
	}
	for s, n := range perSecond {
		if n > 1 {
			t.Errorf("second %d of the hold granted %d requests with nothing accepted to echo, want 1 (grants %v)", s, n, held)
		}
	}
}
