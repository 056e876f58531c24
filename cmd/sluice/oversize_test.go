package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/worker"
)

// startNATSMaxPayload starts a JetStream server that accepts messages of up
// to maxPayload bytes.
func startNATSMaxPayload(t *testing.T, maxPayload int32) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true,
		JetStream: true, StoreDir: t.TempDir(), MaxPayload: maxPayload,
	})
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	return ns.ClientURL()
}

// An envelope over max_envelope_bytes (1 MiB by default) on a server that
// takes messages that large is dead-lettered at once with
// envelope_too_large; the record keeps only the first bytes of it, and the
// target never sees it.
func TestRunOversizedEnvelope(t *testing.T) {
	natsURL := startNATSMaxPayload(t, 4<<20)
	api := newAPILog()
	target := httptest.NewServer(api)
	defer target.Close()
	cfg := mustValid(t, e2eConfig(t, natsURL, target.URL))
	q := client(t, cfg)

	big := []byte(`{"id":"big","headers":{"X-Job":"big"},"body":"` + strings.Repeat("x", 2<<20) + `"}`)
	enqueueRawJob(t, q, "big", big)
	enqueueJob(t, q, "small", map[string]any{"headers": map[string]string{"X-Job": "small"}})
	r := startRun(t, cfg, nil)
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
	r.stop(t)

	if api.count("big") != 0 || api.count("small") != 1 {
		t.Fatalf("target traffic: %v", api.hits)
	}
	dl := deadLetters(t, cfg)
	rec, ok := dl["big"]
	if len(dl) != 1 || !ok || rec.Reason != worker.ReasonTooLarge.String() {
		t.Fatalf("dead letters: %+v", dl)
	}
	data, err := rec.Data()
	if err != nil {
		t.Fatal(err)
	}
	if !rec.PayloadTruncated || len(data) > 4096 || !bytes.HasPrefix(big, data) {
		t.Errorf("record payload: %d bytes (truncated %v), want at most the first 4096 bytes", len(data), rec.PayloadTruncated)
	}
}

// A job whose dead-letter record would be larger than the server takes (an
// invalid envelope just under the server's max_payload, or one whose
// escaping grows in JSON) is still dead-lettered: its record carries the
// payload cut short rather than being refused by the server again and
// again while the job is redelivered for ever.
func TestRunDeadLetterLargerThanMaxPayload(t *testing.T) {
	natsURL := backends.StartNATS(t) // max_payload 1 MiB
	api := newAPILog()
	target := httptest.NewServer(api)
	defer target.Close()
	cfg := mustValid(t, e2eConfig(t, natsURL, target.URL))
	q := client(t, cfg)

	nearLimit := []byte(`{"id":"near","body":"` + strings.Repeat("x", 1<<20-120)) // not valid JSON
	quotes := []byte(`{"id":"quotes","body":"` + strings.Repeat(`\"`, 400<<10) + `"`)
	enqueueRawJob(t, q, "near", nearLimit)
	enqueueRawJob(t, q, "quotes", quotes)
	r := startRun(t, cfg, nil)
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
	r.stop(t)

	dl := deadLetters(t, cfg)
	for id, payload := range map[string][]byte{"near": nearLimit, "quotes": quotes} {
		rec, ok := dl[id]
		if !ok || rec.Reason != worker.ReasonBadJSON.String() {
			t.Errorf("%s: dead letter %+v, want reason %s", id, rec, worker.ReasonBadJSON.String())
			continue
		}
		data, err := rec.Data()
		if err != nil {
			t.Fatal(err)
		}
		if !rec.PayloadTruncated || !bytes.HasPrefix(payload, data) || len(data) == 0 {
			t.Errorf("%s: record payload %d bytes (truncated %v), want a prefix of the %d-byte payload", id, len(data), rec.PayloadTruncated, len(payload))
		}
	}
}

// A success whose result record would be larger than the server takes (a
// response body at max_response_bytes) is acked once with its body cut to
// fit, rather than refused again and again while the target is called on
// every redelivery.
func TestRunResultLargerThanMaxPayload(t *testing.T) {
	natsURL := backends.StartNATS(t) // max_payload 1 MiB
	api := newAPILog()
	api.answers["big"] = func(_ int, w http.ResponseWriter, _ *http.Request) {
		w.Write(bytes.Repeat([]byte("r"), 1<<20))
	}
	target := httptest.NewServer(api)
	defer target.Close()
	cfg := e2eConfig(t, natsURL, target.URL)
	cfg.Results.Kind = config.OutputNATS
	cfg = mustValid(t, cfg)
	q := client(t, cfg)
	enqueueJob(t, q, "big", map[string]any{"headers": map[string]string{"X-Job": "big"}})
	r := startRun(t, cfg, nil)
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) || api.count("big") > 3 })
	r.stop(t)
	if n := api.count("big"); n != 1 {
		t.Fatalf("the target was called %d times for one job, want 1", n)
	}
	st, err := q.JetStream().Stream(t.Context(), cfg.Source.JetStream.Stream+"_RESULTS")
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(t.Context(), 1)
	if err != nil {
		t.Fatal(err)
	}
	var res worker.Result
	if err := json.Unmarshal(m.Data, &res); err != nil {
		t.Fatal(err)
	}
	if res.ID != "big" || res.Status != 200 || len(res.Body) < 1<<19 || strings.Trim(res.Body, "r") != "" {
		t.Errorf("result %s: status %d, body %d bytes", res.ID, res.Status, len(res.Body))
	}
}
