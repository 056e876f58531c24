package worker

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/limiter"
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
				if len(evs) != 1 || evs[0].Kind != memory.EventTerm || evs[0].Reason != ReasonClientError {
					t.Fatalf("queue actions = %+v, want one term(client_error)", evs)
				}
				dl := h.dlq.deadLetters(t)
				if len(dl) != 1 {
					t.Fatalf("dead letters = %d, want 1", len(dl))
				}
				d := dl[0]
				if d.ID != "j1" || d.Type != "default" || d.Reason != ReasonClientError || d.Status != code ||
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
		if last.Kind != memory.EventTerm || last.Reason != ReasonMaxDeliveries || last.DeliveryCount != 4 {
			t.Errorf("last action = %+v, want term(max_deliveries) on delivery 4", last)
		}
		dl := h.dlq.deadLetters(t)
		if len(dl) != 1 || dl[0].Reason != ReasonMaxDeliveries || dl[0].Status != 503 || dl[0].Deliveries != 4 ||
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
	})
}

// Decision table, row 5: an invalid job → dead letter at once with the
// reason, then Term; the target sees nothing.
func TestDecisionInvalidJob(t *testing.T) {
	cases := []struct {
		name   string
		data   string
		reason string
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
				if len(evs) != 1 || evs[0].Kind != memory.EventTerm || evs[0].Reason != tc.reason {
					t.Fatalf("queue actions = %+v, want one term(%s)", evs, tc.reason)
				}
				dl := h.dlq.deadLetters(t)
				if len(dl) != 1 || dl[0].Reason != tc.reason || dl[0].ID != "m1" || dl[0].Attempts != 0 || dl[0].Headers["Sluice-Type"] != "x" {
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

// A request already sent when shutdown starts may finish within
// shutdown_timeout and is settled by its result; one that outlives it is
// cut and released.
func TestShutdownInFlightRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{ShutdownTimeout: 5 * time.Second}, memory.Config{})
		h.target.on("fast", func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(3 * time.Second)
			w.WriteHeader(200)
		})
		h.target.on("slow", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-time.After(8 * time.Second):
				w.WriteHeader(200)
			case <-r.Context().Done():
			}
		})
		h.job("fast", nil)
		h.job("slow", nil)
		h.start()
		h.until("both sent", func() bool { return h.target.count() == 2 })
		start := time.Now()
		h.stop()
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("shutdown took %v, want shutdown_timeout (5s)", d)
		}
		if got := kinds(h.events("fast")); !slices.Equal(got, []memory.EventKind{memory.EventAck}) {
			t.Errorf("fast: %v, want [ack]", got)
		}
		evs := h.events("slow")
		if len(evs) != 1 || evs[0].Kind != memory.EventNak || evs[0].Delay != 0 {
			t.Errorf("slow: %+v, want nak(0)", evs)
		}
	})
}

// While a job waits, its ack deadline is extended every ack_wait/3, so the
// queue never redelivers it.
func TestInProgressWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, memory.Config{AckWait: 30 * time.Second})
		h.lim.block = true
		h.job("j1", nil)
		h.start()
		time.Sleep(95 * time.Second)
		var inProgress int
		for _, e := range h.q.Events() {
			if e.Kind == memory.EventInProgress {
				inProgress++
			}
		}
		if inProgress != 9 {
			t.Errorf("InProgress calls in 95 s = %d, want 9 (every 10 s)", inProgress)
		}
		st := h.q.Stats()
		if st.Redelivered != 0 {
			t.Errorf("job was redelivered while waiting")
		}
		h.lim.open()
		h.until("j1 settled", func() bool { return h.settled("j1") })
		h.stop()
		if got := kinds(h.events("j1")); !slices.Equal(got, []memory.EventKind{memory.EventAck}) {
			t.Errorf("queue actions = %v, want [ack]", got)
		}
	})
}

// countingSource records how much the worker asks for and how many
// messages it holds.
type countingSource struct {
	src     Source
	mu      sync.Mutex
	maxAsk  int
	held    int
	maxHeld int
}

func (c *countingSource) Receive(ctx context.Context, n int) ([]sources.Message, error) {
	c.mu.Lock()
	c.maxAsk = max(c.maxAsk, n)
	c.mu.Unlock()
	msgs, err := c.src.Receive(ctx, n)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.held += len(msgs)
	c.maxHeld = max(c.maxHeld, c.held)
	out := make([]sources.Message, len(msgs))
	for i, m := range msgs {
		out[i] = &countedMessage{Message: m, c: c}
	}
	return out, err
}

type countedMessage struct {
	sources.Message
	c    *countingSource
	once sync.Once
}

func (m *countedMessage) done() {
	m.once.Do(func() { m.c.mu.Lock(); m.c.held--; m.c.mu.Unlock() })
}
func (m *countedMessage) Ack(ctx context.Context) error { m.done(); return m.Message.Ack(ctx) }
func (m *countedMessage) Nak(ctx context.Context, d time.Duration) error {
	m.done()
	return m.Message.Nak(ctx, d)
}
func (m *countedMessage) Term(ctx context.Context, r string) error {
	m.done()
	return m.Message.Term(ctx, r)
}

// The worker never holds more than max_in_flight jobs and asks only for
// the room it has.
func TestMaxInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := memory.NewQueue(memory.Config{})
		for i := range 100 {
			q.Publish(context.Background(), sources.Outgoing{ID: fmt.Sprint("j", i), Data: []byte(`{}`)})
		}
		src := &countingSource{src: q.Source()}
		target := newScript()
		target.on("", func(w http.ResponseWriter, r *http.Request) { time.Sleep(time.Second); w.WriteHeader(200) })
		m, _ := NewMetrics(prometheus.NewRegistry())
		w, err := New(Config{MaxInFlight: 7}, Deps{Source: src, Target: handlerTarget{h: target}, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		time.Sleep(500 * time.Millisecond) // the first pull took all the room
		if got := testutil.ToFloat64(m.inFlight); got != 7 {
			t.Errorf("sluice_jobs_in_flight = %v, want 7", got)
		}
		for target.count() < 100 {
			time.Sleep(time.Second)
		}
		time.Sleep(2 * time.Second)
		cancel()
		<-done
		if src.maxAsk > 7 || src.maxHeld > 7 {
			t.Errorf("max asked %d, max held %d; want both <= 7", src.maxAsk, src.maxHeld)
		}
		if got := testutil.ToFloat64(m.jobs.WithLabelValues(OutcomeSucceeded, "default")); got != 100 {
			t.Errorf("sluice_jobs_total{succeeded,default} = %v, want 100", got)
		}
		if got := testutil.ToFloat64(m.inFlight); got != 0 {
			t.Errorf("sluice_jobs_in_flight after Run = %v, want 0", got)
		}
	})
}

// A dead letter that cannot be published is not acked: the job is naked
// and comes back.
func TestDeadLetterPublishFailureNaks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, memory.Config{})
		h.dlq.fail = errors.New("nats: timeout")
		h.publish(sources.Outgoing{ID: "m1", Data: []byte(`nope`)})
		h.start()
		h.until("m1 naked", func() bool { return len(h.events("m1")) > 0 })
		h.stop()
		evs := h.events("m1")
		if evs[0].Kind != memory.EventNak {
			t.Errorf("queue actions = %+v, want nak first", evs)
		}
		if h.settled("m1") {
			t.Errorf("m1 settled although its dead letter was not published")
		}
	})
}

// The limiter hears every attempt's outcome.
func TestLimiterObservesEveryAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Config{}, memory.Config{})
		h.target.on("j1", status(429, "", "Retry-After", "1"), status(500, ""), status(200, ""))
		h.job("j1", map[string]any{"type": "export"})
		h.start()
		h.until("j1 settled", func() bool { return h.settled("j1") })
		h.stop()
		var got []limiter.Kind
		for _, o := range h.lim.observed {
			got = append(got, o.Kind)
		}
		if want := []limiter.Kind{limiter.Throttle, limiter.ServerError, limiter.Success}; !slices.Equal(got, want) {
			t.Errorf("observed %v, want %v", got, want)
		}
	})
}

var _ Limiter = (*limiter.Limiter)(nil)

// With the real limiter every attempt waits for its units: at 60 units per
// minute and a bucket of one unit, jobs of cost 1 reach the target one per
// second; a job of cost 5 is granted when the bucket is full and leaves a
// debt of 4 units that the next job waits out.
func TestRealLimiterPacesAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lcfg := limiter.DefaultConfig()
		lcfg.InitialUnitsPerMinute = 60
		lcfg.Burst = time.Second
		lim, err := limiter.New(lcfg)
		if err != nil {
			t.Fatal(err)
		}
		q, _ := memory.NewQueue(memory.Config{})
		target := newScript()
		w, err := New(Config{MaxInFlight: 1, Jobs: testJobs()}, Deps{Source: q.Source(), Target: handlerTarget{h: target}, Limiter: lim})
		if err != nil {
			t.Fatal(err)
		}
		for i, typ := range []string{"default", "default", "default", "export", "default"} {
			q.Publish(context.Background(), sources.Outgoing{ID: fmt.Sprint(i), Data: fmt.Appendf(nil, `{"type":%q,"headers":{"X-Job":"a"}}`, typ)})
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		for target.count() < 5 {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		<-done
		hits := target.requests("a")
		var offsets []time.Duration
		for _, h := range hits {
			offsets = append(offsets, h.At.Sub(hits[0].At))
		}
		want := []time.Duration{0, time.Second, 2 * time.Second, 3 * time.Second, 8 * time.Second}
		if !slices.Equal(offsets, want) {
			t.Errorf("requests at %v, want %v", offsets, want)
		}
	})
}

// checkTarget refuses paths under /admin without sending them.
type checkTarget struct{ handlerTarget }

func (c checkTarget) Check(r Request) error {
	if strings.HasPrefix(r.Path, "/admin") {
		return errors.New("httpapi: invalid request: path leaves the allowed prefix")
	}
	return nil
}

// A target that can check a request refuses it before the job waits for
// units; the job is dead-lettered as an invalid request.
func TestCheckerRefusesBeforeWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := memory.NewQueue(memory.Config{})
		target := newScript()
		lim := &gate{}
		dlq := &recordOutput{}
		w, err := New(Config{Jobs: testJobs()}, Deps{Source: q.Source(), Target: checkTarget{handlerTarget{h: target}}, Limiter: lim, DeadLetters: dlq})
		if err != nil {
			t.Fatal(err)
		}
		q.Publish(context.Background(), sources.Outgoing{ID: "m1", Data: []byte(`{"path":"/admin/x"}`)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		for dlq.count() == 0 {
			time.Sleep(100 * time.Millisecond)
		}
		cancel()
		<-done
		dl := dlq.deadLetters(t)
		if dl[0].Reason != ReasonInvalidRequest || !strings.Contains(dl[0].Detail, "allowed prefix") {
			t.Errorf("dead letter = %+v", dl[0])
		}
		if target.count() != 0 || lim.waitCount() != 0 {
			t.Errorf("target saw %d requests, limiter %d waits; want 0 and 0", target.count(), lim.waitCount())
		}
	})
}

func TestConfigValidate(t *testing.T) {
	bad := map[string]Config{
		"max_in_flight":  {MaxInFlight: -1},
		"max_attempts":   {MaxAttempts: -2},
		"backoff.cap":    {BackoffBase: 10 * time.Second, BackoffCap: time.Second},
		"ack_wait":       {AckWait: -time.Second},
		"result_headers": {ResultHeaders: []string{"X Bad"}},
		"jobs.envelope":  {Jobs: JobsConfig{Envelope: "xml"}},
	}
	for field, c := range bad {
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c, err, field)
		}
	}
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("the zero Config: %v", err)
	}
	if _, err := New(Config{}, Deps{}); err == nil {
		t.Errorf("New without a source and a target succeeded")
	}
}

// Attempts are counted by result and timed by status class; the type label
// of an unconfigured type is "other".
func TestMetricsLabels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		q, _ := memory.NewQueue(memory.Config{})
		target := newScript()
		target.on("a", status(503, ""), status(200, ""))
		m, err := NewMetrics(prometheus.NewRegistry())
		if err != nil {
			t.Fatal(err)
		}
		w, err := New(Config{Jobs: testJobs()}, Deps{Source: q.Source(), Target: handlerTarget{h: target}, Metrics: m})
		if err != nil {
			t.Fatal(err)
		}
		w.jitter = func(time.Duration) time.Duration { return 0 }
		q.Publish(context.Background(), sources.Outgoing{ID: "1", Data: []byte(`{"type":"made-up-1","headers":{"X-Job":"a"}}`)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- w.Run(ctx) }()
		for target.count() < 2 {
			time.Sleep(100 * time.Millisecond)
		}
		time.Sleep(time.Second)
		cancel()
		<-done
		checks := []struct {
			name string
			got  float64
			want float64
		}{
			{"attempts{server_error}", testutil.ToFloat64(m.attempts.WithLabelValues("server_error")), 1},
			{"attempts{success}", testutil.ToFloat64(m.attempts.WithLabelValues("success")), 1},
			{"jobs{succeeded,other}", testutil.ToFloat64(m.jobs.WithLabelValues(OutcomeSucceeded, "other")), 1},
			{"latency series (2xx, 5xx)", float64(testutil.CollectAndCount(m.latency)), 2},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
			}
		}
	})
}
