package worker

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sources/memory"
)

// A Retry-After longer than backoff.cap does not hold the slot: the job is
// handed back at once with that delay, capped at max_redelivery_delay
// (#15).
func TestHugeRetryAfterHandsTheJobBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxRedeliveryDelay: 5 * time.Minute}, memory.Config{})
		h.target.on("j1", status(429, "slow down", "Retry-After", "999999999"), status(200, "ok"))
		h.job("j1", nil)
		h.start()
		// Within a minute (fake clock) the job is back in the queue.
		for deadline := time.Now().Add(time.Minute); len(h.events("j1")) == 0 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		evs := h.events("j1")
		if len(evs) == 0 {
			t.Fatal("the job still holds its slot a minute after a Retry-After of 999999999s")
		}
		if evs[0].Kind != memory.EventNak || evs[0].Delay != 5*time.Minute {
			t.Fatalf("first settlement %+v, want a nak with max_redelivery_delay 5m", evs[0])
		}
		if n := len(h.target.requests("j1")); n != 1 {
			t.Errorf("%d calls before the nak, want 1: no retry while holding the slot", n)
		}
		h.until("j1 settled", func() bool { return h.settled("j1") })
		h.stop()
	})
}

// A 3xx is not a success unless target.success_statuses lists it (#15).
func TestRedirectDeadLettered(t *testing.T) {
	for _, tc := range []struct {
		name    string
		success []int
		want    memory.EventKind
	}{
		{"not listed", nil, memory.EventTerm},
		{"listed in success_statuses", []int{307}, memory.EventAck},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{SuccessStatuses: tc.success}, memory.Config{})
				h.target.on("j1", status(307, "", "Location", "http://169.254.169.254/"))
				h.job("j1", nil)
				h.start()
				h.until("j1 settled", func() bool { return h.settled("j1") })
				h.stop()
				evs := h.events("j1")
				if len(evs) != 1 || evs[0].Kind != tc.want {
					t.Fatalf("queue actions %+v, want one %s", evs, tc.want)
				}
				if tc.want == memory.EventTerm {
					dl := h.dlq.deadLetters(t)
					if len(dl) != 1 || dl[0].Reason != "redirect" || dl[0].Status != 307 {
						t.Errorf("dead letters %+v, want one redirect with status 307", dl)
					}
				}
			})
		})
	}
}

// boundedGate is the harness's limiter with a cost bound.
type boundedGate struct {
	*gate
	bound float64
}

func (b boundedGate) CostBound() float64 { return b.bound }

// A job that costs more than the limiter's cost bound is dead-lettered
// bad_cost before it waits for units; one within the bound is sent (#15).
func TestCostAboveBoundDeadLettered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Jobs: testJobs()}
		cfg.Jobs.TrustJobCost = true
		h := newHarness(t, cfg, memory.Config{})
		h.w.deps.Limiter = boundedGate{h.lim, 100}
		h.target.on("big", status(200, "ok"))
		h.target.on("fine", status(200, "ok"))
		h.job("big", map[string]any{"cost": 1e6})
		h.job("fine", map[string]any{"cost": 100})
		h.start()
		h.until("both settled", func() bool { return h.settled("big") && h.settled("fine") })
		h.stop()
		if n := len(h.target.requests("big")); n != 0 {
			t.Errorf("the job over the bound was sent %d times", n)
		}
		dl := h.dlq.deadLetters(t)
		if len(dl) != 1 || dl[0].ID != "big" || dl[0].Reason != "bad_cost" {
			t.Errorf("dead letters %+v, want big as bad_cost", dl)
		}
		if evs := h.events("fine"); len(evs) != 1 || evs[0].Kind != memory.EventAck {
			t.Errorf("the job within the bound: %+v, want an ack", evs)
		}
		if h.lim.waitCount() != 1 {
			t.Errorf("%d waits for units, want 1 (the job over the bound never waits)", h.lim.waitCount())
		}
	})
}

// stalledTarget answers 200 and then fails reading the body.
type stalledTarget struct{}

func (stalledTarget) Send(context.Context, call.Request) (call.Response, error) {
	return call.Response{Status: 200, Outcome: call.Outcome{Kind: call.NetworkError}}, errors.New("reading the body of a 200 response: timeout")
}

// The record of a call that stalled after its headers keeps the status
// that arrived (#15).
func TestStalledBodyKeepsStatus(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxAttempts: 1, MaxDeliveries: 1}, memory.Config{})
		h.w.deps.Target = stalledTarget{}
		h.job("j1", nil)
		h.start()
		h.until("j1 settled", func() bool { return h.settled("j1") })
		h.stop()
		dl := h.dlq.deadLetters(t)
		if len(dl) != 1 || dl[0].Reason != "max_deliveries" || dl[0].Status != 200 {
			t.Errorf("dead letters %+v, want max_deliveries with status 200", dl)
		}
	})
}
