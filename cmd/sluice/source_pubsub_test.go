package main

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/gcppubsub"
)

func TestPubsubConfigDecode(t *testing.T) {
	cfg, err := parseConfigWith([]byte(`
source:
  kind: pubsub
  pubsub:
    project: my-project
    subscription: jobs-sub
    topic: jobs
    dead_letter_topic: jobs-dead
    ack_deadline: 120s
    poll_interval: 2s
    setup: true
    max_delivery_attempts: 20
dead_letters:
  kind: none
`), noEnv, nil, false)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.Source.PubSub.lib(nil)
	want := gcppubsub.Config{Project: "my-project", Subscription: "jobs-sub", Topic: "jobs", DeadLetterTopic: "jobs-dead",
		AckDeadline: 120 * time.Second, PollInterval: 2 * time.Second, Setup: true, MaxDeliveryAttempts: 20}
	if got.Project != want.Project || got.Subscription != want.Subscription || got.Topic != want.Topic ||
		got.DeadLetterTopic != want.DeadLetterTopic || got.AckDeadline != want.AckDeadline ||
		got.PollInterval != want.PollInterval || got.Setup != want.Setup || got.MaxDeliveryAttempts != want.MaxDeliveryAttempts {
		t.Errorf("decoded %+v, want %+v", got, want)
	}
}

func noEnv(string) (string, bool) { return "", false }

func TestPubsubConfigErrors(t *testing.T) {
	cases := []struct{ yaml, want string }{
		{"    subscription: jobs\n", "config: source.pubsub.project: must be set"},
		{"    project: p-123456\n    ack_deadline: 700s\n", "config: source.pubsub.ack_deadline: must be between 1s and 10m0s, got 11m40s (line 5)"},
		{"    project: p-123456\n    poll_interval: 0s\n", "config: source.pubsub.poll_interval: must be > 0, got 0s (line 5)"},
		{"    project: p-123456\n    dead_letter_topic: sluice-jobs\n", "config: source.pubsub.dead_letter_topic: must differ from source.pubsub.topic"},
		{"    project: p-123456\n    max_delivery_attempts: 10\n    dead_letter_topic: dead\n", "config: source.pubsub.max_delivery_attempts: applies only when source.pubsub.setup creates the subscription"},
		{"    project: p-123456\n    subscription: 9bad\n", "config: source.pubsub.subscription: name must start with a letter"},
		{"    project: p-123456\n    credentials_file: /nonexistent/key.json\n", "config: source.pubsub.credentials_file: stat /nonexistent/key.json"},
		{"    project: p-123456\n    topics: x\n", "source.pubsub.topics"},
	}
	for _, tc := range cases {
		_, err := parseConfigWith([]byte("source:\n  kind: pubsub\n  pubsub:\n"+tc.yaml), noEnv, nil, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("config\n%s: error %v, want it to contain %q", tc.yaml, err, tc.want)
		}
	}
}

func TestPubsubConfigDefaults(t *testing.T) {
	c := defaultPubsubConfig()
	if err := c.validate("source.pubsub"); err == nil || !strings.Contains(err.Error(), "source.pubsub.project: must be set") {
		t.Fatalf("defaults without a project: %v", err)
	}
	c.Project = "my-project"
	if err := c.validate("source.pubsub"); err != nil {
		t.Fatalf("defaults with a project: %v", err)
	}
}

// TestPubsubOpenEmulator opens the section against an in-process fake
// reached through PUBSUB_EMULATOR_HOST, as a user of the emulator would.
func TestPubsubOpenEmulator(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	c := defaultPubsubConfig()
	c.Project = "sluice-test"
	c.Setup = true
	c.PollInterval = limiterDuration(100 * time.Millisecond)
	c.CredentialsFile = "/nonexistent/ignored-with-the-emulator.json"
	src, err := c.open(t.Context(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := src.Publish(t.Context(), sources.Outgoing{ID: "j1", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ms, err := src.Receive(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) == 1 {
			if ms[0].ID() != "j1" {
				t.Fatalf("received %q, want j1", ms[0].ID())
			}
			if err := ms[0].Ack(t.Context()); err != nil {
				t.Fatal(err)
			}
			return
		}
	}
	t.Fatal("nothing received")
}

func TestPubsubOpenError(t *testing.T) {
	srv := pstest.NewServer()
	t.Cleanup(func() { _ = srv.Close() })
	t.Setenv("PUBSUB_EMULATOR_HOST", srv.Addr)
	c := defaultPubsubConfig()
	c.Project = "sluice-test"
	c.Setup = false
	src, err := c.open(t.Context(), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = src.Receive(t.Context(), 1)
	if err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Fatalf("receive from a missing subscription: %v", err)
	}
}
