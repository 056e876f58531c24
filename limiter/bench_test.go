package limiter

import (
	"context"
	"runtime"
	"testing"
	"time"

	"golang.org/x/time/rate"
)

// The benchmarks run sluice's Limiter.Wait beside x/time/rate's
// Limiter.Wait in the same run, so their ratio is what matters. The rate is
// so high that every call is granted at once from the bucket.

const benchRate = 1e12 // units per minute

func benchLimiter(b *testing.B, opts ...Option) *Limiter {
	b.Helper()
	cfg := DefaultConfig()
	cfg.InitialUnitsPerMinute, cfg.MaxUnitsPerMinute = benchRate, benchRate
	l, err := New(cfg, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return l
}

func benchXRate() *rate.Limiter {
	return rate.NewLimiter(rate.Limit(benchRate/60), 1<<30)
}

// waitLoop waits for one unit b.N times on l.
func waitLoop(b *testing.B, ctx context.Context, l *Limiter) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Wait(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// waitLoopXRate is waitLoop on x/time/rate's limiter.
func waitLoopXRate(b *testing.B, ctx context.Context, l *rate.Limiter) {
	b.ReportAllocs()
	for b.Loop() {
		if err := l.Wait(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWaitUncontended: one goroutine, tokens available.
func BenchmarkWaitUncontended(b *testing.B) {
	ctx := context.Background()
	b.Run("sluice", func(b *testing.B) {
		l := benchLimiter(b)
		waitLoop(b, ctx, l)
	})
	b.Run("sluice-metrics", func(b *testing.B) {
		l := benchLimiter(b, WithMetrics(NewMetrics()))
		waitLoop(b, ctx, l)
	})
	b.Run("xrate", func(b *testing.B) {
		l := benchXRate()
		waitLoopXRate(b, ctx, l)
	})
}

// BenchmarkWaitDeadline: as BenchmarkWaitUncontended, with a context that
// has a deadline (Wait then checks whether a pause outlasts it).
func BenchmarkWaitDeadline(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Hour)
	defer cancel()
	b.Run("sluice", func(b *testing.B) {
		l := benchLimiter(b)
		waitLoop(b, ctx, l)
	})
	b.Run("xrate", func(b *testing.B) {
		l := benchXRate()
		waitLoopXRate(b, ctx, l)
	})
}

// BenchmarkWaitContended: 8 goroutines on one limiter at an unlimited rate.
func BenchmarkWaitContended(b *testing.B) {
	ctx := context.Background()
	par := max(1, (8+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0))
	contended := func(b *testing.B, wait func() error) {
		b.ReportAllocs()
		b.SetParallelism(par)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := wait(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.Run("sluice", func(b *testing.B) {
		l := benchLimiter(b)
		contended(b, func() error { _, err := l.Wait(ctx, 1); return err })
	})
	b.Run("sluice-metrics", func(b *testing.B) {
		l := benchLimiter(b, WithMetrics(NewMetrics()))
		contended(b, func() error { _, err := l.Wait(ctx, 1); return err })
	})
	b.Run("xrate", func(b *testing.B) {
		l := benchXRate()
		contended(b, func() error { return l.Wait(ctx) })
	})
}

// BenchmarkCoreAcquire is the deterministic core alone, for reference.
func BenchmarkCoreAcquire(b *testing.B) {
	cfg := DefaultConfig()
	cfg.InitialUnitsPerMinute, cfg.MaxUnitsPerMinute = benchRate, benchRate
	c, err := NewCore(cfg, t0)
	if err != nil {
		b.Fatal(err)
	}
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(1)
		if d := c.Acquire(now, 1); d.Status != Granted {
			b.Fatal(d.Status)
		}
	}
}
