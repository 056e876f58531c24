package cluster

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/limiter"
)

// Drive hands the live count to the limiter in members mode, at once and
// on every change, and the heartbeats carry the limiter's rate; without
// counts (leases mode) the count is left alone.
func TestDriveFeedsTheLimiter(t *testing.T) {
	url := startServer(t).ClientURL()
	cfg := Config{Bucket: uniqueBucket(t), TTL: 3 * time.Second}
	join := func(id string) *Membership { return joinRunning(t, url, cfg, id) }
	newLimiter := func() *limiter.Limiter {
		lc := limiter.DefaultConfig()
		lc.InitialUnitsPerMinute = 1200
		lim, err := limiter.New(lc)
		if err != nil {
			t.Fatal(err)
		}
		return lim
	}
	a, _ := join("a"), join("b")
	testkit.Eventually(t, "a to see b", func() bool { return a.Count() == 2 })
	la := newLimiter()
	if err := a.Drive(t.Context(), la, true); err != nil {
		t.Fatal(err)
	}
	if n := la.Stats().Instances; n != 2 {
		t.Fatalf("instances right after Drive: %d, want 2", n)
	}
	join("c")
	testkit.Eventually(t, "a's limiter at N=3", func() bool { return la.Stats().Instances == 3 })
	testkit.EventuallyState(t, "a's heartbeat to carry its limiter's rate", func() (bool, string) {
		ms, err := List(t.Context(), connect(t, url), cfg.Bucket)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.ID == "a" {
				return m.Rate == la.Rate() && m.Rate > 0, fmt.Sprintf("listed rate %v, limiter %v", m.Rate, la.Rate())
			}
		}
		return false, "a not listed"
	})

	// Leases mode: the membership reports the rate, the count stays the
	// limiter's own.
	d := join("d")
	ld := newLimiter()
	if err := d.Drive(t.Context(), ld, false); err != nil {
		t.Fatal(err)
	}
	if n := ld.Stats().Instances; n != 1 {
		t.Errorf("instances with counts off: %d, want 1 (untouched)", n)
	}
}

// WithLimiter sets the limiter's share to the leases held, and WithShare
// sees the same shares: two workers on 4 partitions each run at half the
// budget, where a limiter left alone would stay at its whole.
func TestWithLimiterSetsShare(t *testing.T) {
	url := startServer(t).ClientURL()
	cfg := Config{Bucket: uniqueBucket(t), TTL: 3 * time.Second, Partitions: 4}
	lease := func(id string) (*Leases, *limiter.Limiter, func() float64) {
		m := joinRunning(t, url, cfg, id)
		lim, err := limiter.New(limiter.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		last := -1.0
		l, err := NewLeases(t.Context(), m, WithLimiter(lim), WithShare(func(s float64) {
			mu.Lock()
			last = s
			mu.Unlock()
		}))
		if err != nil {
			t.Fatal(err)
		}
		runUntilCleanup(t, l.Run)
		return l, lim, func() float64 { mu.Lock(); defer mu.Unlock(); return last }
	}
	la, lima, lastA := lease("a")
	lb, limb, lastB := lease("b")
	testkit.EventuallyState(t, "each worker at half the budget", func() (bool, string) {
		sa, sb := lima.Stats().Share, limb.Stats().Share
		return sa == 0.5 && sb == 0.5 && lastA() == 0.5 && lastB() == 0.5,
			fmt.Sprintf("limiter shares %v and %v, reported %v and %v, held %v and %v", sa, sb, lastA(), lastB(), la.Held(), lb.Held())
	})
}
