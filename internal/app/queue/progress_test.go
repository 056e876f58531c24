package queue

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/sources"
)

func TestProgressBetween(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration, done, pending, inFlight int64) statusSample {
		return statusSample{at: t0.Add(d), st: sources.Stats{Done: done, Pending: pending, AckPending: inFlight}}
	}
	for _, tc := range []struct {
		name        string
		first, last statusSample
		want        drainProgress
	}{
		{"draining", at(0, 100, 900, 50), at(2*time.Second, 200, 800, 50), drainProgress{true, 50, 17 * time.Second}},
		{"drained", at(0, 100, 10, 5), at(time.Second, 115, 0, 0), drainProgress{true, 15, 0}},
		{"stalled", at(0, 100, 900, 50), at(2*time.Second, 100, 900, 50), drainProgress{true, 0, -1}},
		{"no time between", at(0, 100, 900, 50), at(0, 120, 880, 50), drainProgress{}},
		{"source cannot count", at(0, -1, 900, 50), at(time.Second, -1, 800, 50), drainProgress{}},
		{"a purge does not count backwards", at(0, 100, 900, 0), at(time.Second, 90, 0, 0), drainProgress{true, 0, 0}},
	} {
		if got := progressBetween(tc.first, tc.last); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// fakeQueue is a queue drained at rate jobs per second of (fake) time.
type fakeQueue struct {
	start      time.Time
	total      int64
	rate       float64
	inFlight   int64
	failAfter  time.Duration // 0: never
	readsCount int
}

func (q *fakeQueue) read(ctx context.Context) (sources.Stats, error) {
	q.readsCount++
	el := time.Since(q.start)
	if q.failAfter > 0 && el >= q.failAfter {
		return sources.Stats{}, errors.New("status: queue gone")
	}
	done := min(int64(el.Seconds()*q.rate), q.total)
	left := q.total - done
	inFlight := min(q.inFlight, left)
	return sources.Stats{Done: done, Pending: left - inFlight, AckPending: inFlight}, nil
}

// One reading without jobs in flight; with jobs in flight, a second one
// after the interval gives the throughput.
func TestMeasureStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &fakeQueue{start: time.Now(), total: 1000, rate: 10, inFlight: 20}
		s, p, err := measureStatus(t.Context(), q.read, 2*time.Second)
		if err != nil || q.readsCount != 2 {
			t.Fatalf("%d reads, %v", q.readsCount, err)
		}
		if p != (drainProgress{true, 10, 98 * time.Second}) || s.st.Done != 20 {
			t.Errorf("progress %+v, sample %+v; want 10/s, 98s left after 20 done", p, s.st)
		}
		idle := &fakeQueue{start: time.Now(), total: 1000}
		if _, p, _ := measureStatus(t.Context(), idle.read, 2*time.Second); p.measured || idle.readsCount != 1 {
			t.Errorf("no job in flight: %d reads, progress %+v", idle.readsCount, p)
		}
	})
}

// --watch refreshes every interval with the throughput over the last 30 s,
// and ends without error when its context does (the signal).
func TestWatchStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q := &fakeQueue{start: time.Now(), total: 10000, rate: 25, inFlight: 10}
		ctx, cancel := context.WithCancel(t.Context())
		var got []drainProgress
		var times []time.Duration
		err := watchStatus(ctx, q.read, 5*time.Second, func(s statusSample, p drainProgress) error {
			got = append(got, p)
			times = append(times, s.at.Sub(q.start))
			if len(got) == 12 {
				cancel()
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 12 || times[11] != 55*time.Second {
			t.Fatalf("%d refreshes, last at %v; want 12, every 5s", len(got), times[len(times)-1])
		}
		if got[0].measured {
			t.Errorf("first refresh has a throughput: %+v", got[0])
		}
		for i, p := range got[1:] {
			if !p.measured || p.rate != 25 {
				t.Errorf("refresh %d: %+v, want 25/s", i+1, p)
			}
		}
		// At 55 s: 1375 done, 8625 left at 25/s.
		if got[11].eta != 345*time.Second {
			t.Errorf("eta %v, want 5m45s", got[11].eta)
		}

		failing := &fakeQueue{start: time.Now(), total: 10, rate: 1, failAfter: 7 * time.Second}
		err = watchStatus(t.Context(), failing.read, time.Second, func(statusSample, drainProgress) error { return nil })
		if err == nil {
			t.Error("a queue that stops answering ends --watch without an error")
		}
	})
}
