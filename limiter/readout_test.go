package limiter

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
)

// atOnce returns the units of u each that l grants at once, one request
// after another, with no time passing: a request that has to wait is
// withdrawn (its context ends) and ends the count.
func atOnce(t *testing.T, l *Limiter, u float64) float64 {
	t.Helper()
	total := 0.0
	for range 10000 {
		ctx, cancel := context.WithCancel(t.Context())
		ch := goWait(ctx, l, u)
		select {
		case r := <-ch:
			cancel()
			if r.err != nil {
				return total
			}
			total += u
		default:
			cancel()
			<-ch
			return total
		}
	}
	t.Fatal("no end to the grants")
	return 0
}

// TestBurstIsWhatGoesAtOnce: the burst a display shows is what the
// limiter then grants at once: a full bucket, one partly refilled, none
// while paused or while a request waits.
func TestBurstIsWhatGoesAtOnce(t *testing.T) {
	check := func(t *testing.T, l *Limiter, want float64) {
		t.Helper()
		b := l.Stats().Burst()
		if math.Abs(b-want) > 1e-9 {
			t.Errorf("Burst() = %v, want %v", b, want)
		}
		if got := atOnce(t, l, 1); got != math.Floor(b+1e-9) {
			t.Errorf("granted %v units at once, Burst() said %v", got, b)
		}
	}
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, nil) // 600/min, 10 s burst: capacity 100, full
		if c := l.Stats().Capacity; c != 100 {
			t.Fatalf("capacity %v, want 100", c)
		}
		check(t, l, 100)
		check(t, l, 0) // the first check spent it
		time.Sleep(3 * time.Second)
		check(t, l, 30)

		time.Sleep(3 * time.Second) // 30 units; a request of 50 waits for 2 s
		head := goWait(t.Context(), l, 50)
		if s := l.Stats(); s.Queue != 1 || s.Tokens != 30 {
			t.Fatalf("queue %d, tokens %v; want 1, 30", s.Queue, s.Tokens)
		}
		check(t, l, 0)
		time.Sleep(2 * time.Second)
		if r := <-head; r.err != nil {
			t.Fatal(r.err)
		}

		time.Sleep(5 * time.Second)
		tk, err := l.Wait(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 4 * time.Second})
		if s := l.Stats(); !s.Paused || s.Tokens <= 0 {
			t.Fatalf("paused %v with %v tokens; want a pause with tokens left", s.Paused, s.Tokens)
		}
		check(t, l, 0)
	})
	l := newTestLimiter(t, func(c *Config) { c.Disabled = true })
	if b := l.Stats().Burst(); !math.IsInf(b, 1) {
		t.Errorf("disabled: Burst() = %v, want +Inf", b)
	}
}

// TestAcceptedKnown: AcceptedKnown is true exactly where AcceptedUnits
// counts the successes.
func TestAcceptedKnown(t *testing.T) {
	for _, c := range []struct {
		name      string
		slowStart bool
		disabled  bool
	}{{"slow start", true, false}, {"no slow start", false, false}, {"disabled", true, true}} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := newTestLimiter(t, func(cf *Config) { cf.SlowStart, cf.Disabled = c.slowStart, c.disabled })
				tk, err := l.Wait(t.Context(), 5)
				if err != nil {
					t.Fatal(err)
				}
				l.Observe(tk, call.Outcome{Kind: call.Success, Status: 200})
				counted := l.AcceptedUnits() == 5
				if known := l.AcceptedKnown(); known != counted {
					t.Errorf("AcceptedKnown() = %v, but AcceptedUnits() = %v after 5 units accepted", known, l.AcceptedUnits())
				}
			})
		})
	}
}
