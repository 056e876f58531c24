package gcppubsub

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/grpc/codes"

	"github.com/sluicehq/sluice/sources"
)

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
	s := open(t, Config{Project: testProject, Subscription: n, Topic: n, Setup: true, PollInterval: testPoll})
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
	// On the bubble's clock the 300 ms poll passes only while every
	// goroutine of the client waits on a timer or a channel, never while a
	// connection attempt is on its way: a loaded machine that takes longer
	// to be refused does not end the poll before the first attempt fails.
	synctest.Test(t, func(t *testing.T) {
		cfg := Config{Project: testProject, Subscription: "jobs", PollInterval: 300 * time.Millisecond,
			ClientOptions: emulatorOptions(addr)}
		s := open(t, cfg)
		ms, err := s.Receive(t.Context(), 1)
		if err == nil || !strings.Contains(err.Error(), "Unavailable") {
			t.Fatalf("receive from an unreachable server: %d messages, error %v; want an Unavailable error", len(ms), err)
		}
	})
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
