package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"cloud.google.com/go/pubsub/v2/pstest"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/worker"
)

// `sluice run` on Pub/Sub (pstest, through PUBSUB_EMULATOR_HOST): jobs
// come from a subscription, results and dead letters go to their topics.
func TestRunPubSub(t *testing.T) {
	srv := backends.FakePubSub(t)

	api := newAPILog()
	api.answers["missing"] = func(_ int, w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "gone", http.StatusNotFound)
	}
	target := httptest.NewServer(api)
	defer target.Close()

	file := writeConfig(t, fmt.Sprintf(`
source:
  kind: pubsub
  pubsub:
    project: test
    topic: jobs
    subscription: jobs-worker
    setup: true
    poll_interval: 1m # a pull answered after its interval leaves its jobs leased to nobody for 60 s
target: {base_url: %s}
limiter: {enabled: false}
worker: {backoff: {base: 10ms, cap: 20ms}}
results: {kind: pubsub, topic: results}
dead_letters: {kind: pubsub, topic: dead}
metrics: {listen: "off"}
`, target.URL))
	cfg, err := config.Load(file, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	q, err := run.OpenSource(context.Background(), cfg.Source, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	r := startRun(t, cfg, nil)
	for _, id := range []string{"ok", "missing"} {
		enqueueJob(t, q, id, map[string]any{"headers": map[string]string{"X-Job": id}})
	}
	if err := q.Publish(context.Background(), sources.Outgoing{ID: "bad", Data: []byte("{")}); err != nil {
		t.Fatal(err)
	}

	byTopic := func() map[string][]*pstest.Message {
		out := map[string][]*pstest.Message{}
		for _, m := range srv.Messages() {
			name := m.Topic[strings.LastIndexByte(m.Topic, '/')+1:]
			out[name] = append(out[name], m)
		}
		return out
	}
	testkit.Eventually(t, "a result and two dead letters", func() bool {
		m := byTopic()
		return len(m["results"]) == 1 && len(m["dead"]) == 2
	})
	r.stop(t)

	m := byTopic()
	var res worker.Result
	if err := json.Unmarshal(m["results"][0].Data, &res); err != nil || res.ID != "ok" || res.Status != 200 {
		t.Errorf("result = %+v (%v)", res, err)
	}
	reasons := map[string]string{}
	for _, msg := range m["dead"] {
		var d worker.DeadLetter
		if err := json.Unmarshal(msg.Data, &d); err != nil {
			t.Fatal(err)
		}
		reasons[d.ID] = d.Reason
	}
	if reasons["missing"] != worker.ReasonClientError.String() || len(reasons) != 2 {
		t.Errorf("dead letters: %v", reasons)
	}
	if api.count("ok") != 1 || api.count("missing") != 1 {
		t.Errorf("target traffic: %v", api.hits)
	}
	for _, msg := range m["jobs"] {
		if msg.Acks == 0 {
			t.Errorf("job message %s was never acked", msg.ID)
		}
	}
}
