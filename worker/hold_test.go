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

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/memory"
)

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
		m := NewMetrics()
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
		if got := testutil.ToFloat64(m.jobs.WithLabelValues(OutcomeSucceeded.String(), "default")); got != 100 {
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
		var got []call.Kind
		for _, o := range h.lim.observed {
			got = append(got, o.Kind)
		}
		if want := []call.Kind{call.Throttle, call.ServerError, call.Success}; !slices.Equal(got, want) {
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
		lcfg.SlowStart = false // a fixed rate: slow start would double it every 2 s
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

func (c checkTarget) Check(r call.Request) error {
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
		if dl[0].Reason != ReasonInvalidRequest.String() || !strings.Contains(dl[0].Detail, "allowed prefix") {
			t.Errorf("dead letter = %+v", dl[0])
		}
		if target.count() != 0 || lim.waitCount() != 0 {
			t.Errorf("target saw %d requests, limiter %d waits; want 0 and 0", target.count(), lim.waitCount())
		}
	})
}
