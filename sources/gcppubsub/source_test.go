package gcppubsub

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"

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
	s := open(t, f.config(t))
	receiveNone(t, s)
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

func TestSetup(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	cfg.AckDeadline = 42 * time.Second
	open(t, cfg)
	admin := adminClient(t, f.opts()...)
	sub, err := admin.SubscriptionAdminClient.GetSubscription(t.Context(),
		&pubsubpb.GetSubscriptionRequest{Subscription: fullName(testProject, "subscriptions", cfg.Subscription)})
	if err != nil {
		t.Fatal(err)
	}
	if sub.GetAckDeadlineSeconds() != 42 || sub.GetTopic() != fullName(testProject, "topics", cfg.Topic) || sub.GetDeadLetterPolicy() != nil {
		t.Errorf("subscription %v", sub)
	}
	for _, tp := range []string{cfg.Topic, cfg.DeadLetterTopic} {
		if _, err := admin.TopicAdminClient.GetTopic(t.Context(), &pubsubpb.GetTopicRequest{Topic: fullName(testProject, "topics", tp)}); err != nil {
			t.Errorf("topic %s: %v", tp, err)
		}
	}

	// Again: existing resources are fine; another ack deadline is logged.
	var logs strings.Builder
	var mu sync.Mutex
	cfg.AckDeadline = 30 * time.Second
	cfg.Logger = slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))
	open(t, cfg)
	mu.Lock()
	got := logs.String()
	mu.Unlock()
	if !strings.Contains(got, "another ack deadline") {
		t.Errorf("no warning about the ack deadline in %q", got)
	}

	// A subscription on another topic is an error.
	other := cfg
	other.Topic = uniqueName(t)
	other.DeadLetterTopic = ""
	if _, err := Open(t.Context(), other); err == nil || !strings.Contains(err.Error(), "exists on topic") {
		t.Fatalf("open on a subscription of another topic: %v", err)
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *strings.Builder
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func TestOpenWithoutSetupOnMissingSubscription(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	cfg.Setup = false
	s := open(t, cfg)
	_, err := s.Receive(t.Context(), 1)
	if err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Fatalf("receive from a missing subscription: %v, want NotFound", err)
	}
}

func TestSetupErrorsAreReported(t *testing.T) {
	srv := pstest.NewServer(pstest.WithErrorInjection("CreateTopic", codes.PermissionDenied, "no"))
	t.Cleanup(func() { _ = srv.Close() })
	cfg := Config{Project: testProject, Subscription: "sub", Topic: "top", Setup: true,
		ClientOptions: emulatorOptions(srv.Addr)}
	_, err := Open(t.Context(), cfg)
	if err == nil || !strings.Contains(err.Error(), "create topic") || !strings.Contains(err.Error(), "PermissionDenied") {
		t.Fatalf("open: %v, want a create topic error", err)
	}
}

// TestEmulatorHostEnv checks that PUBSUB_EMULATOR_HOST alone sends every
// client (admin, pull, publish) to the emulator without credentials.
func TestEmulatorHostEnv(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/credentials.json")
	n := uniqueName(t)
	s := open(t, Config{Project: testProject, Subscription: n, Topic: n, Setup: true, PollInterval: 50 * time.Millisecond})
	publish(t, s, "j", "x")
	m := receiveUntil(t, s, 1)[0]
	if err := m.InProgress(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := m.Ack(t.Context()); err != nil {
		t.Fatal(err)
	}
	if acks := srv.Message(m.(*Message).MessageID()).Acks; acks != 1 {
		t.Fatalf("acks on the emulator = %d, want 1", acks)
	}
}

// TestLeaseOnReceive: when the subscription's ack deadline is not known to
// be AckDeadline, a received batch is extended to it with one
// ModifyAckDeadline; when Setup saw it equal, nothing is sent.
func TestLeaseOnReceive(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t) // Setup creates the subscription with 10 s
	creator := open(t, cfg)
	if creator.extendOnReceive {
		t.Error("extendOnReceive set on a subscription Setup created with AckDeadline")
	}
	same := open(t, cfg)
	if same.extendOnReceive {
		t.Error("extendOnReceive set on an existing subscription with the same ack deadline")
	}
	cfg.AckDeadline = 30 * time.Second
	other := open(t, cfg)
	if !other.extendOnReceive {
		t.Error("extendOnReceive not set on a subscription with another ack deadline")
	}
	cfg.Setup = false
	s := open(t, cfg)
	publish(t, s, "a", "x")
	publish(t, s, "b", "x")
	var got []sources.Message
	for len(got) < 2 {
		got = append(got, receiveUntil(t, s, 2)...)
	}
	for _, m := range got {
		if ds := modacks(f, m); !equal(ds, []int32{30}) {
			t.Errorf("message %s: modack deadlines %v, want [30] on receipt", m.ID(), ds)
		}
	}
	// The lease holds past the subscription's 10 s.
	f.clock.Advance(20 * time.Second)
	receiveNone(t, s)
	f.clock.Advance(11 * time.Second)
	if again := receiveUntil(t, s, 2); len(again) == 0 {
		t.Fatal("not redelivered after the extended deadline")
	}
}

// TestReceiveUnreachableServer: a server that cannot be reached is an
// error, not an empty subscription.
func TestReceiveUnreachableServer(t *testing.T) {
	srv := pstest.NewServer()
	addr := srv.Addr
	_ = srv.Close() // nothing listens there now
	cfg := Config{Project: testProject, Subscription: "jobs", PollInterval: 300 * time.Millisecond,
		ClientOptions: emulatorOptions(addr)}
	s := open(t, cfg)
	ms, err := s.Receive(t.Context(), 1)
	if err == nil || !strings.Contains(err.Error(), "Unavailable") {
		t.Fatalf("receive from an unreachable server: %d messages, error %v; want an Unavailable error", len(ms), err)
	}
}

// Setup makes a subscription on the dead-letter topic, so that its records
// are kept: Pub/Sub drops what a topic with no subscription receives (#15).
func TestSetupKeepsDeadLetters(t *testing.T) {
	f := newFake(t)
	cfg := f.config(t)
	s := open(t, cfg)
	dead := fullName(testProject, "topics", cfg.DeadLetterTopic)
	admin := adminClient(t, f.opts()...)
	sub, err := admin.SubscriptionAdminClient.GetSubscription(t.Context(),
		&pubsubpb.GetSubscriptionRequest{Subscription: DeadLetterSubscription(dead)})
	if err != nil {
		t.Fatalf("no subscription keeps the dead letters: %v", err)
	}
	if sub.GetTopic() != dead || sub.GetName() != fullName(testProject, "subscriptions", cfg.DeadLetterTopic+"-records") {
		t.Errorf("subscription %s on %s", sub.GetName(), sub.GetTopic())
	}
	// A terminated job's record can be read back from it.
	publish(t, s, "j1", `{"id":"j1"}`)
	var ms []sources.Message
	for len(ms) == 0 {
		if ms, err = s.Receive(t.Context(), 1); err != nil {
			t.Fatal(err)
		}
	}
	if err := ms[0].Term(t.Context(), "client_error"); err != nil {
		t.Fatal(err)
	}
	resp, err := admin.SubscriptionAdminClient.Pull(t.Context(), &pubsubpb.PullRequest{Subscription: sub.GetName(), MaxMessages: 10})
	if err != nil || len(resp.GetReceivedMessages()) != 1 || string(resp.GetReceivedMessages()[0].GetMessage().GetData()) != `{"id":"j1"}` {
		t.Fatalf("pull from the dead letters' subscription: %v %v", resp.GetReceivedMessages(), err)
	}
	// Open again: the existing subscription is fine.
	open(t, cfg)
}
