package gcppubsub

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"

	"github.com/sluicehq/sluice/sources"
)

func TestPublishSetsJobIDAttribute(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	s := open(t, cfg)
	err := s.Publish(t.Context(), sources.Outgoing{ID: "job-1", Data: []byte("a"), Headers: map[string]string{"type": "sync"}})
	if err != nil {
		t.Fatal(err)
	}
	ms := f.messages(fullName(testProject, "topics", cfg.Topic))
	if len(ms) != 1 {
		t.Fatalf("server holds %d messages, want 1", len(ms))
	}
	if got := ms[0].Attributes; got[JobIDAttribute] != "job-1" || got["type"] != "sync" || len(got) != 2 {
		t.Errorf("attributes = %v, want %s=job-1 and type=sync", got, JobIDAttribute)
	}
	if ms[0].OrderingKey != "" {
		t.Errorf("ordering key = %q, want none", ms[0].OrderingKey)
	}

	got := receiveUntil(t, s, 1)
	if got[0].ID() != "job-1" || string(got[0].Data()) != "a" || got[0].Headers()["type"] != "sync" {
		t.Errorf("received id %q data %q headers %v", got[0].ID(), got[0].Data(), got[0].Headers())
	}
	if err := got[0].Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestPublishIsNotDeduplicated(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	s := open(t, cfg)
	publish(t, s, "same", "1")
	publish(t, s, "same", "2")
	if n := len(f.messages(fullName(testProject, "topics", cfg.Topic))); n != 2 {
		t.Fatalf("server holds %d messages, want 2: Pub/Sub does not deduplicate", n)
	}
}

func TestIDFallsBackToMessageID(t *testing.T) {
	f := newFake(t)
	s := open(t, f.config(t))
	if err := s.Publish(t.Context(), sources.Outgoing{Data: []byte("x")}); err != nil {
		t.Fatal(err)
	}
	m := receiveUntil(t, s, 1)[0].(*Message)
	if m.ID() == "" || m.ID() != m.MessageID() {
		t.Errorf("ID() = %q, want the message id %q", m.ID(), m.MessageID())
	}
	if _, ok := m.Headers()[JobIDAttribute]; ok {
		t.Errorf("headers %v carry %s for a message published without id", m.Headers(), JobIDAttribute)
	}
}

func TestPublishWithoutTopic(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	open(t, cfg) // creates the subscription
	cfg.Setup, cfg.Topic, cfg.DeadLetterTopic = false, "", ""
	s := open(t, cfg)
	err := s.Publish(t.Context(), sources.Outgoing{ID: "x", Data: []byte("x")})
	if !errors.Is(err, ErrNoTopic) {
		t.Fatalf("publish error = %v, want ErrNoTopic", err)
	}
}

// TestReceiveIsBounded checks that a receive of n leases exactly n messages
// on the server: nothing is prefetched.
func TestReceiveIsBounded(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	s := open(t, cfg)
	for i := range 10 {
		publish(t, s, string(rune('a'+i)), "x")
	}
	got := receiveUntil(t, s, 3)
	if len(got) > 3 {
		t.Fatalf("receive(3) returned %d", len(got))
	}
	delivered := 0
	for _, m := range f.messages(fullName(testProject, "topics", cfg.Topic)) {
		delivered += m.Deliveries
	}
	if delivered != len(got) {
		t.Fatalf("server delivered %d messages, receive returned %d: something was prefetched", delivered, len(got))
	}
}

func TestReceiveRejectsNonPositiveMax(t *testing.T) {
	f := newFake(t)
	s := open(t, f.config(t))
	if _, err := s.Receive(t.Context(), 0); err == nil {
		t.Fatal("receive(0) succeeded")
	}
}

func TestReceiveEmptyReturnsAfterPollInterval(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	cfg.PollInterval = 50 * time.Millisecond
	s := open(t, cfg)
	ms, err := s.Receive(t.Context(), 10)
	if err != nil || len(ms) != 0 {
		t.Fatalf("receive from an empty subscription: %d messages, error %v; want none and no error", len(ms), err)
	}
}

func TestReceiveCancelled(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	cfg.PollInterval = time.Minute
	s := open(t, cfg)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Receive(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("receive on a cancelled context: %v, want context.Canceled", err)
	}
}

func TestClose(t *testing.T) {
	f := newFake(t)
	s := open(t, f.config(t))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second close: %v", err)
	}
	if _, err := s.Receive(t.Context(), 1); !errors.Is(err, ErrClosed) {
		t.Errorf("receive after close: %v, want ErrClosed", err)
	}
	if err := s.Publish(t.Context(), sources.Outgoing{Data: []byte("x")}); !errors.Is(err, ErrClosed) {
		t.Errorf("publish after close: %v, want ErrClosed", err)
	}
}

// TestCloseDuringReceive: a Receive blocked in Pull returns ErrClosed.
func TestCloseDuringReceive(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	cfg.PollInterval = time.Minute
	s := open(t, cfg)
	done := make(chan error, 1)
	go func() {
		_, err := s.Receive(t.Context(), 1)
		done <- err
	}()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("receive interrupted by close: %v, want ErrClosed", err)
	}
}

// modacks returns the deadlines, in seconds, that the server was asked to
// set for the message.
func modacks(f *fake, m sources.Message) []int32 {
	var out []int32
	for _, ma := range f.srv.Message(m.(*Message).MessageID()).Modacks {
		out = append(out, ma.AckDeadline)
	}
	return out
}

func TestSettlementRPCs(t *testing.T) {
	cases := []struct {
		name   string
		settle func(context.Context, sources.Message) error
		want   []int32 // modack deadlines sent
		acks   int
	}{
		{"ack", func(ctx context.Context, m sources.Message) error { return m.Ack(ctx) }, nil, 1},
		{"nak 0", func(ctx context.Context, m sources.Message) error { return m.Nak(ctx, 0) }, []int32{0}, 0},
		{"nak negative", func(ctx context.Context, m sources.Message) error { return m.Nak(ctx, -time.Second) }, []int32{0}, 0},
		{"nak rounds up", func(ctx context.Context, m sources.Message) error { return m.Nak(ctx, 1500*time.Millisecond) }, []int32{2}, 0},
		{"nak 1ns", func(ctx context.Context, m sources.Message) error { return m.Nak(ctx, time.Nanosecond) }, []int32{1}, 0},
		{"nak capped at 600s", func(ctx context.Context, m sources.Message) error { return m.Nak(ctx, 2*time.Hour) }, []int32{600}, 0},
		{"in progress then ack", func(ctx context.Context, m sources.Message) error {
			if err := m.InProgress(ctx); err != nil {
				return err
			}
			return m.Ack(ctx)
		}, []int32{10}, 1},
		{"term without dead-letter topic", func(ctx context.Context, m sources.Message) error { return m.Term(ctx, "bad") }, nil, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFake(t)
			cfg := f.config(t)
			cfg.DeadLetterTopic = ""
			s := open(t, cfg)
			publish(t, s, "j", "x")
			m := receiveUntil(t, s, 1)[0]
			if err := tc.settle(t.Context(), m); err != nil {
				t.Fatal(err)
			}
			if got := modacks(f, m); !equal(got, tc.want) {
				t.Errorf("modack deadlines = %v, want %v", got, tc.want)
			}
			if got := f.srv.Message(m.(*Message).MessageID()).Acks; got != tc.acks {
				t.Errorf("acks = %d, want %d", got, tc.acks)
			}
		})
	}
}

func equal(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestSettleTwice(t *testing.T) {
	f := newFake(t)
	s := open(t, f.config(t))
	publish(t, s, "j", "x")
	m := receiveUntil(t, s, 1)[0]
	if err := m.Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
	for name, err := range map[string]error{
		"ack":         m.Ack(t.Context()),
		"nak":         m.Nak(t.Context(), 0),
		"term":        m.Term(t.Context(), "x"),
		"in progress": m.InProgress(t.Context()),
	} {
		if !errors.Is(err, ErrSettled) {
			t.Errorf("%s after ack: %v, want ErrSettled", name, err)
		}
	}
}

// TestNakDelayOnServerClock checks on pstest's clock that a nakked message
// comes back no earlier than its delay, with its count raised.
func TestNakDelayOnServerClock(t *testing.T) {
	f := newFake(t)
	s := open(t, f.config(t))
	publish(t, s, "j", "x")
	m := receiveUntil(t, s, 1)[0]
	if m.DeliveryCount() != 1 {
		t.Fatalf("first delivery count = %d, want 1", m.DeliveryCount())
	}
	if err := m.Nak(t.Context(), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(29 * time.Second)
	receiveNone(t, s)
	f.clock.Advance(2 * time.Second)
	again := receiveUntil(t, s, 1)[0]
	if again.ID() != "j" || again.DeliveryCount() != 2 {
		t.Fatalf("redelivered %q with count %d, want j with 2", again.ID(), again.DeliveryCount())
	}
	if err := again.Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := s.counts.len(); n != 0 {
		t.Errorf("%d delivery counts kept after ack, want 0", n)
	}
}

// TestInProgressOnServerClock: without InProgress a message comes back after
// the ack deadline; with it, it stays leased.
func TestInProgressOnServerClock(t *testing.T) {
	f := newFake(t)
	s := open(t, f.config(t)) // ack deadline 10 s
	publish(t, s, "held", "x")
	m := receiveUntil(t, s, 1)[0]
	for range 3 {
		f.clock.Advance(8 * time.Second)
		if err := m.InProgress(t.Context()); err != nil {
			t.Fatal(err)
		}
		receiveNone(t, s)
	}
	// 24 s after delivery, well past the 10 s deadline: still leased.
	f.clock.Advance(11 * time.Second)
	again := receiveUntil(t, s, 1)[0]
	if again.ID() != "held" || again.DeliveryCount() != 2 {
		t.Fatalf("got %q count %d after the lease lapsed, want held with 2", again.ID(), again.DeliveryCount())
	}
	if err := m.Ack(t.Context()); err == nil {
		// The first delivery's ack id is stale; pstest ignores it, and
		// the second delivery still needs its own ack.
		t.Log("ack with a stale ack id accepted by the server")
	}
	if err := again.Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
}

func TestTermPublishesRecordThenAcks(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	s := open(t, cfg)
	if err := s.Publish(t.Context(), sources.Outgoing{ID: "j", Data: []byte("payload"), Headers: map[string]string{"type": "t"}}); err != nil {
		t.Fatal(err)
	}
	m := receiveUntil(t, s, 1)[0]
	if err := m.Nak(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	m = receiveUntil(t, s, 1)[0]
	long := strings.Repeat("é", 600) // 1200 bytes
	if err := m.Term(t.Context(), long); err != nil {
		t.Fatal(err)
	}
	if acks := f.srv.Message(m.(*Message).MessageID()).Acks; acks != 1 {
		t.Errorf("acks = %d, want 1", acks)
	}
	recs := f.messages(fullName(testProject, "topics", cfg.DeadLetterTopic))
	if len(recs) != 1 {
		t.Fatalf("%d dead-letter records, want 1", len(recs))
	}
	r := recs[0]
	if string(r.Data) != "payload" {
		t.Errorf("record data %q, want the original", r.Data)
	}
	want := map[string]string{
		"type":                 "t",
		JobIDAttribute:         "j",
		DeliveryCountAttribute: "2",
		MessageIDAttribute:     m.(*Message).MessageID(),
		SubscriptionAttribute:  fullName(testProject, "subscriptions", cfg.Subscription),
	}
	for k, v := range want {
		if r.Attributes[k] != v {
			t.Errorf("record attribute %s = %q, want %q", k, r.Attributes[k], v)
		}
	}
	reason := r.Attributes[ReasonAttribute]
	if len(reason) > 1024 || !strings.HasPrefix(long, reason) || len(reason) < 1022 {
		t.Errorf("reason has %d bytes, want the first ≤1024 bytes of the reason on a rune boundary", len(reason))
	}
	f.clock.Advance(time.Minute)
	receiveNone(t, s)
}

// TestTermPublishFailureKeepsMessage: when the record cannot be published
// the message is neither acked nor settled, and comes back.
func TestTermPublishFailureKeepsMessage(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	s := open(t, cfg)
	publish(t, s, "j", "x")
	m := receiveUntil(t, s, 1)[0]
	admin := adminClient(t, f.opts()...)
	if err := admin.TopicAdminClient.DeleteTopic(t.Context(), &pubsubpb.DeleteTopicRequest{
		Topic: fullName(testProject, "topics", cfg.DeadLetterTopic)}); err != nil {
		t.Fatal(err)
	}
	if err := m.Term(t.Context(), "bad"); err == nil || errors.Is(err, ErrSettled) {
		t.Fatalf("term with a missing dead-letter topic: %v, want a publish error", err)
	}
	if acks := f.srv.Message(m.(*Message).MessageID()).Acks; acks != 0 {
		t.Fatalf("acked %d times although the record was not published", acks)
	}
	// Not settled: it can still be nakked, and comes back.
	if err := m.Nak(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	if again := receiveUntil(t, s, 1)[0]; again.ID() != "j" {
		t.Fatalf("got %q, want j back", again.ID())
	}
}

// TestDeliveryAttemptFromDeadLetterPolicy: with MaxDeliveryAttempts the
// subscription gets a dead-letter policy and DeliveryCount is Pub/Sub's.
func TestDeliveryAttemptFromDeadLetterPolicy(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	cfg.MaxDeliveryAttempts = 5
	s := open(t, cfg)
	admin := adminClient(t, f.opts()...)
	sub, err := admin.SubscriptionAdminClient.GetSubscription(t.Context(),
		&pubsubpb.GetSubscriptionRequest{Subscription: fullName(testProject, "subscriptions", cfg.Subscription)})
	if err != nil {
		t.Fatal(err)
	}
	if p := sub.GetDeadLetterPolicy(); p.GetMaxDeliveryAttempts() != 5 || p.GetDeadLetterTopic() != fullName(testProject, "topics", cfg.DeadLetterTopic) {
		t.Fatalf("dead-letter policy %v", p)
	}
	publish(t, s, "j", "x")
	for want := 1; want <= 3; want++ {
		m := receiveUntil(t, s, 1)[0].(*Message)
		if m.DeliveryCount() != want || m.counted {
			t.Fatalf("delivery %d: count %d (in-process %v), want Pub/Sub's attempt", want, m.DeliveryCount(), m.counted)
		}
		if err := m.Nak(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.counts.len(); n != 0 {
		t.Errorf("%d in-process counts kept although Pub/Sub counts", n)
	}
}

// TestDeliveryCountIsPerProcess documents the limitation: without a
// dead-letter policy a second consumer starts counting at 1.
func TestDeliveryCountIsPerProcess(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	a := open(t, cfg)
	b := open(t, cfg)
	publish(t, a, "j", "x")
	m := receiveUntil(t, a, 1)[0]
	if err := m.Nak(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	m = receiveUntil(t, a, 1)[0]
	if m.DeliveryCount() != 2 {
		t.Fatalf("second delivery to a: count %d, want 2", m.DeliveryCount())
	}
	if err := m.Nak(t.Context(), 0); err != nil {
		t.Fatal(err)
	}
	m = receiveUntil(t, b, 1)[0]
	if m.DeliveryCount() != 1 {
		t.Fatalf("third delivery, first to b: count %d, want 1 (counts are per process)", m.DeliveryCount())
	}
}
