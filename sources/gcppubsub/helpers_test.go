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

// testPoll is the poll interval of the tests' sources. It is long on
// purpose: Receive returns as soon as the server has a message, so the
// interval only ends a receive that finds nothing, and a pull whose reply
// arrives after its interval ended leaves its messages leased to nobody
// until their ack deadline (docs/pubsub.md), which on the fake clock never
// comes. With 50 ms, a loaded machine lost a message that way now and then.
// Checks that nothing can be received use receiveNone instead.
const testPoll = time.Minute

// config returns a Config on fresh names, with Setup, talking to f.
func (f *fake) config(t *testing.T) Config {
	n := uniqueName(t)
	return Config{
		Project:         testProject,
		Subscription:    n,
		Topic:           n,
		DeadLetterTopic: n + "-dead",
		AckDeadline:     10 * time.Second,
		PollInterval:    testPoll,
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

// receiveUntil calls Receive until it returns at least one message. s
// should poll for testPoll (see there). The two minutes are only a net
// against a hang.
func receiveUntil(t *testing.T, s *Source, max int) []sources.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	for {
		ms, err := s.Receive(ctx, max)
		if err != nil {
			t.Fatalf("receive: %v (poll interval %v)", err, s.cfg.PollInterval)
		}
		if len(ms) > 0 {
			return ms
		}
	}
}

// receiveNone checks that the server has no message to deliver on s's
// subscription now: one Pull with no deadline of the client's, which pstest
// answers with what it can deliver, at once or after its own half-second
// wait. Unlike a Receive cut short by its poll interval, its answer cannot
// come too late to be read: a message the server would lease is reported,
// never leased to nobody. The minute is only a net for a server that holds
// an empty pull longer (the emulator may): such a pull counts as empty.
func receiveNone(t *testing.T, s *Source) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	resp, err := s.client.SubscriptionAdminClient.Pull(ctx, &pubsubpb.PullRequest{Subscription: s.subscription, MaxMessages: 10})
	if err != nil && ctx.Err() == nil {
		t.Fatalf("pull: %v", err)
	}
	if rms := resp.GetReceivedMessages(); len(rms) != 0 {
		t.Fatalf("received %d messages (first %q), want none", len(rms), rms[0].GetMessage().GetData())
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
