package sim

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// storm is a run in mode none (every attempt sent at once) with a demand of
// three times the quota, jobs of one unit and one instance.
func storm(api API) Config {
	c := DefaultConfig()
	c.Mode = ModeNone
	c.API = api
	c.Instances = 1
	c.Costs = []float64{1}
	c.Quota = 60
	c.Window = 10 * time.Second
	c.Demand = 3 * 60 * 6 // units per minute: three times 60 per 10 s
	c.BurstUnits = 3      // leaky: 3 units ahead
	if api == APIBucket {
		c.BurstUnits = 6 // one fill: 60 per 10 s is 6 a second
	}
	c.CountRefused = api == APIWindow || api == APIFixed
	return c
}

// calls advances l by d, a second at a time, and returns every call that
// reached the API meanwhile.
func calls(l *Live, d time.Duration) []Request {
	var reqs []Request
	for range d / time.Second {
		l.Advance(time.Second)
		reqs = l.Requests(reqs)
	}
	return reqs
}

// TestRunnerAsksTheModel replays the calls that reached each model API in
// a run against a fresh model of the same settings: every answer is the
// same, so the runner asks the API's own rule, once per call, in order.
func TestRunnerAsksTheModel(t *testing.T) {
	for _, api := range APIs {
		c := storm(api)
		l, err := NewLive(c)
		if err != nil {
			t.Fatal(err)
		}
		reqs := calls(l, time.Minute)
		model := c.apiSpec().model(epoch)
		var refused int
		for i, r := range reqs {
			ok, _ := model.Take(epoch.Add(r.At), r.Cost)
			if ok != r.OK {
				t.Fatalf("%s: call %d at %v: the run answered %v, the model %v", api, i, r.At, r.OK, ok)
			}
			if !ok {
				refused++
			}
		}
		if refused == 0 || refused == len(reqs) {
			t.Fatalf("%s: %d of %d calls refused, want some of each", api, refused, len(reqs))
		}
	}
}

// With Concurrency N a call holds a slot from its sending until its answer
// arrives, a round trip later, and the API refuses a call exactly when N
// calls hold one; the refusal carries no Retry-After.
func TestConcurrency(t *testing.T) {
	c := storm(APIWindow)
	c.Quota = 1e5 // only the concurrency refuses
	c.CountRefused = false
	c.Demand = 600 // 10 calls a second
	c.Concurrency = 3
	c.Latency, c.Jitter = time.Second, 0
	l, err := NewLive(c)
	if err != nil {
		t.Fatal(err)
	}
	var held []time.Duration // the sending instants of the accepted calls
	refused := 0
	for i, r := range calls(l, 2*time.Minute) {
		busy := 0
		for _, at := range held {
			if at > r.At-time.Second {
				busy++
			}
		}
		if r.OK != (busy < 3) {
			t.Fatalf("call %d at %v with %d in flight: accepted %v", i, r.At, busy, r.OK)
		}
		if r.OK {
			held = append(held, r.At)
		} else {
			refused++
		}
	}
	if refused == 0 || len(held) == 0 {
		t.Fatalf("%d accepted, %d refused: want both", len(held), refused)
	}

	c.Mode = ModeAIMD
	c.Duration = 2 * time.Minute
	throttles := 0
	if _, err := run(c, func(op coreOp) {
		if op.Op == "observe" && op.Outcome.Kind == call.Throttle {
			throttles++
			if op.Outcome.RetryAfter != 0 {
				t.Fatalf("a refusal for concurrency carries Retry-After %v", op.Outcome.RetryAfter)
			}
		}
	}); err != nil {
		t.Fatal(err)
	}
	if throttles == 0 {
		t.Fatal("aimd: no call refused")
	}
}

// With Idle the demand starts after it and every figure counts from then:
// in mode none (no limiter to wait through the idle time) the run is the
// same run shifted by Idle.
func TestIdle(t *testing.T) {
	c := DefaultConfig()
	c.Mode = ModeNone
	c.Duration = 5 * time.Minute
	idle := c
	idle.Idle = 2 * time.Minute
	idle.Duration = 7 * time.Minute
	a, b := mustRun(t, c), mustRun(t, idle)
	ja, _ := json.Marshal(a.Summary)
	jb, _ := json.Marshal(b.Summary)
	if string(ja) != string(jb) {
		t.Fatalf("with idle 2m:\n%s\nwithout:\n%s", jb, ja)
	}
	for i, sent := range b.Series.Sent[:120] {
		if sent != 0 {
			t.Fatalf("units sent by %ds: %v, want none before the idle time ends", i, sent)
		}
	}
	if b.Series.Sent[121] == 0 {
		t.Fatal("nothing sent in the second after the idle time")
	}

	// The limiter sees the idle time go by: an adaptive run is not a shift.
	c.Mode, idle.Mode = ModeAIMD, ModeAIMD
	a, b = mustRun(t, c), mustRun(t, idle)
	if a.Summary == b.Summary {
		t.Fatal("aimd: the idle run equals the run without idle time")
	}
}

func TestConfigValidateAPIs(t *testing.T) {
	c := DefaultConfig()
	c.API = APIBucket
	c.BurstUnits = 50 // one fill of 3000/min every 1s
	c.Costs = []float64{1, 2, 100}
	c.Quota = 3000
	c.Concurrency = -1
	c.Idle = c.Duration
	err := c.Validate()
	for _, want := range []string{"sim: costs: must be at most the bucket's burst_units (50)", "sim: concurrency: must be >= 0", "sim: idle: must be in [0, duration (15m0s))"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v lacks %q", err, want)
		}
	}
	c = DefaultConfig()
	c.Idle = 14 * time.Minute
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "steady_from") {
		t.Errorf("idle 14m with steady_from 60s in 15m: %v", err)
	}
}

// With NoRetryAfter every refusal reaches the limiter as a throttle with
// no Retry-After; without it, the same run's refusals name one.
func TestNoRetryAfter(t *testing.T) {
	for _, none := range []bool{false, true} {
		c := DefaultConfig()
		c.API, c.Quota, c.BurstUnits = APILeaky, 1200, 5
		c.Duration = 2 * time.Minute
		c.NoRetryAfter = none
		throttles, named := 0, 0
		if _, err := run(c, func(op coreOp) {
			if op.Op == "observe" && op.Outcome.Kind == call.Throttle {
				throttles++
				if op.Outcome.RetryAfter != 0 {
					named++
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		if throttles == 0 {
			t.Fatalf("NoRetryAfter %v: no call refused", none)
		}
		if none && named != 0 || !none && named != throttles {
			t.Fatalf("NoRetryAfter %v: %d of %d refusals name a Retry-After", none, named, throttles)
		}
	}
}

// With Delay the leaky bucket answers a call that went ahead of the rate
// at its turn: some successes take longer than the longest round trip, by
// at most the burst's time at the rate; without it none does.
func TestLeakyDelayRoundTrip(t *testing.T) {
	for _, delay := range []bool{false, true} {
		c := DefaultConfig()
		c.API, c.Quota, c.BurstUnits, c.Costs, c.Instances = APILeaky, 1200, 5, []float64{1}, 1
		c.Duration = 2 * time.Minute
		c.Delay = delay
		var slow int
		var longest time.Duration
		if _, err := run(c, func(op coreOp) {
			if op.Op == "observe" && op.Outcome.Kind == call.Success {
				rt := op.At - op.SentAt
				longest = max(longest, rt)
				if rt > c.Latency+c.Jitter {
					slow++
				}
			}
		}); err != nil {
			t.Fatal(err)
		}
		if most := c.Latency + c.Jitter + 250*time.Millisecond; delay && (slow == 0 || longest > most) || !delay && slow != 0 {
			t.Errorf("delay %v: %d successes slower than the round trip, the longest %v", delay, slow, longest)
		}
	}
}
