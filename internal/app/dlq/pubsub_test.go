package dlq

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/sinks/pubsubout"
	"github.com/sluicehq/sluice/worker"
)

const pubsubConfig = `
source:
  kind: pubsub
  pubsub:
    project: sluice-test
    setup: true
    poll_interval: 5s # a pass ends on pstest's empty answer after 0.5 s; a pull cut short would lose its records for the pass
dead_letters:
  kind: pubsub
  topic: sluice-dead
`

// Dead letters written to a Pub/Sub topic are kept by the subscription
// made with it and replayed from there: each matching record's job goes
// back to the job topic and the record is removed; the others stay (#15).
func TestReplayPubSub(t *testing.T) {
	srv := backends.FakePubSub(t)
	ctx := t.Context()
	cfg, err := config.Parse([]byte(pubsubConfig), config.Options{NoTarget: true})
	if err != nil {
		t.Fatal(err)
	}
	// The worker's dead-letter output, as run opens it.
	client, err := run.PubSubClient(ctx, "dead_letters", cfg.Source)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	out, err := pubsubout.New(ctx, client, cfg.DeadLetters.PubSub(cfg.Source.PubSub.Setup))
	if err != nil {
		t.Fatal(err)
	}
	for i, reason := range []string{"client_error", "client_error", "max_deliveries"} {
		id := fmt.Sprintf("job-%d", i)
		d := worker.DeadLetter{ID: id, Reason: reason, Status: 400 + i, Payload: `{"id":"` + id + `"}`}
		data, _ := json.Marshal(d)
		if err := out.Publish(ctx, id, data); err != nil {
			t.Fatal(err)
		}
	}
	out.Close()

	replay := func(o Options) (Counts, string) {
		t.Helper()
		r, err := Open(ctx, cfg, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		n, err := r.Replay(ctx, o, &buf)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		return n, buf.String()
	}
	if n, _ := replay(Options{Filter: Filter{Reason: "client_error"}, DryRun: true}); n.Seen != 3 || n.Replayed != 2 {
		t.Fatalf("dry run: %+v, want 2 of 3", n)
	}
	n, lines := replay(Options{Filter: Filter{Reason: "client_error"}})
	if n.Seen != 3 || n.Replayed != 2 || !strings.Contains(lines, "replayed id=job-0") {
		t.Fatalf("replay: %+v\n%s", n, lines)
	}
	if n, _ := replay(Options{}); n.Seen != 1 || n.Replayed != 1 {
		t.Fatalf("second replay: %+v, want the one record left", n)
	}
	if n, _ := replay(Options{}); n.Seen != 0 {
		t.Fatalf("third replay: %+v, want none left", n)
	}
	// The replayed jobs are on the job topic.
	var jobs []string
	for _, m := range srv.Messages() {
		if strings.HasSuffix(m.Topic, "/topics/"+config.Default().Source.PubSub.Topic) {
			jobs = append(jobs, string(m.Data))
		}
	}
	if len(jobs) != 3 {
		t.Errorf("job topic holds %v, want the 3 replayed jobs", jobs)
	}
}
