package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/memory"
)

// A producer's trace: its trace id, span id, sampled.
const (
	producerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpan  = "00f067aa0ba902b7"
	producerTP    = "00-" + producerTrace + "-" + producerSpan + "-01"
)

// sentCall is what the target was given for one attempt: the request's job
// id and the span context of the attempt's context (what an HTTP target
// writes as traceparent).
type sentCall struct {
	id string
	sc trace.SpanContext
}

// ctxTarget records the span context of each call, then calls next.
type ctxTarget struct {
	next  Target
	mu    sync.Mutex
	calls []sentCall
}

func (c *ctxTarget) Send(ctx context.Context, r call.Request) (call.Response, error) {
	c.mu.Lock()
	c.calls = append(c.calls, sentCall{r.ID, trace.SpanContextFromContext(ctx)})
	c.mu.Unlock()
	return c.next.Send(ctx, r)
}

func (c *ctxTarget) sent() []sentCall {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]sentCall(nil), c.calls...)
}

// tracedHarness is a harness whose target records trace contexts, with
// max_attempts 2 and a log in buf.
func tracedHarness(t *testing.T, buf *bytes.Buffer) (*harness, *ctxTarget) {
	h := newHarness(t, Config{MaxAttempts: 2, BackoffBase: time.Second}, memory.Config{})
	ct := &ctxTarget{next: h.w.deps.Target}
	h.w.deps.Target = ct
	if buf != nil {
		h.w.log = newTestLogger(buf).With("worker", "w1")
	}
	return h, ct
}

// jobWithHeaders publishes job id with message headers.
func (h *harness) jobWithHeaders(id string, headers map[string]string) {
	h.t.Helper()
	data, _ := json.Marshal(map[string]any{"id": id, "headers": map[string]string{"X-Job": id}})
	h.publish(sources.Outgoing{ID: id, Data: data, Headers: headers})
}

// TestTraceParentFromProducer: the producer's traceparent and tracestate
// (a message header) reach the target on every attempt of every delivery,
// unchanged when no spans are recorded, and every attempt carries the job
// id (the idempotency key); the log lines of the job name its trace.
func TestTraceParentFromProducer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		h, ct := tracedHarness(t, &logs)
		// Two failed attempts on delivery 1 (nak), then 503 and 200 on delivery 2.
		h.target.on("j1", status(503, ""), status(503, ""), status(503, ""), status(200, ""))
		h.jobWithHeaders("j1", map[string]string{"traceparent": producerTP, "tracestate": "vendor=opaque"})
		h.start()
		h.until("j1 settled", func() bool { return h.settled("j1") })
		h.stop()

		calls := ct.sent()
		if len(calls) != 4 {
			t.Fatalf("attempts = %d, want 4 (2 deliveries of 2 attempts)", len(calls))
		}
		for i, c := range calls {
			if c.id != "j1" {
				t.Errorf("attempt %d: request id %q, want j1", i+1, c.id)
			}
			if c.sc.TraceID().String() != producerTrace || c.sc.SpanID().String() != producerSpan ||
				!c.sc.IsSampled() || c.sc.TraceState().String() != "vendor=opaque" {
				t.Errorf("attempt %d: trace context %v %v sampled=%v state=%q, want the producer's",
					i+1, c.sc.TraceID(), c.sc.SpanID(), c.sc.IsSampled(), c.sc.TraceState().String())
			}
		}
		checkJobLines(t, &logs, "j1", producerTrace)
	})
}

// checkJobLines: every line that names the job carries its trace id, and
// every line about an attempt, a backoff or a settlement names the job.
func checkJobLines(t *testing.T, logs *bytes.Buffer, job, traceID string) {
	t.Helper()
	seen := 0
	for line := range strings.SplitSeq(strings.TrimSpace(logs.String()), "\n") {
		var l map[string]any
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		switch l["msg"] {
		case "attempt", "backing off", "job naked", "job done", "job dead-lettered":
			seen++
			if l["job"] != job || l["trace_id"] != traceID {
				t.Errorf("line %s: want job %s and trace_id %s", line, job, traceID)
			}
		}
	}
	if seen < 3 {
		t.Fatalf("only %d job lines logged:\n%s", seen, logs.String())
	}
}

// TestTraceStartedPerDelivery: a message without trace context (or with an
// invalid one) gets a trace of its own, valid and not sampled, the same for
// every attempt of the delivery and different for each job.
func TestTraceStartedPerDelivery(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ct := tracedHarness(t, nil)
		h.target.on("a", status(503, ""), status(200, ""))
		h.jobWithHeaders("a", nil)
		h.jobWithHeaders("b", map[string]string{"traceparent": "00-00000000000000000000000000000000-00f067aa0ba902b7-01"})
		h.jobWithHeaders("c", map[string]string{"Traceparent": "garbage"})
		h.start()
		h.until("settled", func() bool { return h.settled("a") && h.settled("b") && h.settled("c") })
		h.stop()

		byJob := map[string][]trace.SpanContext{}
		for _, c := range ct.sent() {
			byJob[c.id] = append(byJob[c.id], c.sc)
		}
		if len(byJob["a"]) != 2 || len(byJob["b"]) != 1 || len(byJob["c"]) != 1 {
			t.Fatalf("attempts per job = %v", byJob)
		}
		if !byJob["a"][0].Equal(byJob["a"][1]) {
			t.Errorf("attempts of one delivery in different traces: %v, %v", byJob["a"][0], byJob["a"][1])
		}
		ids := map[trace.TraceID]bool{}
		for job, scs := range byJob {
			sc := scs[0]
			if !sc.IsValid() || sc.IsSampled() || sc.IsRemote() {
				t.Errorf("job %s: span context %+v, want a new valid, unsampled trace", job, sc)
			}
			ids[sc.TraceID()] = true
		}
		if len(ids) != 3 {
			t.Errorf("trace ids %v, want one per job", ids)
		}
	})
}

// TestTraceSamePerJob: without a producer's trace and without a tracer,
// every delivery of a job is in one trace, derived from the job's message
// id, so the target can group a job's calls by trace id; each delivery
// has its own span id, and another job another trace.
func TestTraceSamePerJob(t *testing.T) {
	w := &Worker{}
	first, again, other := w.startJob("a", nil, 1), w.startJob("a", nil, 2), w.startJob("b", nil, 1)
	if first.traceID() != again.traceID() {
		t.Errorf("two deliveries of a job in traces %s and %s, want one", first.traceID(), again.traceID())
	}
	if first.sc.SpanID() == again.sc.SpanID() {
		t.Error("two deliveries share a span id")
	}
	if first.traceID() == other.traceID() {
		t.Errorf("jobs a and b share trace %s", first.traceID())
	}
	if sc := first.sc; !sc.IsValid() || sc.IsSampled() {
		t.Errorf("span context %+v, want valid and not sampled", sc)
	}
}

// TestTraceFromPubSubClientAttribute: the Pub/Sub client's own attribute
// (googclient_traceparent) is read when there is no traceparent.
func TestTraceFromPubSubClientAttribute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ct := tracedHarness(t, nil)
		h.jobWithHeaders("p", map[string]string{"googclient_traceparent": producerTP})
		h.start()
		h.until("settled", func() bool { return h.settled("p") })
		h.stop()
		if c := ct.sent(); len(c) != 1 || c[0].sc.TraceID().String() != producerTrace {
			t.Fatalf("calls = %+v, want one in the producer's trace", c)
		}
	})
}

// TestSpansPerJobAndAttempt: with a tracer, each delivery records a job
// span (a child of the producer's) and one child span per attempt; each
// attempt sends its own span's context. No span holds the path.
func TestSpansPerJobAndAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		exp := tracetest.NewInMemoryExporter()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
		h, ct := tracedHarness(t, nil)
		h.w.deps.Tracer = tp.Tracer("test")
		h.target.on("j1", status(503, ""), status(200, ""))
		h.job("j2", map[string]any{"path": "/secret-path/x"})
		h.jobWithHeaders("j1", map[string]string{"traceparent": producerTP})
		h.start()
		h.until("settled", func() bool { return h.settled("j1") && h.settled("j2") })
		h.stop()

		spans := exp.GetSpans()
		jobs := map[string]tracetest.SpanStub{}
		children := map[trace.SpanID][]tracetest.SpanStub{}
		for _, s := range spans {
			for _, a := range s.Attributes {
				if strings.Contains(a.Value.String(), "secret-path") {
					t.Errorf("span %s holds the path in %s", s.Name, a.Key)
				}
			}
			if s.SpanKind == trace.SpanKindConsumer {
				jobs[attr(s, "sluice.job.id")] = s
			} else {
				children[s.Parent.SpanID()] = append(children[s.Parent.SpanID()], s)
			}
		}
		if len(spans) != 5 || len(jobs) != 2 {
			t.Fatalf("spans = %d (%d job spans), want 2 jobs + 3 attempts", len(spans), len(jobs))
		}
		j1 := jobs["j1"]
		if j1.Parent.SpanID().String() != producerSpan || j1.SpanContext.TraceID().String() != producerTrace {
			t.Errorf("job span parent = %v, want the producer's span %s", j1.Parent, producerSpan)
		}
		if attr(j1, "sluice.outcome") != "succeeded" {
			t.Errorf("job span outcome = %q", attr(j1, "sluice.outcome"))
		}
		att := children[j1.SpanContext.SpanID()]
		if len(att) != 2 || attr(att[0], "http.response.status_code") != "503" || attr(att[1], "http.response.status_code") != "200" {
			t.Fatalf("attempt spans of j1 = %+v, want 503 then 200", att)
		}
		if len(children[jobs["j2"].SpanContext.SpanID()]) != 1 {
			t.Errorf("j2 has %d attempt spans, want 1", len(children[jobs["j2"].SpanContext.SpanID()]))
		}
		// What the target saw is each attempt's own span.
		var sentJ1 []trace.SpanID
		for _, c := range ct.sent() {
			if c.id == "j1" {
				sentJ1 = append(sentJ1, c.sc.SpanID())
			}
		}
		if len(sentJ1) != 2 || sentJ1[0] != att[0].SpanContext.SpanID() || sentJ1[1] != att[1].SpanContext.SpanID() {
			t.Errorf("span ids sent = %v, want the attempt spans'", sentJ1)
		}
	})
}

func attr(s tracetest.SpanStub, key string) string {
	for _, a := range s.Attributes {
		if string(a.Key) == key {
			return a.Value.String()
		}
	}
	return ""
}

// newTestLogger logs JSON at debug level to w.
func newTestLogger(w *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// TestMessageCarrierGet: a key in any case, before the Pub/Sub client's
// googclient_ form of it (exact, then in any case).
func TestMessageCarrierGet(t *testing.T) {
	for _, c := range []struct {
		headers map[string]string
		want    string
	}{
		{map[string]string{"traceparent": "a"}, "a"},
		{map[string]string{"TraceParent": "a", "Nats-Msg-Id": "x"}, "a"},
		{map[string]string{"googclient_traceparent": "b"}, "b"},
		{map[string]string{"googclient_traceparent": "b", "TRACEPARENT": "a"}, "a"},
		{map[string]string{"traceparent": "", "googclient_traceparent": "b"}, "b"},
		{map[string]string{"GOOGCLIENT_TRACEPARENT": "c", "googclient_traceparent": "b"}, "b"},
		{map[string]string{"Googclient_Traceparent": "c"}, "c"},
		{map[string]string{"xgoogclient_traceparent": "d", "googclient_traceparentx": "e"}, ""},
		{nil, ""},
	} {
		if got := messageCarrier(c.headers).Get("traceparent"); got != c.want {
			t.Errorf("%v: %q, want %q", c.headers, got, c.want)
		}
	}
}
