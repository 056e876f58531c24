package run

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/sources"
)

// TestPubsubOpenEmulator opens the section against an in-process fake
// reached through PUBSUB_EMULATOR_HOST, as a user of the emulator would.
func TestPubsubOpenEmulator(t *testing.T) {
	backends.FakePubSub(t)
	c := config.Default().Source.PubSub
	c.Project = "sluice-test"
	c.Setup = true
	// Long: Receive returns as soon as a message is there, and a pull
	// answered after the interval ended would leave it leased to nobody
	// for the ack deadline.
	c.PollInterval = time.Minute
	c.CredentialsFile = "/nonexistent/ignored-with-the-emulator.json"
	src, err := openPubSub(t.Context(), c, slog.New(slog.DiscardHandler))
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
	backends.FakePubSub(t)
	c := config.Default().Source.PubSub
	c.Project = "sluice-test"
	c.Setup = false
	src, err := openPubSub(t.Context(), c, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	_, err = src.Receive(t.Context(), 1)
	if err == nil || !strings.Contains(err.Error(), "NotFound") {
		t.Fatalf("receive from a missing subscription: %v", err)
	}
}
