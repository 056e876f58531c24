package queue

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/sources"
)

// status on Pub/Sub says that the source cannot report the queue's state,
// by its kind, never by a Go type name (#15).
func TestStatusPubSub(t *testing.T) {
	backends.FakePubSub(t)
	cfg := config.Default().Source
	cfg.Kind = config.SourcePubSub
	cfg.PubSub.Project = "sluice-test"
	cfg.PubSub.Setup = true
	err := statusOnce(t.Context(), cfg, false, &bytes.Buffer{}, &bytes.Buffer{})
	if err == nil || err.Error() != "status: source.kind pubsub cannot report the queue's state" {
		t.Fatalf("status on Pub/Sub: %v", err)
	}
}

// Jobs a stopping worker handed back are not shown as in flight: JetStream
// counts them as ack pending until a worker receives them again, and the
// table says "unsettled" (#15).
func TestStatusHandedBack(t *testing.T) {
	cfg := config.Default().Source
	cfg.JetStream.Embedded.StoreDir = t.TempDir()
	cfg.JetStream.Embedded.Port = -1
	src, err := run.OpenJetStream(t.Context(), cfg.JetStream, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	for _, id := range []string{"a", "b", "c"} {
		if err := src.Publish(t.Context(), sources.Outgoing{ID: id, Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := src.Receive(t.Context(), 2)
	if err != nil || len(ms) != 2 {
		t.Fatalf("received %d: %v", len(ms), err)
	}
	for _, m := range ms {
		if err := m.Nak(t.Context(), 0); err != nil { // a release at shutdown
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	if err := statusOnce(t.Context(), cfg, false, &out, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "in flight") || !strings.Contains(out.String(), "unsettled (ack pending)           2\n") {
		t.Errorf("status after 2 jobs were handed back:\n%s", out.String())
	}
}
