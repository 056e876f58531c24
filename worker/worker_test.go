package worker

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/memory"
)

// Decision table, row 1: success → result published, then Ack.
func TestDecisionSuccess(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{ResultHeaders: []string{"ETag", "X-Missing"}}, memory.Config{})
		h.target.on("j1", status(201, `{"ok":true}`, "ETag", `"v1"`, "Set-Cookie", "secret"))
		h.job("j1", map[string]any{"type": "export", "body": map[string]int{"a": 1}})
		h.start()
		h.until("j1 settled", func() bool { return h.settled("j1") })
		h.stop()

		reqs := h.target.requests("j1")
		if len(reqs) != 1 || reqs[0].Method != "PUT" || reqs[0].Path != "/exports" || reqs[0].Body != `{"a":1}` {
			t.Fatalf("requests = %+v, want one PUT /exports {\"a\":1}", reqs)
		}
		if got := kinds(h.events("j1")); !slices.Equal(got, []memory.EventKind{memory.EventAck}) {
			t.Fatalf("queue actions = %v, want [ack]", got)
		}
		res := h.res.results(t)
		if len(res) != 1 {
			t.Fatalf("results = %d, want 1", len(res))
		}
		r := res[0]
		if r.ID != "j1" || r.Type != "export" || r.Status != 201 || r.Body != `{"ok":true}` ||
			len(r.Headers) != 1 || r.Headers["Etag"] != `"v1"` {
			t.Errorf("result = %+v", r)
		}
		if len(h.res.before[0]) != 0 {
			t.Errorf("the result was published after %v; want before the ack", h.res.before[0])
		}
		if h.dlq.count() != 0 {
			t.Errorf("dead letters: %d", h.dlq.count())
		}
	})
}

// Decision table, row 2: a 4xx that is not a throttle → dead letter with
// status and body excerpt, then Term; never retried.
func TestDecisionClientError(t *testing.T) {
	for _, code := range []int{400, 404, 422} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{BodyExcerptBytes: 8}, memory.Config{})
				h.target.on("j1", status(code, "no such item, really"))
				h.job("j1", nil)
				h.start()
				h.until("j1 settled", func() bool { return h.settled("j1") })
				h.stop()

				if n := len(h.target.requests("j1")); n != 1 {
					t.Fatalf("requests = %d, want 1", n)
				}
				evs := h.events("j1")
				if len(evs) != 1 || evs[0].Kind != memory.EventTerm || evs[0].Reason != ReasonClientError.String() {
					t.Fatalf("queue actions = %+v, want one term(client_error)", evs)
				}
				dl := h.dlq.deadLetters(t)
				if len(dl) != 1 {
					t.Fatalf("dead letters = %d, want 1", len(dl))
				}
				d := dl[0]
				if d.ID != "j1" || d.Type != "default" || d.Reason != ReasonClientError.String() || d.Status != code ||
					d.BodyExcerpt != "no such " || d.Attempts != 1 || d.Deliveries != 1 || d.Worker != "w1" ||
					!strings.Contains(d.Payload, `"id":"j1"`) || d.FirstAt.IsZero() || d.LastAt.Before(d.FirstAt) {
					t.Errorf("dead letter = %+v", d)
				}
				if len(h.dlq.before[0]) != 0 {
					t.Errorf("dead letter published after %v; want before the term", h.dlq.before[0])
				}
			})
		})
	}
}

// Decision table, row 3: throttle / 5xx / network error / timeout, attempts
// exhausted → Nak(max(Retry-After, backoff by delivery count)); every
// attempt waited for its units and honoured Retry-After.
func TestDecisionRetryableExhausted(t *testing.T) {
	cases := []struct {
		name       string
		answer     func(w http.ResponseWriter, r *http.Request)
		retryAfter time.Duration
		status     int
	}{
		{"429 with Retry-After", status(429, "slow down", "Retry-After", "7"), 7 * time.Second, 429},
		{"503 with Retry-After", status(503, "", "Retry-After", "3"), 3 * time.Second, 503},
		{"500", status(500, "boom"), 0, 500},
		{"network error", drop, 0, 0},
		{"timeout", hang, 0, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := newHarness(t, Config{MaxAttempts: 3, BackoffBase: time.Second}, memory.Config{})
				h.target.on("j1", tc.answer)
				h.job("j1", nil)
				h.start()
				h.until("j1 naked", func() bool { return len(h.events("j1")) > 0 })
				h.stop()

				reqs := h.target.requests("j1")
				if len(reqs) != 3 {
					t.Fatalf("requests = %d, want 3 (max_attempts)", len(reqs))
				}
				for i := 1; i < len(reqs); i++ {
					// The backoff ceiling is 1s·2^(i-1) (jitter is pinned to
					// it); it never comes before Retry-After.
					want := max(tc.retryAfter, time.Second<<(i-1))
					if tc.name == "timeout" {
						want += 10 * time.Second // the request itself took the timeout
					}
					if gap := reqs[i].At.Sub(reqs[i-1].At); gap != want {
						t.Errorf("gap before attempt %d = %v, want %v", i+1, gap, want)
					}
				}
				if h.lim.waitCount() != 3 {
					t.Errorf("limiter waits = %d, want 3 (one per attempt)", h.lim.waitCount())
				}
				evs := h.events("j1")
				wantDelay := max(tc.retryAfter, time.Second) // backoff for delivery 1
				if len(evs) != 1 || evs[0].Kind != memory.EventNak || evs[0].Delay != wantDelay {
					t.Fatalf("queue actions = %+v, want one nak(%v)", evs, wantDelay)
				}
				if h.dlq.count()+h.res.count() != 0 {
					t.Errorf("records published: %d dead letters, %d results", h.dlq.count(), h.res.count())
				}
			})
		})
	}
}

// Decision table, row 3 continued: once deliveries reach max_deliveries the
// job is dead-lettered; the Nak delay grows with the delivery count and is
// capped at max_redelivery_delay.
func TestDecisionMaxDeliveries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{MaxAttempts: 2, MaxDeliveries: 4, MaxRedeliveryDelay: 3 * time.Second}, memory.Config{})
		h.target.on("j1", status(503, "busy"))
		h.job("j1", nil)
		h.start()
		h.until("j1 settled", func() bool { return h.settled("j1") })
		h.stop()

		if n := len(h.target.requests("j1")); n != 8 {
			t.Errorf("requests = %d, want 8 (2 attempts × 4 deliveries)", n)
		}
		evs := h.events("j1")
		var delays []time.Duration
		for _, e := range evs[:len(evs)-1] {
			if e.Kind != memory.EventNak {
				t.Fatalf("queue actions = %+v", evs)
			}
			delays = append(delays, e.Delay)
		}
		if want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}; !slices.Equal(delays, want) {
			t.Errorf("nak delays = %v, want %v", delays, want)
		}
		last := evs[len(evs)-1]
		if last.Kind != memory.EventTerm || last.Reason != ReasonMaxDeliveries.String() || last.DeliveryCount != 4 {
			t.Errorf("last action = %+v, want term(max_deliveries) on delivery 4", last)
		}
		dl := h.dlq.deadLetters(t)
		if len(dl) != 1 || dl[0].Reason != ReasonMaxDeliveries.String() || dl[0].Status != 503 || dl[0].Deliveries != 4 ||
			dl[0].Attempts != 2 || dl[0].BodyExcerpt != "busy" {
			t.Errorf("dead letters = %+v", dl)
		}
	})
}

// Decision table, row 4: the limiter rejects → Nak with a short delay; the
// target sees nothing and the job is not a failure.
func TestDecisionLimiterRejected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{RejectedDelay: 2 * time.Second}, memory.Config{})
		h.lim.reject = errors.New("limiter: rejected: queue_full")
		h.job("j1", nil)
		h.start()
		h.until("j1 naked", func() bool { return len(h.events("j1")) > 0 })
		h.stop()

		if n := h.target.count(); n != 0 {
			t.Errorf("target saw %d requests, want 0", n)
		}
		evs := h.events("j1")
		if len(evs) != 1 || evs[0].Kind != memory.EventNak || evs[0].Delay != 2*time.Second {
			t.Errorf("queue actions = %+v, want one nak(2s)", evs)
		}
		if h.dlq.count() != 0 {
			t.Errorf("dead-lettered a rejected job")
		}
		// Stats count without Metrics.
		st := h.w.Stats()
		if st.Received != 1 || st.InFlight != 0 || st.Jobs[OutcomeRejected] != 1 || st.Jobs[OutcomeSucceeded] != 0 || st.Attempts[call.Success] != 0 {
			t.Errorf("Stats = %+v, want 1 received, 1 rejected, no attempt", st)
		}
	})
}

// Decision table, row 5: an invalid job → dead letter at once with the
// reason, then Term; the target sees nothing.
func TestDecisionInvalidJob(t *testing.T) {
	cases := []struct {
		name   string
		data   string
		reason Reason
	}{
		{"bad JSON", `{"id":`, ReasonBadJSON},
		{"unknown type in strict mode", `{"type":"nope"}`, ReasonUnknownType},
		{"negative cost", `{"cost":-1}`, ReasonBadCost},
		{"path to another host", `{"path":"//evil.example/x"}`, ReasonBadPath},
		{"too large", `{"body":"` + strings.Repeat("x", 600) + `"}`, ReasonTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				jobs := testJobs()
				jobs.Strict = true
				jobs.MaxEnvelopeBytes = 512
				h := newHarness(t, Config{Jobs: jobs}, memory.Config{})
				h.publish(sources.Outgoing{ID: "m1", Data: []byte(tc.data), Headers: map[string]string{"Sluice-Type": "x"}})
				h.start()
				h.until("m1 settled", func() bool { return h.settled("m1") })
				h.stop()

				if n := h.target.count(); n != 0 {
					t.Errorf("target saw %d requests, want 0", n)
				}
				if h.lim.waitCount() != 0 {
					t.Errorf("an invalid job waited on the limiter")
				}
				evs := h.events("m1")
				if len(evs) != 1 || evs[0].Kind != memory.EventTerm || evs[0].Reason != tc.reason.String() {
					t.Fatalf("queue actions = %+v, want one term(%s)", evs, tc.reason)
				}
				dl := h.dlq.deadLetters(t)
				if len(dl) != 1 || dl[0].Reason != tc.reason.String() || dl[0].ID != "m1" || dl[0].Attempts != 0 || dl[0].Headers["Sluice-Type"] != "x" {
					t.Fatalf("dead letters = %+v", dl)
				}
				data, err := dl[0].Data()
				if err != nil {
					t.Fatal(err)
				}
				if tc.reason == ReasonTooLarge {
					if !dl[0].PayloadTruncated || len(data) >= len(tc.data) {
						t.Errorf("oversized payload kept whole (%d bytes, truncated=%v)", len(data), dl[0].PayloadTruncated)
					}
				} else if string(data) != tc.data {
					t.Errorf("payload = %q, want %q", data, tc.data)
				}
			})
		})
	}
}

// Decision table, row 6: shutdown while a job waits for units or backs off
// → Nak with no delay.
func TestDecisionShutdownWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, memory.Config{})
		h.lim.block = true
		h.job("j1", nil)
		h.start()
		synctest.Wait() // j1 is waiting for units
		h.stop()
		if n := h.target.count(); n != 0 {
			t.Errorf("target saw %d requests", n)
		}
		evs := h.events("j1")
		if len(evs) != 1 || evs[0].Kind != memory.EventNak || evs[0].Delay != 0 {
			t.Errorf("queue actions = %+v, want one nak(0)", evs)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, memory.Config{})
		h.target.on("j1", status(429, "", "Retry-After", "20"))
		h.job("j1", nil)
		h.start()
		h.until("the first attempt", func() bool { return h.target.count() == 1 })
		time.Sleep(5 * time.Second) // well into the 20 s backoff
		h.stop()
		if n := h.target.count(); n != 1 {
			t.Errorf("target saw %d requests, want 1", n)
		}
		evs := h.events("j1")
		if len(evs) != 1 || evs[0].Kind != memory.EventNak || evs[0].Delay != 0 {
			t.Errorf("queue actions = %+v, want one nak(0)", evs)
		}
	})
}
