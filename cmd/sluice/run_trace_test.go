package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/internal/tracing/otlptest"
	"github.com/sluicehq/sluice/sources"
)

const (
	producerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerTP    = "00-" + producerTrace + "-00f067aa0ba902b7-01"
)

// traceTarget records the headers of every request by job (X-Job) and
// answers 503 to the first fail requests of job "r".
type traceTarget struct {
	mu   sync.Mutex
	seen map[string][]http.Header
	ok   map[string]bool
	fail int
}

func (tt *traceTarget) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	id := r.Header.Get("X-Job")
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.seen[id] = append(tt.seen[id], r.Header.Clone())
	if id == "r" && len(tt.seen[id]) <= tt.fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	tt.ok[id] = true
}

func (tt *traceTarget) done(ids ...string) bool {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for _, id := range ids {
		if !tt.ok[id] {
			return false
		}
	}
	return true
}

// TestRunTraceAndIdempotency runs `sluice run` with OTEL_EXPORTER_OTLP_ENDPOINT
// naming an in-process OTLP receiver. The target sees the producer's
// traceparent and the job id as Idempotency-Key on every attempt of every
// delivery (job r fails its first delivery's two attempts and is
// redelivered); the receiver gets one span per delivery of a job with one
// child per attempt, and each attempt's span is the parent the target saw.
func TestRunTraceAndIdempotency(t *testing.T) {
	rcv := otlptest.NewReceiver()
	defer rcv.Close()
	t.Setenv(tracing.EnvEndpoint, rcv.URL)
	t.Setenv(tracing.EnvTracesEndpoint, "")
	t.Setenv(tracing.EnvSDKDisabled, "")
	tt := &traceTarget{seen: map[string][]http.Header{}, ok: map[string]bool{}, fail: 3}
	api := httptest.NewServer(tt)
	defer api.Close()
	cfg := e2eConfig(t, backends.StartNATS(t), api.URL)
	cfg.Worker.MaxAttempts = 2
	run := startRun(t, mustValid(t, cfg), nil)
	src := client(t, cfg)
	for _, id := range []string{"r", "a", "b"} {
		data, _ := json.Marshal(map[string]any{"id": id, "headers": map[string]string{"X-Job": id}})
		m := sources.Outgoing{ID: id, Data: data}
		if id == "r" {
			m.Headers = map[string]string{"traceparent": producerTP, "tracestate": "vendor=opaque"}
		}
		if err := src.Publish(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, "every job answered 200", func() bool { return tt.done("r", "a", "b") })
	run.stop(t) // flushes the spans

	tt.mu.Lock()
	defer tt.mu.Unlock()
	if n := len(tt.seen["r"]); n != 4 {
		t.Fatalf("job r: %d attempts, want 4 (2 deliveries of max_attempts 2)", n)
	}
	sentParents := map[string]string{} // attempt span id -> job id
	for id, hs := range tt.seen {
		for i, h := range hs {
			if got := h.Values("Idempotency-Key"); len(got) != 1 || got[0] != id {
				t.Errorf("job %s attempt %d: Idempotency-Key %q, want %q", id, i+1, got, id)
			}
			tp := strings.Split(h.Get("Traceparent"), "-")
			if len(tp) != 4 || tp[0] != "00" || len(tp[1]) != 32 || len(tp[2]) != 16 {
				t.Fatalf("job %s attempt %d: traceparent %q", id, i+1, h.Get("Traceparent"))
			}
			if id == "r" && (tp[1] != producerTrace || h.Get("Tracestate") != "vendor=opaque") {
				t.Errorf("job r attempt %d: traceparent %q tracestate %q, want the producer's trace", i+1, h.Get("Traceparent"), h.Get("Tracestate"))
			}
			sentParents[tp[2]] = id
		}
	}

	spans := rcv.Spans()
	jobSpans := map[string]otlptest.Span{} // span id -> job span
	perJob := map[string]int{}
	for _, s := range spans {
		if s.Attributes["sluice.job.id"] != "" {
			jobSpans[s.SpanID] = s
			perJob[s.Attributes["sluice.job.id"]]++
		}
	}
	if perJob["r"] != 2 || perJob["a"] != 1 || perJob["b"] != 1 {
		t.Fatalf("job spans per job = %v, want r:2 (one per delivery) a:1 b:1; spans: %+v", perJob, spans)
	}
	children := map[string]int{}
	for _, s := range spans {
		if _, isJob := jobSpans[s.SpanID]; isJob {
			continue
		}
		parent, ok := jobSpans[s.ParentSpanID]
		if !ok {
			t.Errorf("span %s has no job span as its parent", s.Name)
			continue
		}
		children[parent.SpanID]++
		if sentParents[s.SpanID] != parent.Attributes["sluice.job.id"] {
			t.Errorf("attempt span %s of job %s was not the parent the target saw", s.SpanID, parent.Attributes["sluice.job.id"])
		}
	}
	for id, js := range jobSpans {
		if children[id] != map[string]int{"r": 2, "a": 1, "b": 1}[js.Attributes["sluice.job.id"]] {
			t.Errorf("job span of %s (delivery %s) has %d attempt spans", js.Attributes["sluice.job.id"], js.Attributes["sluice.delivery"], children[id])
		}
		if js.Attributes["sluice.job.id"] == "r" && js.TraceID != producerTrace {
			t.Errorf("job r's span is in trace %s, want the producer's", js.TraceID)
		}
		if js.Service != "sluice" {
			t.Errorf("service.name = %q", js.Service)
		}
	}
	if len(spans) != len(jobSpans)+len(sentParents) {
		t.Errorf("%d spans for %d deliveries and %d attempts", len(spans), len(jobSpans), len(sentParents))
	}
}
