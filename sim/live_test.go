package sim

import (
	"errors"
	"math"
	"testing"
	"time"
)

func mustLive(t *testing.T, c Config) *Live {
	t.Helper()
	l, err := NewLive(c)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestLiveMatchesRun: stepping a Live to an instant in uneven steps gives
// the same counts as Run to that instant, in every mode, with the
// scenario's events; reading the state between steps changes nothing.
func TestLiveMatchesRun(t *testing.T) {
	steps := []time.Duration{73 * time.Millisecond, time.Second, 250 * time.Millisecond, 0, 4 * time.Second, time.Millisecond}
	for _, name := range []string{ScenarioNoisyNeighbor, ScenarioThreeInstances} {
		for _, mode := range Modes {
			reads := []bool{true}
			if mode == ModeAIMD {
				reads = append(reads, false)
			}
			for _, read := range reads {
				c := scenario(t, name, mode)
				c.Duration = 7 * time.Minute
				res := mustRun(t, c)
				l := mustLive(t, c)
				for i := 0; l.Now() < c.Duration; i++ {
					l.Advance(min(steps[i%len(steps)], c.Duration-l.Now()))
					if read {
						l.State()
						l.Requests(nil)
					}
				}
				s := l.State()
				got := Summary{Throttled: s.Throttled, Requests: s.Requests, Rejected: s.Rejected, GaveUp: s.GaveUp, UnitsAccepted: l.r.unitsAccepted}
				want := res.Summary
				if got.Throttled != want.Throttled || got.Requests != want.Requests || got.Rejected != want.Rejected ||
					got.GaveUp != want.GaveUp || got.UnitsAccepted != want.UnitsAccepted {
					t.Errorf("%s/%s (state read between steps: %v): live %+v, run %+v", name, mode, read, got, want)
				}
				if i := len(res.Series.SumRate) - 1; mode != ModeNone && s.SumRate != res.Series.SumRate[i] {
					t.Errorf("%s/%s: sum of rates at the end: live %v, run %v", name, mode, s.SumRate, res.Series.SumRate[i])
				}
			}
		}
	}
}

// TestLiveState: the figures of the state agree with each other and with
// the model: the window never holds more than the quota, the queue is the
// sum of the instances' queues, the units by cost add up to the units used.
func TestLiveState(t *testing.T) {
	c := scenario(t, ScenarioFirstThrottle, ModeAIMD)
	l := mustLive(t, c)
	var reqs []Request
	var sawQueue, sawPause bool
	for l.Now() < 5*time.Minute {
		l.Advance(100 * time.Millisecond)
		s := l.State()
		if s.T != l.Now() {
			t.Fatalf("state at %v, live at %v", s.T, l.Now())
		}
		if s.Used > s.Quota+windowEps {
			t.Fatalf("%v: %v units used in the window, over the quota %v", s.T, s.Used, s.Quota)
		}
		var byCost, sum float64
		for _, u := range s.UsedByCost {
			byCost += u.Units
		}
		if math.Abs(byCost-s.Used) > 1e-6 {
			t.Fatalf("%v: units by cost add up to %v, used %v", s.T, byCost, s.Used)
		}
		q := 0
		for _, in := range s.Instances {
			q += len(in.Queue)
			sum += in.Rate
			if in.Tokens > in.Capacity+1e-9 {
				t.Fatalf("%v: instance %d holds %v tokens, more than its capacity %v", s.T, in.Index, in.Tokens, in.Capacity)
			}
			sawPause = sawPause || in.Paused && in.PausedUntil > s.T
		}
		sawQueue = sawQueue || q > 0
		if q != s.Queue || sum != s.SumRate {
			t.Fatalf("%v: queue %d / sum of rates %v, instances add up to %d / %v", s.T, s.Queue, s.SumRate, q, sum)
		}
		reqs = l.Requests(reqs)
	}
	s := l.State()
	// The state counts calls when they are sent, Requests when they reach
	// the API: they differ by the calls on their way.
	if len(reqs) > s.Requests || len(reqs) < s.Requests-20 {
		t.Errorf("Requests returned %d calls, the state counts %d sent", len(reqs), s.Requests)
	}
	thr := 0
	for i, r := range reqs {
		if !r.OK {
			thr++
		}
		if i > 0 && r.At < reqs[i-1].At {
			t.Fatalf("calls out of order: %v after %v", r.At, reqs[i-1].At)
		}
	}
	if thr != s.Throttled || thr == 0 {
		t.Errorf("Requests returned %d throttled calls, the state counts %d (want > 0)", thr, s.Throttled)
	}
	if !sawQueue || !sawPause {
		t.Errorf("saw a queue: %v, saw a pause: %v; want both in five minutes of first-throttle", sawQueue, sawPause)
	}
	if s.P95Wait <= 0 {
		t.Errorf("p95 wait %v, want > 0 with a queue", s.P95Wait)
	}
}

// TestLiveControls: the changes a person makes at the controls.
func TestLiveControls(t *testing.T) {
	c := scenario(t, ScenarioFirstThrottle, ModeAIMD)
	l := mustLive(t, c)
	l.Advance(2 * time.Minute)

	// Drop the quota: half of it for 60 s, one drop at a time.
	if err := l.DropQuota(0.5, time.Minute); err != nil {
		t.Fatal(err)
	}
	s := l.State()
	if s.Quota != 1500 || s.BaseQuota != 3000 || s.DropEnds != 3*time.Minute {
		t.Fatalf("after the drop: quota %v of %v until %v, want 1500 of 3000 until 3m", s.Quota, s.BaseQuota, s.DropEnds)
	}
	if err := l.DropQuota(0.5, time.Minute); !errors.Is(err, ErrQuotaDropped) {
		t.Fatalf("a second drop: %v, want ErrQuotaDropped", err)
	}
	l.Advance(time.Minute)
	if s := l.State(); s.Quota != 3000 || s.DropEnds != 0 {
		t.Fatalf("after the drop's end: quota %v, drop ends %v; want 3000, 0", s.Quota, s.DropEnds)
	}

	checkLiveInstances(t, l)

	// The quota: the window follows it, a drop keeps its units.
	if err := l.SetQuota(6000); err != nil {
		t.Fatal(err)
	}
	if s := l.State(); s.Quota != 6000 || s.BaseQuota != 6000 {
		t.Errorf("after SetQuota(6000): %v of %v", s.Quota, s.BaseQuota)
	}
	if err := l.DropQuota(0.25, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if err := l.SetQuota(4000); err != nil {
		t.Fatal(err)
	}
	if s := l.State(); s.Quota != 2500 {
		t.Errorf("quota 4000 during a drop of 1500 units: %v left, want 2500", s.Quota)
	}

	// No demand: the calls stop once those on their way are answered.
	if err := l.SetDemand(0); err != nil {
		t.Fatal(err)
	}
	l.Advance(5 * time.Minute)
	n := l.State().Requests
	l.Advance(time.Minute)
	if s := l.State(); s.Requests != n || s.Demand != 0 {
		t.Errorf("with no demand, %d calls became %d in a minute", n, s.Requests)
	}

	checkLiveRefusesBadInput(t, l, c)
}

// checkLiveInstances changes the number of instances of l: one more
// rescales every limiter and keeps the sum; a new instance gets a new index.
func checkLiveInstances(t *testing.T, l *Live) {
	t.Helper()
	before := l.State().SumRate
	if err := l.SetInstances(3); err != nil {
		t.Fatal(err)
	}
	s := l.State()
	if len(s.Instances) != 3 || s.Instances[2].Index != 2 || l.Instances() != 3 {
		t.Fatalf("after SetInstances(3): %d instances (last index %d)", len(s.Instances), s.Instances[len(s.Instances)-1].Index)
	}
	old := s.Instances[0].Rate + s.Instances[1].Rate
	if math.Abs(old-before*2/3) > 1e-6 {
		t.Errorf("the two instances' rates add up to %v after a third joined, want %v·2/3", old, before)
	}
	if err := l.SetInstances(1); err != nil {
		t.Fatal(err)
	}
	if s := l.State(); len(s.Instances) != 1 || s.Instances[0].Index != 0 {
		t.Fatalf("after SetInstances(1): %+v", s.Instances)
	}
	if err := l.SetInstances(2); err != nil {
		t.Fatal(err)
	}
	if s := l.State(); s.Instances[1].Index != 3 {
		t.Errorf("a new instance got index %d, want 3", s.Instances[1].Index)
	}
}

// checkLiveRefusesBadInput checks that every control of l, and NewLive
// of c, refuses a value out of range.
func checkLiveRefusesBadInput(t *testing.T, l *Live, c Config) {
	t.Helper()
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"quota 0", l.SetQuota(0)},
		{"quota below the largest cost", l.SetQuota(4)},
		{"quota +Inf", l.SetQuota(math.Inf(1))},
		{"demand -1", l.SetDemand(-1)},
		{"demand NaN", l.SetDemand(math.NaN())},
		{"instances 0", l.SetInstances(0)},
		{"instances 17", l.SetInstances(MaxLiveInstances + 1)},
		{"drop fraction 1", l.DropQuota(1, time.Second)},
		{"drop for 0", l.DropQuota(0.5, 0)},
	} {
		if tc.err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	c.Instances = MaxLiveInstances + 1
	if _, err := NewLive(c); err == nil {
		t.Error("NewLive with 17 instances: no error")
	}
	c.Instances = 0
	if _, err := NewLive(c); err == nil {
		t.Error("NewLive with 0 instances: no error")
	}
}

// TestLiveBounded: an hour of a busy run in mode none keeps what a Live
// holds bounded by the window, not the length of the run.
func TestLiveBounded(t *testing.T) {
	c := scenario(t, ScenarioNoLimiter, ModeNone)
	l := mustLive(t, c)
	for l.Now() < time.Hour {
		l.Advance(time.Second)
		l.State()
		if len(l.recent) > maxRecent || len(l.r.waits) > 0 {
			t.Fatalf("%v: %d recent calls, %d unharvested waits", l.Now(), len(l.recent), len(l.r.waits))
		}
	}
	s := l.State()
	if s.SumRate == s.SumRate || s.P95Wait != 0 || s.Instances[0].Rate == s.Instances[0].Rate {
		t.Errorf("mode none: sum of rates %v, rate %v, p95 wait %v; want NaN, NaN, 0", s.SumRate, s.Instances[0].Rate, s.P95Wait)
	}
	// About one window of grants (2 instances at most ~25 calls/s each).
	if n := len(l.waits); n > 6000 {
		t.Errorf("%d waits kept for the trailing window", n)
	}
	if n := l.r.q.Len(); n > 2000 {
		t.Errorf("%d events queued", n)
	}
	if len(l.r.quotaLog) > 1 {
		t.Errorf("%d quota steps kept", len(l.r.quotaLog))
	}
	if s.Throttled < 1000 {
		t.Errorf("an hour with no limiter: %d throttled, want many", s.Throttled)
	}
}
