package sim

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

type taken struct {
	at    time.Time
	units float64
}

// inWindow sums the units accepted in (t−span, t]; acc is in time order.
func inWindow(acc []taken, t time.Time, span time.Duration) float64 {
	lo, _ := slices.BinarySearchFunc(acc, t.Add(-span), func(a taken, x time.Time) int {
		if a.at.After(x) {
			return 1
		}
		return -1
	})
	var sum float64
	for _, a := range acc[lo:] {
		if a.at.After(t) {
			break
		}
		sum += a.units
	}
	return sum
}

func (w *Window) clone() *Window {
	return &Window{Span: w.Span, Quota: w.Quota, entries: slices.Clone(w.entries[w.head:]), sum: w.sum}
}

// TestWindowProperty drives windows with random requests and checks that
// the units accepted in any span never exceed the quota, that a rejected
// request really did not fit, and that its wait is exact: after it the
// request fits, a nanosecond before it does not.
func TestWindowProperty(t *testing.T) {
	for seed := range uint64(25) {
		rng := rand.New(rand.NewPCG(seed, 99))
		span := time.Duration(1+rng.IntN(60)) * time.Second
		w := &Window{Span: span, Quota: float64(5 + rng.IntN(200))}
		now := epoch
		var acc []taken
		for range 3000 {
			// Bursts (many requests at one instant) and gaps of up to a span.
			if rng.IntN(4) > 0 {
				now = now.Add(time.Duration(rng.Int64N(int64(span) / 20)))
			}
			if rng.IntN(50) == 0 {
				now = now.Add(span)
			}
			u := float64(1 + rng.IntN(10))
			probe := w.clone()
			ok, wait := w.Take(now, u)
			used := inWindow(acc, now, span)
			if ok {
				if used+u > w.Quota {
					t.Fatalf("seed %d: accepted %v with %v of %v in the window", seed, u, used, w.Quota)
				}
				acc = append(acc, taken{now, u})
				continue
			}
			if used+u <= w.Quota {
				t.Fatalf("seed %d: rejected %v with %v of %v in the window", seed, u, used, w.Quota)
			}
			if u > w.Quota {
				if wait != -1 {
					t.Fatalf("seed %d: %v over quota %v: wait %v, want -1", seed, u, w.Quota, wait)
				}
				continue
			}
			if wait <= 0 || wait > span {
				t.Fatalf("seed %d: wait %v outside (0, span %v]", seed, wait, span)
			}
			early := probe.clone()
			if ok, _ := early.Take(now.Add(wait-1), u); ok {
				t.Fatalf("seed %d: fits %v before the wait %v", seed, time.Nanosecond, wait)
			}
			if ok, _ := probe.Take(now.Add(wait), u); !ok {
				t.Fatalf("seed %d: does not fit after the wait %v", seed, wait)
			}
		}
		// Any window (t−span, t] is at its fullest right after an acceptance.
		for _, a := range acc {
			if s := inWindow(acc, a.at, span); s > w.Quota {
				t.Fatalf("seed %d: %v units in the window ending %v, quota %v", seed, s, a.at.Sub(epoch), w.Quota)
			}
		}
		if len(acc) < 100 {
			t.Fatalf("seed %d: only %d accepted; the test exercises too little", seed, len(acc))
		}
	}
}

func TestWindowQuotaDrop(t *testing.T) {
	w := &Window{Span: time.Minute, Quota: 10}
	for i := range 10 {
		if ok, _ := w.Take(epoch.Add(time.Duration(i)*time.Second), 1); !ok {
			t.Fatalf("take %d refused", i)
		}
	}
	w.Quota = 5 // another client takes half
	ok, wait := w.Take(epoch.Add(20*time.Second), 1)
	// 6 units must leave: the one taken at 5 s leaves at 65 s.
	if ok || wait != 45*time.Second {
		t.Fatalf("got %v, %v; want a refusal with a wait of 45s", ok, wait)
	}
	if got := w.Used(epoch.Add(62 * time.Second)); got != 7 {
		t.Fatalf("used at 62s = %v, want 7", got)
	}
	if ok, wait := w.Take(epoch, 0); !ok || wait != 0 {
		t.Fatalf("zero units: %v, %v", ok, wait)
	}
}

func TestRetryAfterSeconds(t *testing.T) {
	for _, c := range []struct {
		wait time.Duration
		want int
	}{{0, 1}, {time.Nanosecond, 1}, {time.Second, 1}, {time.Second + 1, 2}, {59500 * time.Millisecond, 60}} {
		if got := RetryAfterSeconds(c.wait); got != c.want {
			t.Errorf("RetryAfterSeconds(%v) = %d, want %d", c.wait, got, c.want)
		}
	}
}
