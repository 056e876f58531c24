// Package sourcetest is the conformance suite for sources.Source backends.
//
// A backend's test calls Run (or RunSynctest, for a backend driven by the
// time package alone) with a function that makes a fresh, empty queue for
// each case. Every case asks for the ack deadline it needs; a backend that
// cannot go that low (Pub/Sub's minimum is 10 s) uses its own minimum and
// reports it, and the suite scales its waits to it.
//
// The suite never asserts an absolute duration except "no earlier than":
// it polls with bounded, generous deadlines, so it passes on a loaded
// machine against a real server, and inside a testing/synctest bubble its
// waits take no real time.
package sourcetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/sources"
)

// Options are what one case asks of its queue.
type Options struct {
	// AckWait is the ack deadline the case needs.
	AckWait time.Duration
}

// Queue is a fresh, empty queue made for one case.
type Queue struct {
	// Open connects a new consumer of the queue: every consumer shares the
	// queue's messages (one durable consumer, one subscription), and each
	// can also publish to it. The suite closes every Source it opens.
	Open func(t *testing.T) sources.Source
	// AckWait is the ack deadline in effect, when the backend could not use
	// Options.AckWait; it must not be shorter. Zero means Options.AckWait.
	AckWait time.Duration
}

// NewQueue makes a fresh, empty queue for one case and registers its
// removal with t.Cleanup.
type NewQueue func(t *testing.T, opts Options) Queue

// Ack waits the cases ask for: short where the case waits for a deadline to
// pass, long where a redelivery would spoil the case.
const (
	shortAckWait = 2 * time.Second
	longAckWait  = time.Minute
)

type testCase struct {
	name    string
	ackWait time.Duration
	run     func(t *testing.T, h *harness)
}

var cases = []testCase{
	{"AckedReceivedOnce", shortAckWait, testAckedReceivedOnce},
	{"BoundedReceive", longAckWait, testBoundedReceive},
	{"NakDelay", shortAckWait, testNakDelay},
	{"TermNeverRedelivers", shortAckWait, testTermNeverRedelivers},
	{"InProgressExtendsDeadline", shortAckWait, testInProgress},
	{"ClosedConsumerRedelivered", shortAckWait, testClosedConsumerRedelivered},
	{"ConcurrentConsumers", longAckWait, testConcurrentConsumers},
}

// Run runs every case as a subtest, each against a fresh queue.
func Run(t *testing.T, newQueue NewQueue) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.run(t, newHarness(t, newQueue, c.ackWait))
		})
	}
}

// RunSynctest runs every case inside its own testing/synctest bubble, for
// backends whose only clock is the time package (sources/memory); the
// queue is made inside the bubble.
func RunSynctest(t *testing.T, newQueue NewQueue) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c.run(t, newHarness(t, newQueue, c.ackWait))
			})
		})
	}
}

type harness struct {
	q       Queue
	ackWait time.Duration
}

func newHarness(t *testing.T, newQueue NewQueue, ackWait time.Duration) *harness {
	t.Helper()
	q := newQueue(t, Options{AckWait: ackWait})
	if q.Open == nil {
		t.Fatal("sourcetest: NewQueue returned a Queue without Open")
	}
	if q.AckWait == 0 {
		q.AckWait = ackWait
	}
	if q.AckWait < ackWait {
		t.Fatalf("sourcetest: queue ack wait %s is shorter than the %s asked for", q.AckWait, ackWait)
	}
	return &harness{q: q, ackWait: q.AckWait}
}

// margin is the slack added to every bounded wait for an event that must
// happen: generous, since a real server on a loaded machine is slow.
func (h *harness) margin() time.Duration { return 3*h.ackWait + 20*time.Second }

// open opens a consumer that is closed at the end of the test unless the
// case closes it first with the returned function.
func (h *harness) open(t *testing.T) (sources.Source, func()) {
	t.Helper()
	src := h.q.Open(t)
	var once sync.Once
	closeFn := func() {
		once.Do(func() {
			if err := src.Close(); err != nil {
				t.Errorf("Close: %v", err)
			}
		})
	}
	t.Cleanup(closeFn)
	return src, closeFn
}

func publish(t *testing.T, src sources.Source, ids ...string) {
	t.Helper()
	for _, id := range ids {
		m := sources.Outgoing{ID: id, Data: payload(id), Headers: map[string]string{"Sluice-Test": id}}
		if err := src.Publish(t.Context(), m); err != nil {
			t.Fatalf("Publish %s: %v", id, err)
		}
	}
}

func payload(id string) []byte { return []byte(`{"id":"` + id + `"}`) }

func ids(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	return out
}

// poll receives batches of at most max messages until done reports true
// after a batch, or until the deadline. It reports whether done did.
// Every message of a batch is given to fn before done is asked.
func poll(t *testing.T, src sources.Source, max int, deadline time.Time, fn func(sources.Message), done func() bool) bool {
	t.Helper()
	ctx := t.Context()
	for !done() {
		if !time.Now().Before(deadline) {
			return false
		}
		rctx, cancel := context.WithDeadline(ctx, deadline)
		msgs, err := src.Receive(rctx, max)
		expired := rctx.Err() != nil
		cancel()
		if err != nil {
			if expired && ctx.Err() == nil {
				return done()
			}
			t.Fatalf("Receive: %v", err)
		}
		if len(msgs) > max {
			t.Fatalf("Receive(%d) returned %d messages", max, len(msgs))
		}
		for _, m := range msgs {
			fn(m)
		}
	}
	return true
}

// checkBody fails the test if m's payload or test header are not those
// published for its ID.
func checkBody(t *testing.T, m sources.Message) {
	t.Helper()
	if got, want := string(m.Data()), string(payload(m.ID())); got != want {
		t.Errorf("message %s: data %q, want %q", m.ID(), got, want)
	}
	if got := m.Headers()["Sluice-Test"]; got != m.ID() {
		t.Errorf("message %s: header Sluice-Test = %q, want %q", m.ID(), got, m.ID())
	}
}

func never() bool { return false }

// testAckedReceivedOnce: every published message is received, with its
// data, headers and a delivery count of 1, and once acked is not delivered
// again.
func testAckedReceivedOnce(t *testing.T, h *harness) {
	src, _ := h.open(t)
	want := ids("once", 20)
	publish(t, src, want...)

	seen := map[string]int{}
	known := map[string]bool{}
	for _, id := range want {
		known[id] = true
	}
	fn := func(m sources.Message) {
		seen[m.ID()]++
		switch {
		case !known[m.ID()]:
			t.Errorf("received unknown message %q", m.ID())
		case seen[m.ID()] > 1:
			t.Errorf("message %s received %d times though acked", m.ID(), seen[m.ID()])
		case m.DeliveryCount() != 1:
			t.Errorf("message %s: first delivery has DeliveryCount %d, want 1", m.ID(), m.DeliveryCount())
		}
		checkBody(t, m)
		if err := m.Ack(t.Context()); err != nil {
			t.Errorf("Ack %s: %v", m.ID(), err)
		}
	}
	if !poll(t, src, 10, time.Now().Add(h.margin()), fn, func() bool { return len(seen) == len(want) }) {
		t.Fatalf("received %d of %d messages", len(seen), len(want))
	}
	// Past the ack deadline, nothing acked comes back.
	poll(t, src, 10, time.Now().Add(h.ackWait+h.ackWait/2), fn, never)
}

// testBoundedReceive: a receive returns at most what was asked and leaves
// the rest to other consumers: a consumer asking for one message does not
// hold the others.
func testBoundedReceive(t *testing.T, h *harness) {
	a, _ := h.open(t)
	b, _ := h.open(t)
	want := ids("bounded", 10)
	publish(t, a, want...)

	var held []sources.Message
	if !poll(t, a, 1, time.Now().Add(h.margin()), func(m sources.Message) { held = append(held, m) },
		func() bool { return len(held) > 0 }) {
		t.Fatal("consumer A received nothing")
	}
	if len(held) != 1 {
		t.Fatalf("Receive(1) gave %d messages", len(held))
	}
	// If A had fetched more than it was asked for, B would not see them
	// before the (long) ack deadline.
	got := map[string]bool{held[0].ID(): true}
	fn := func(m sources.Message) {
		if got[m.ID()] {
			t.Errorf("message %s delivered twice", m.ID())
		}
		got[m.ID()] = true
		if err := m.Ack(t.Context()); err != nil {
			t.Errorf("Ack %s: %v", m.ID(), err)
		}
	}
	if !poll(t, b, 4, time.Now().Add(h.ackWait/2), fn, func() bool { return len(got) == len(want) }) {
		t.Fatalf("consumer B received %d of the %d messages A did not take: A prefetched beyond what it asked for", len(got)-1, len(want)-1)
	}
	if err := held[0].Ack(t.Context()); err != nil {
		t.Errorf("Ack %s: %v", held[0].ID(), err)
	}
}

// testNakDelay: Nak(delay) redelivers the message no earlier than delay,
// with a higher delivery count; Nak(0) redelivers it again.
func testNakDelay(t *testing.T, h *harness) {
	src, _ := h.open(t)
	publish(t, src, "nak-0000")

	// Longer than the ack wait, so a Nak that merely let the deadline
	// lapse would redeliver too early.
	delay := h.ackWait + h.ackWait/2
	var last sources.Message
	var count int
	var nakAt time.Time
	fn := func(m sources.Message) {
		if m.ID() != "nak-0000" {
			t.Errorf("received unknown message %q", m.ID())
			return
		}
		checkBody(t, m)
		last = m
	}
	got := func() bool { return last != nil }

	if !poll(t, src, 1, time.Now().Add(h.margin()), fn, got) {
		t.Fatal("message not received")
	}
	count = last.DeliveryCount()
	nakAt = time.Now()
	if err := last.Nak(t.Context(), delay); err != nil {
		t.Fatalf("Nak: %v", err)
	}
	last = nil
	if !poll(t, src, 1, time.Now().Add(delay+h.margin()), fn, got) {
		t.Fatalf("message not redelivered after Nak(%s)", delay)
	}
	if since := time.Since(nakAt); since < delay {
		t.Errorf("redelivered %s after Nak(%s), before the delay", since, delay)
	}
	if last.DeliveryCount() <= count {
		t.Errorf("DeliveryCount after Nak = %d, want > %d", last.DeliveryCount(), count)
	}
	count = last.DeliveryCount()

	if err := last.Nak(t.Context(), 0); err != nil {
		t.Fatalf("Nak(0): %v", err)
	}
	last = nil
	if !poll(t, src, 1, time.Now().Add(h.margin()), fn, got) {
		t.Fatal("message not redelivered after Nak(0)")
	}
	if last.DeliveryCount() <= count {
		t.Errorf("DeliveryCount after Nak(0) = %d, want > %d", last.DeliveryCount(), count)
	}
	if err := last.Ack(t.Context()); err != nil {
		t.Errorf("Ack: %v", err)
	}
}

// testTermNeverRedelivers: a terminated message is not delivered again,
// while an unsettled one beside it is (the control).
func testTermNeverRedelivers(t *testing.T, h *harness) {
	src, _ := h.open(t)
	publish(t, src, "term-0000", "term-0001")

	first := map[string]sources.Message{}
	if !poll(t, src, 2, time.Now().Add(h.margin()), func(m sources.Message) { first[m.ID()] = m },
		func() bool { return len(first) == 2 }) {
		t.Fatalf("received %d of 2 messages", len(first))
	}
	termAt := time.Now()
	if err := first["term-0000"].Term(t.Context(), "sourcetest: terminated on purpose"); err != nil {
		t.Fatalf("Term: %v", err)
	}
	// term-0001 is left to expire; it must come back, and term-0000 must
	// not, for at least two ack waits.
	controlBack := false
	fn := func(m sources.Message) {
		switch m.ID() {
		case "term-0000":
			t.Errorf("terminated message redelivered %s after Term (DeliveryCount %d)", time.Since(termAt), m.DeliveryCount())
		case "term-0001":
			controlBack = true
			if err := m.Ack(t.Context()); err != nil {
				t.Errorf("Ack: %v", err)
			}
		default:
			t.Errorf("received unknown message %q", m.ID())
		}
	}
	quiet := termAt.Add(2 * h.ackWait)
	poll(t, src, 2, termAt.Add(2*h.ackWait+h.margin()), fn, func() bool {
		return controlBack && !time.Now().Before(quiet)
	})
	if !controlBack {
		t.Error("the unsettled control message was never redelivered")
	}
}

// testInProgress: a message kept in progress is not redelivered, to this or
// another consumer, for several ack waits, and can then be acked.
func testInProgress(t *testing.T, h *harness) {
	a, _ := h.open(t)
	b, _ := h.open(t)
	publish(t, a, "progress-0000")

	var held sources.Message
	if !poll(t, a, 1, time.Now().Add(h.margin()), func(m sources.Message) { held = m },
		func() bool { return held != nil }) {
		t.Fatal("message not received")
	}
	fn := func(m sources.Message) {
		t.Errorf("message %s redelivered (DeliveryCount %d) while kept in progress", m.ID(), m.DeliveryCount())
	}
	hold := time.Now().Add(2*h.ackWait + h.ackWait/2)
	every := h.ackWait / 4
	for time.Now().Before(hold) {
		if err := held.InProgress(t.Context()); err != nil {
			t.Fatalf("InProgress: %v", err)
		}
		// Consumer B's receive paces the loop and watches for a redelivery.
		next := time.Now().Add(every)
		poll(t, b, 1, next, fn, never)
	}
	if err := held.Ack(t.Context()); err != nil {
		t.Fatalf("Ack after %s in progress: %v", 2*h.ackWait+h.ackWait/2, err)
	}
	poll(t, b, 1, time.Now().Add(h.ackWait+h.ackWait/2), fn, never)
}

// testClosedConsumerRedelivered: messages a closed consumer left unsettled
// are delivered to the next consumer.
func testClosedConsumerRedelivered(t *testing.T, h *harness) {
	a, closeA := h.open(t)
	want := ids("closed", 5)
	publish(t, a, want...)
	held := map[string]bool{}
	if !poll(t, a, 5, time.Now().Add(h.margin()), func(m sources.Message) { held[m.ID()] = true },
		func() bool { return len(held) == len(want) }) {
		t.Fatalf("consumer A received %d of %d messages", len(held), len(want))
	}
	closeA()

	b, _ := h.open(t)
	got := map[string]bool{}
	fn := func(m sources.Message) {
		if !held[m.ID()] {
			t.Errorf("received unknown message %q", m.ID())
		}
		if m.DeliveryCount() < 2 {
			t.Errorf("message %s: DeliveryCount %d after a redelivery, want >= 2", m.ID(), m.DeliveryCount())
		}
		checkBody(t, m)
		got[m.ID()] = true
		if err := m.Ack(t.Context()); err != nil {
			t.Errorf("Ack %s: %v", m.ID(), err)
		}
	}
	if !poll(t, b, 5, time.Now().Add(h.margin()), fn, func() bool { return len(got) == len(want) }) {
		t.Fatalf("consumer B received %d of the %d messages A left", len(got), len(want))
	}
}

// testConcurrentConsumers: 1,000 messages across 4 concurrent consumers are
// all acked, none twice.
func testConcurrentConsumers(t *testing.T, h *harness) {
	const n, consumers = 1000, 4
	pub, _ := h.open(t)
	want := ids("many", n)
	var g errgroup.Group
	g.SetLimit(8)
	for _, id := range want {
		g.Go(func() error {
			return pub.Publish(t.Context(), sources.Outgoing{ID: id, Data: payload(id)})
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("Publish: %v", err)
	}

	var (
		mu    sync.Mutex
		acked = make(map[string]int, n)
		total atomic.Int64
	)
	ctx, cancel := context.WithTimeout(t.Context(), h.ackWait/2+h.margin())
	defer cancel()
	var wg sync.WaitGroup
	for i := range consumers {
		src, _ := h.open(t)
		wg.Go(func() {
			for total.Load() < n && ctx.Err() == nil {
				msgs, err := src.Receive(ctx, 16)
				if err != nil {
					if ctx.Err() == nil {
						t.Errorf("consumer %d: Receive: %v", i, err)
					}
					return
				}
				if len(msgs) > 16 {
					t.Errorf("consumer %d: Receive(16) returned %d", i, len(msgs))
				}
				for _, m := range msgs {
					if err := m.Ack(ctx); err != nil {
						t.Errorf("consumer %d: Ack %s: %v", i, m.ID(), err)
						continue
					}
					mu.Lock()
					acked[m.ID()]++
					mu.Unlock()
					if total.Add(1) == n {
						cancel()
					}
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("consumers stopped: %v", err)
	}
	lost := 0
	for _, id := range want {
		switch c := acked[id]; {
		case c == 0:
			lost++
		case c > 1:
			t.Errorf("message %s acked %d times", id, c)
		}
	}
	if lost > 0 {
		t.Errorf("%d of %d messages never acked", lost, n)
	}
	if len(acked) > n {
		t.Errorf("acked %d distinct messages, published %d", len(acked), n)
	}
}
