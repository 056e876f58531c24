package limiter

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// Under the adaptive law a 429 that names no wait pauses for a quarter
// of a second (and the restart and its backoff follow): a gateway that
// counts refused requests against the limit (HAProxy's stick tables) is
// not fed a stream of them. The classic rules do not pause.
func TestLawPausesWithoutRetryAfter(t *testing.T) {
	for _, slow := range []bool{true, false} {
		cfg := DefaultConfig()
		cfg.SlowStart = slow
		c, err := NewCore(cfg, t0)
		if err != nil {
			t.Fatal(err)
		}
		a := c.Acquire(at(0), 1)
		c.Advance(at(0.2))
		c.Observe(at(0.5), at(0.2), a.Units, call.Outcome{Kind: call.Throttle, Status: 429})
		until, paused := c.PausedUntil()
		switch {
		case slow && (!paused || !until.Equal(at(0.75))):
			t.Fatalf("adaptive law: paused %v until %v, want until 0.75 s", paused, secs(until))
		case !slow && paused:
			t.Fatalf("classic rules: paused until %v, want no pause", secs(until))
		}
	}
}

// An answer whose send time is before the Core's start (a hand-made
// ticket, a clock that went back) is taken without a panic: the law's
// record drops what falls before it.
func TestObserveSentBeforeStart(t *testing.T) {
	c, err := NewCore(DefaultConfig(), t0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []call.Kind{call.Success, call.Throttle} {
		c.Observe(at(1), at(-1), 1, call.Outcome{Kind: k, Status: 200})
	}
	if r := c.Rate(); r <= 0 {
		t.Fatalf("rate %v after answers sent before the start", r)
	}
}

// An API that refuses every call with no Retry-After (a gateway that
// counts refused calls against its limit) is backed off from: each
// restart that a 429 interrupts doubles the next pause, from a quarter of
// a second toward max_pause.
func TestLawBacksOffWithoutRetryAfter(t *testing.T) {
	c, err := NewCore(DefaultConfig(), t0)
	if err != nil {
		t.Fatal(err)
	}
	now := at(0)
	var pauses []float64
	var ds []Decision
	for range 4 {
		d := c.Acquire(now, 1)
		for d.Status == Waiting {
			due, ok := c.NextDue()
			if !ok {
				t.Fatalf("after pauses %v: a request waits with nothing due", pauses)
			}
			c.Advance(due)
			if ds = c.Drain(ds[:0]); len(ds) > 0 {
				d = ds[0]
			}
		}
		back := d.At.Add(100 * time.Millisecond)
		c.Advance(back)
		c.Observe(back, d.At, d.Units, call.Outcome{Kind: call.Throttle, Status: 429})
		until, paused := c.PausedUntil()
		if !paused {
			t.Fatalf("after pauses %v: a 429 did not pause", pauses)
		}
		pauses = append(pauses, until.Sub(back).Seconds())
		now = until
	}
	for i, want := range []float64{0.25, 0.5, 1, 2} {
		if math.Abs(pauses[i]-want) > 1e-6 {
			t.Fatalf("pauses %v s, want 0.25, 0.5, 1, 2", pauses)
		}
	}
}
