package gcppubsub

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"cloud.google.com/go/pubsub/v2/pstest"
	"google.golang.org/api/option"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicehq/sluice/sources"
)

const testProject = "sluice-test"

// fakeClock is pstest's clock: ack deadlines expire when the test says so.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fake is an in-process pstest server, on a fake clock unless made by
// newFakeRealClock.
type fake struct {
	srv   *pstest.Server
	clock *fakeClock
}

func newFake(t *testing.T) *fake {
	t.Helper()
	f := newFakeRealClock(t)
	f.clock = &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	f.srv.SetTimeNowFunc(f.clock.Now)
	return f
}

// newFakeRealClock is a pstest server on the real clock, for the
// conformance suite, which measures real time.
func newFakeRealClock(t *testing.T) *fake {
	t.Helper()
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	return &fake{srv: srv}
}

// opts are client options for a connection of its own to the server (a
// client closes the connection it was given).
func (f *fake) opts() []option.ClientOption {
	return emulatorOptions(f.srv.Addr)
}

// emulatorOptions reach an emulator at addr the way the client does when
// PUBSUB_EMULATOR_HOST is set.
func emulatorOptions(addr string) []option.ClientOption {
	return []option.ClientOption{
		option.WithEndpoint(addr),
		option.WithoutAuthentication(),
		option.WithGRPCDialOption(grpc.WithTransportCredentials(insecure.NewCredentials())),
	}
}

// config returns a Config on fresh names, with Setup, talking to f.
func (f *fake) config(t *testing.T) Config {
	n := uniqueName(t)
	return Config{
		Project:         testProject,
		Subscription:    n,
		Topic:           n,
		DeadLetterTopic: n + "-dead",
		AckDeadline:     10 * time.Second,
		PollInterval:    50 * time.Millisecond,
		Setup:           true,
		ClientOptions:   f.opts(),
		Logger:          testLogger(t),
	}
}

// messages returns what the server knows of the messages on topic.
func (f *fake) messages(topic string) []*pstest.Message {
	var out []*pstest.Message
	for _, m := range f.srv.Messages() {
		if m.Topic == topic {
			out = append(out, m)
		}
	}
	return out
}

func uniqueName(t *testing.T) string {
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "sluice-test-" + hex.EncodeToString(b)
}

func testLogger(t *testing.T) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.DiscardHandler)
}

func open(t *testing.T, cfg Config) *Source {
	t.Helper()
	s, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func publish(t *testing.T, s *Source, id, data string) {
	t.Helper()
	if err := s.Publish(t.Context(), sources.Outgoing{ID: id, Data: []byte(data)}); err != nil {
		t.Fatal(err)
	}
}

// receiveUntil calls Receive until it returns at least one message or the
// generous real-time deadline passes (the server runs on the network).
func receiveUntil(t *testing.T, s *Source, max int) []sources.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	for {
		ms, err := s.Receive(ctx, max)
		if err != nil {
			t.Fatalf("receive: %v", err)
		}
		if len(ms) > 0 {
			return ms
		}
	}
}

// receiveNone checks that one whole poll interval passes without a message.
func receiveNone(t *testing.T, s *Source) {
	t.Helper()
	ms, err := s.Receive(t.Context(), 10)
	if err != nil {
		t.Fatalf("receive: %v", err)
	}
	if len(ms) != 0 {
		t.Fatalf("received %d messages (first %q), want none", len(ms), ms[0].Data())
	}
}

// adminClient is a raw client to the same server, for inspection and
// cleanup.
func adminClient(t *testing.T, opts ...option.ClientOption) *pubsub.Client {
	t.Helper()
	c, err := pubsub.NewClient(t.Context(), testProject, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// deleteAll removes the subscription and topics of cfg; errors are
// reported, not fatal, since this runs in cleanup.
func deleteAll(t *testing.T, c *pubsub.Client, cfg Config) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	sub := fullName(cfg.Project, "subscriptions", cfg.Subscription)
	if err := c.SubscriptionAdminClient.DeleteSubscription(ctx, &pubsubpb.DeleteSubscriptionRequest{Subscription: sub}); err != nil {
		t.Logf("cleanup: delete %s: %v", sub, err)
	}
	for _, tp := range []string{cfg.Topic, cfg.DeadLetterTopic} {
		if tp == "" {
			continue
		}
		name := fullName(cfg.Project, "topics", tp)
		if err := c.TopicAdminClient.DeleteTopic(ctx, &pubsubpb.DeleteTopicRequest{Topic: name}); err != nil {
			t.Logf("cleanup: delete %s: %v", name, err)
		}
	}
}
