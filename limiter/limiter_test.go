package limiter

import (
	"context"
	"errors"
	"maps"
	"math"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/call"
)

func newTestLimiter(t *testing.T, f func(*Config), opts ...Option) *Limiter {
	t.Helper()
	l, err := New(cfgWith(f), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// waitResult is what a background Wait returned.
type waitResult struct {
	t   Ticket
	err error
}

// goWait starts Wait in a goroutine and returns once it is blocked (or done).
func goWait(ctx context.Context, l *Limiter, units float64) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		t, err := l.Wait(ctx, units)
		ch <- waitResult{t, err}
	}()
	synctest.Wait()
	return ch
}

func TestWaitFIFO50(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := newTestLimiter(t, func(c *Config) { c.Burst = 0 }) // capacity 1, 10 units/s
		if _, err := l.Wait(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
		var (
			mu    sync.Mutex
			order []int
		)
		var wg sync.WaitGroup
		tickets := make([]Ticket, 50)
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tk, err := l.Wait(t.Context(), 1)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				tickets[i] = tk
				mu.Unlock()
			}()
			synctest.Wait() // waiter i is queued before i+1 starts
		}
		if q := l.Stats().Queue; q != 50 {
			t.Fatalf("queue = %d, want 50", q)
		}
		wg.Wait()
		for i, v := range order {
			if v != i {
				t.Fatalf("grant order %v, want 0..49", order)
			}
		}
		for i, tk := range tickets {
			want := start.Add(time.Duration(i+1) * 100 * time.Millisecond)
			if !tk.Granted.Equal(want) {
				t.Errorf("waiter %d granted at %v, want %v", i, tk.Granted.Sub(start), want.Sub(start))
			}
		}
	})
}

func TestWaitCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		m := NewMetrics()
		l := newTestLimiter(t, func(c *Config) { c.Burst = time.Second }, WithMetrics(m)) // capacity 10
		if _, err := l.Wait(t.Context(), 10); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		big := goWait(ctx, l, 10)          // due at 1 s
		small := goWait(t.Context(), l, 1) // behind it
		time.Sleep(300 * time.Millisecond) // fake time
		cancel()
		r := <-big
		var re *RejectedError
		if !errors.As(r.err, &re) || re.Reason != ReasonCanceled ||
			!errors.Is(r.err, ErrRejected) || !errors.Is(r.err, context.Canceled) {
			t.Fatalf("canceled wait: err = %v", r.err)
		}
		// The small request no longer waits behind the big one: 3 tokens
		// are there at 0.3 s.
		s := <-small
		if s.err != nil || !s.t.Granted.Equal(start.Add(300*time.Millisecond)) {
			t.Fatalf("small: %v at %v, want a grant at 300ms", s.err, s.t.Granted.Sub(start))
		}
		if got := testutil.ToFloat64(m.rejections.WithLabelValues("canceled")); got != 1 {
			t.Errorf("canceled rejections = %v, want 1", got)
		}
		// A context that is already done is rejected at once.
		if _, err := l.Wait(ctx, 1); !errors.Is(err, context.Canceled) || !errors.Is(err, ErrRejected) {
			t.Errorf("Wait with a done context: %v", err)
		}
		if q := l.Stats().Queue; q != 0 {
			t.Errorf("queue = %d after cancel, want 0", q)
		}
	})
}

func TestWaitMaxWaitAndQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		l := newTestLimiter(t, func(c *Config) {
			c.Burst = time.Second
			c.MaxWait = 2 * time.Second
			c.QueueLimit = 1
		})
		if _, err := l.Wait(t.Context(), 10); err != nil {
			t.Fatal(err)
		}
		// 25 units are over the capacity 10: granted when the bucket is
		// full again (1 s).
		ch := goWait(t.Context(), l, 25)
		_, err := l.Wait(t.Context(), 1)
		var re *RejectedError
		if !errors.As(err, &re) || re.Reason != ReasonQueueFull || err.Error() != "limiter: queue full" {
			t.Fatalf("second waiter: %v, want queue_full", err)
		}
		r := <-ch
		if r.err != nil || !r.t.Granted.Equal(start.Add(time.Second)) {
			t.Fatalf("oversized: %v at %v, want a grant at 1s", r.err, r.t.Granted.Sub(start))
		}
		// The bucket is at -15: 6 units take 2.1 s > max_wait.
		waitStart := time.Now()
		_, err = l.Wait(t.Context(), 6)
		if !errors.As(err, &re) || re.Reason != ReasonMaxWait {
			t.Fatalf("err = %v, want max_wait", err)
		}
		if got := time.Since(waitStart); got != 2*time.Second {
			t.Errorf("rejected after %v of fake time, want max_wait (2s)", got)
		}
	})
}

func TestNoGrantDuringPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		m := NewMetrics()
		l := newTestLimiter(t, func(c *Config) { c.Burst = time.Second }, WithMetrics(m))
		tk, err := l.Wait(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 5 * time.Second})
		st := l.Stats()
		if !st.Paused || !st.PausedUntil.Equal(start.Add(5*time.Second)) || st.Rate != 420 || st.Tokens != 7 {
			t.Fatalf("after throttle: %+v", st)
		}
		if testutil.ToFloat64(m.paused) != 1 {
			t.Error("paused gauge not 1")
		}
		ch := goWait(t.Context(), l, 1) // tokens are there, but paused
		time.Sleep(4999 * time.Millisecond)
		synctest.Wait()
		select {
		case r := <-ch:
			t.Fatalf("granted during the pause at %v", r.t.Granted.Sub(start))
		default:
		}
		r := <-ch
		// The bucket is empty when the pause ends: 1 unit at 7/s.
		want := start.Add(5*time.Second + time.Second/7 + 1)
		if r.err != nil || r.t.Granted.Sub(want).Abs() > time.Nanosecond {
			t.Fatalf("granted %v at %v, want %v", r.err, r.t.Granted.Sub(start), want.Sub(start))
		}
		if testutil.ToFloat64(m.paused) != 0 {
			t.Error("paused gauge not back to 0")
		}
	})
}

func TestLimiterInstancesAndStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMetrics()
		l := newTestLimiter(t, nil, WithMetrics(m))
		if err := l.SetInstanceCount(4); err != nil {
			t.Fatal(err)
		}
		st := l.Stats()
		if st.Rate != 150 || st.Tokens != 25 || st.Instances != 4 || st.Share != 0.25 || l.Rate() != 150 {
			t.Errorf("stats %+v", st)
		}
		if testutil.ToFloat64(m.instances) != 4 || testutil.ToFloat64(m.rate) != 150 {
			t.Errorf("gauges instances %v rate %v", testutil.ToFloat64(m.instances), testutil.ToFloat64(m.rate))
		}
		if err := l.SetShare(0.5); err != nil || l.Rate() != 300 {
			t.Errorf("SetShare(0.5): %v, rate %v", err, l.Rate())
		}
		if err := l.SetInstanceCount(0); err == nil {
			t.Error("SetInstanceCount(0) succeeded")
		}
		if _, err := l.Wait(t.Context(), -1); err == nil || errors.Is(err, ErrRejected) {
			t.Errorf("Wait(-1) = %v, want an argument error", err)
		}
		if _, err := l.Wait(t.Context(), math.NaN()); err == nil {
			t.Error("Wait(NaN) succeeded")
		}
	})
}

func TestMetrics(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		reg := prometheus.NewPedanticRegistry()
		m := NewMetrics()
		reg.MustRegister(m)
		l := newTestLimiter(t, func(c *Config) { c.Burst = time.Second; c.QueueLimit = 1 }, WithMetrics(m))
		tk, _ := l.Wait(t.Context(), 10)
		ch := goWait(t.Context(), l, 2)
		if _, err := l.Wait(t.Context(), 1); !errors.Is(err, ErrRejected) {
			t.Fatal(err)
		}
		<-ch // 0.2 s
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429})
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 503, RetryAfter: time.Second})
		want := `
# HELP sluice_limiter_instances Number of instances sharing the budget (1/share for a fractional share).
# TYPE sluice_limiter_instances gauge
sluice_limiter_instances 1
# HELP sluice_limiter_paused 1 while the limiter is paused by a Retry-After, else 0.
# TYPE sluice_limiter_paused gauge
sluice_limiter_paused 1
# HELP sluice_limiter_queue_length Requests waiting in the limiter's queue.
# TYPE sluice_limiter_queue_length gauge
sluice_limiter_queue_length 0
# HELP sluice_limiter_rate_units_per_minute Current rate of this instance's limiter, in units per minute.
# TYPE sluice_limiter_rate_units_per_minute gauge
sluice_limiter_rate_units_per_minute 420
# HELP sluice_limiter_rejections_total Requests the limiter rejected, by reason (queue_full, max_wait, canceled).
# TYPE sluice_limiter_rejections_total counter
sluice_limiter_rejections_total{reason="canceled"} 0
sluice_limiter_rejections_total{reason="max_wait"} 0
sluice_limiter_rejections_total{reason="queue_full"} 1
# HELP sluice_limiter_throttles_total Responses classified as throttles, by HTTP status.
# TYPE sluice_limiter_throttles_total counter
sluice_limiter_throttles_total{status="429"} 1
sluice_limiter_throttles_total{status="503"} 1
# HELP sluice_limiter_tokens Units in the limiter's bucket; negative after an oversized request.
# TYPE sluice_limiter_tokens gauge
sluice_limiter_tokens 0
# HELP sluice_limiter_units_total Units granted by the limiter.
# TYPE sluice_limiter_units_total counter
sluice_limiter_units_total 12
`
		names := []string{"sluice_limiter_instances", "sluice_limiter_paused", "sluice_limiter_queue_length",
			"sluice_limiter_rate_units_per_minute", "sluice_limiter_rejections_total", "sluice_limiter_throttles_total",
			"sluice_limiter_tokens", "sluice_limiter_units_total"}
		if err := testutil.GatherAndCompare(reg, strings.NewReader(want), names...); err != nil {
			t.Error(err)
		}
		// Two grants observed in the wait histogram: one at once, one after 0.2 s.
		if n := testutil.CollectAndCount(m.wait); n != 1 {
			t.Errorf("wait histogram series = %d", n)
		}
		var hm = &histogramSample{}
		hm.read(t, reg)
		if hm.count != 2 || math.Abs(hm.sum-0.2) > 1e-9 {
			t.Errorf("wait histogram count %d sum %v, want 2 and 0.2", hm.count, hm.sum)
		}
		// Stats holds the same counts.
		st := l.Stats()
		if st.Units != 12 || !maps.Equal(st.Throttles, map[int]int64{429: 1, 503: 1}) ||
			!maps.Equal(st.Rejections, map[Reason]int64{ReasonQueueFull: 1, ReasonMaxWait: 0, ReasonCanceled: 0}) {
			t.Errorf("Stats counts: units %v, throttles %v, rejections %v", st.Units, st.Throttles, st.Rejections)
		}
	})
}

// Stats counts without Metrics: grants, throttles by status, rejections
// by reason (a canceled wait, a full queue, max_wait).
func TestStatsCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, func(c *Config) { c.Burst = time.Second; c.QueueLimit = 1; c.MaxWait = 100 * time.Millisecond })
		if st := l.Stats(); st.Units != 0 || len(st.Throttles) != 0 || st.Throttles == nil || len(st.Rejections) != 3 {
			t.Errorf("fresh Stats counts: %+v", st)
		}
		tk, _ := l.Wait(t.Context(), 10) // the whole bucket
		ch := goWait(t.Context(), l, 5)  // needs 0.5 s: max_wait rejects it
		if _, err := l.Wait(t.Context(), 1); !errors.Is(err, ErrRejected) {
			t.Fatal(err) // queue full
		}
		if r := <-ch; r.err == nil {
			t.Fatal("a wait past max_wait was granted")
		}
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		if _, err := l.Wait(ctx, 1); !errors.Is(err, ErrRejected) {
			t.Fatal(err) // canceled
		}
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429})
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429})
		l.Observe(tk, call.Outcome{Kind: call.ServerError, Status: 500})
		st := l.Stats()
		if st.Units != 10 || !maps.Equal(st.Throttles, map[int]int64{429: 2}) ||
			!maps.Equal(st.Rejections, map[Reason]int64{ReasonQueueFull: 1, ReasonMaxWait: 1, ReasonCanceled: 1}) {
			t.Errorf("Stats counts: units %v, throttles %v, rejections %v", st.Units, st.Throttles, st.Rejections)
		}
	})
}

type histogramSample struct {
	count uint64
	sum   float64
}

func (h *histogramSample) read(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "sluice_limiter_wait_seconds" {
			hist := mf.GetMetric()[0].GetHistogram()
			h.count, h.sum = hist.GetSampleCount(), hist.GetSampleSum()
			return
		}
	}
	t.Fatal("no sluice_limiter_wait_seconds")
}

func TestDisabledCountsUnitsAndThrottles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMetrics()
		l := newTestLimiter(t, func(c *Config) { c.Disabled = true }, WithMetrics(m))
		for range 3 {
			tk, err := l.Wait(t.Context(), 1000)
			if err != nil || !tk.Granted.Equal(time.Now()) {
				t.Fatalf("disabled Wait: %v", err)
			}
			l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Minute})
		}
		if got := testutil.ToFloat64(m.units); got != 3000 {
			t.Errorf("units = %v, want 3000", got)
		}
		if got := testutil.ToFloat64(m.throttles.WithLabelValues("429")); got != 3 {
			t.Errorf("throttles = %v, want 3", got)
		}
		if st := l.Stats(); st.Rate != 600 || st.Paused || !st.Disabled {
			t.Errorf("disabled stats %+v", st)
		}
	})
}

// The caller registers the metrics: a second set on one registry is an
// error of Register (MustRegister panics), not of NewMetrics.
func TestRegisterTwice(t *testing.T) {
	reg := prometheus.NewRegistry()
	if err := reg.Register(NewMetrics()); err != nil {
		t.Fatal(err)
	}
	if err := reg.Register(NewMetrics()); err == nil {
		t.Error("a second limiter's metrics registered on one registry")
	}
}

// TestLimiterConcurrentUse runs many goroutines that wait with deadlines,
// observe random outcomes and change the instance count, under the race
// detector, in fake time. Every Wait must end with a ticket or a rejection,
// and the queue must be empty at the end.
func TestLimiterConcurrentUse(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := NewMetrics()
		l := newTestLimiter(t, func(c *Config) {
			c.Burst = time.Second
			c.QueueLimit = 20
			c.MaxWait = 3 * time.Second
			c.DecreaseCooldown = 0
		}, WithMetrics(m))
		var wg sync.WaitGroup
		var granted, rejected sync.Map
		for g := range 16 {
			wg.Go(func() {
				for i := range 40 {
					ctx, cancel := context.WithTimeout(t.Context(), time.Duration(100+(g*37+i*53)%2000)*time.Millisecond)
					tk, err := l.Wait(ctx, float64((g+i)%4))
					cancel()
					key := [2]int{g, i}
					if err != nil {
						if !errors.Is(err, ErrRejected) {
							t.Errorf("Wait: %v", err)
						}
						rejected.Store(key, err)
						continue
					}
					granted.Store(key, tk)
					switch (g * i) % 5 {
					case 0:
						l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Duration(i%3) * 100 * time.Millisecond})
					case 4:
						if err := l.SetInstanceCount(1 + i%3); err != nil {
							t.Error(err)
						}
					default:
						l.Observe(tk, call.Outcome{Kind: call.Success, Status: 200})
					}
					_ = l.Stats()
				}
			})
		}
		wg.Wait()
		n := 0
		granted.Range(func(any, any) bool { n++; return true })
		rejected.Range(func(any, any) bool { n++; return true })
		t.Logf("%d waits ended, %v units, rejections %v", n, testutil.ToFloat64(m.units), testutil.ToFloat64(m.rejections.WithLabelValues("canceled"))+testutil.ToFloat64(m.rejections.WithLabelValues("queue_full"))+testutil.ToFloat64(m.rejections.WithLabelValues("max_wait")))
		if n != 16*40 {
			t.Errorf("%d waits ended, want %d", n, 16*40)
		}
		if st := l.Stats(); st.Queue != 0 {
			t.Errorf("queue %d at the end", st.Queue)
		}
		if testutil.ToFloat64(m.queue) != 0 {
			t.Errorf("queue gauge %v at the end", testutil.ToFloat64(m.queue))
		}
	})
}

func TestWaitFailsFastInPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, nil)
		tk, _ := l.Wait(t.Context(), 1)
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 10 * time.Second})
		start := time.Now()
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // ends with the pause: too early
		defer cancel()
		_, err := l.Wait(ctx, 1)
		var re *RejectedError
		if !errors.As(err, &re) || re.Reason != ReasonCanceled || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("err = %v, want canceled with DeadlineExceeded", err)
		}
		if time.Since(start) != 0 {
			t.Errorf("did not fail at once")
		}
		if st := l.Stats(); st.Queue != 0 {
			t.Errorf("queue %d", st.Queue)
		}
		// A deadline after the pause waits, and gets its grant.
		ctx2, cancel2 := context.WithTimeout(t.Context(), 11*time.Second)
		defer cancel2()
		if _, err := l.Wait(ctx2, 1); err != nil {
			t.Fatalf("Wait with a later deadline: %v", err)
		}
		// Zero units never wait, even in a pause.
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 10 * time.Second})
		if _, err := l.Wait(ctx2, 0); err != nil {
			t.Fatalf("zero units in a pause: %v", err)
		}
	})
}
