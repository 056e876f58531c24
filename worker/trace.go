package worker

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math/rand/v2"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext reads and writes W3C Trace Context: traceparent and
// tracestate.
var traceContext = propagation.TraceContext{}

// googclientPrefix is the prefix the Google Cloud Pub/Sub client gives the
// trace context attributes it sets (googclient_traceparent).
const googclientPrefix = "googclient_"

// messageCarrier reads trace context from a message's headers (JetStream)
// or attributes (Pub/Sub): the key in any case, then with the Pub/Sub
// client's googclient_ prefix.
type messageCarrier map[string]string

// Get looks at each header once and builds no string: it runs on every
// job.
func (c messageCarrier) Get(key string) string {
	if v, ok := c[key]; ok && v != "" {
		return v
	}
	var folded, prefixed, prefixedFolded string
	for k, v := range c {
		switch {
		case v == "":
		case strings.EqualFold(k, key):
			if folded == "" {
				folded = v
			}
		case len(k) == len(googclientPrefix)+len(key) && strings.EqualFold(k[len(googclientPrefix):], key):
			if k[:len(googclientPrefix)] == googclientPrefix && k[len(googclientPrefix):] == key {
				prefixed = v
			} else if strings.EqualFold(k[:len(googclientPrefix)], googclientPrefix) && prefixedFolded == "" {
				prefixedFolded = v
			}
		}
	}
	return cmp.Or(folded, prefixed, prefixedFolded)
}

func (c messageCarrier) Set(string, string) {}

func (c messageCarrier) Keys() []string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, strings.ToLower(strings.TrimPrefix(k, googclientPrefix)))
	}
	return keys
}

// jobTrace is the trace of one delivery of a job: its span, a child of the
// producer's when the message carried a valid traceparent. Without a
// tracer no span is made: sc is the span context that attempts propagate
// (the producer's, unchanged, or the job's own trace, see newTrace). The
// zero jobTrace (a message handed back unread) has neither.
type jobTrace struct {
	tracer trace.Tracer // nil: spans are not recorded
	span   trace.Span   // with a tracer only
	sc     trace.SpanContext
}

// startJob starts the trace of a delivery of the message with this id and
// headers.
func (w *Worker) startJob(id string, headers map[string]string, deliveries int) jobTrace {
	parent := traceContext.Extract(context.Background(), messageCarrier(headers))
	if tr := w.deps.Tracer; tr != nil {
		_, span := tr.Start(parent, "job", trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(
			attribute.String("messaging.message.id", id),
			attribute.Int("sluice.delivery", deliveries),
		))
		return jobTrace{tracer: tr, span: span, sc: span.SpanContext()}
	}
	sc := trace.SpanContextFromContext(parent)
	if !sc.IsValid() {
		sc = newTrace(id)
	}
	return jobTrace{sc: sc}
}

// newTrace returns the span context of a trace of the job with this id:
// its trace id is derived from the id, so every delivery of the job is in
// the same trace (the target can group a job's calls by it); the span id
// is new. Both are valid; not sampled (nothing is recorded without a
// tracer). An empty id gets a random trace id.
func newTrace(id string) trace.SpanContext {
	var tid trace.TraceID
	var sid trace.SpanID
	if id != "" {
		sum := sha256.Sum256([]byte("sluice job trace\x00" + id))
		copy(tid[:], sum[:])
	}
	for !tid.IsValid() {
		binary.BigEndian.PutUint64(tid[:8], rand.Uint64())
		binary.BigEndian.PutUint64(tid[8:], rand.Uint64())
	}
	for !sid.IsValid() {
		binary.BigEndian.PutUint64(sid[:], rand.Uint64())
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
}

// traceID is the trace id logged with the job's lines, "" for the zero
// jobTrace.
func (t *jobTrace) traceID() string {
	if !t.sc.IsValid() {
		return ""
	}
	return t.sc.TraceID().String()
}

// setJob names the span after the decoded job: its id and type label.
func (t *jobTrace) setJob(id, typeLabel string) {
	if t.tracer == nil {
		return
	}
	t.span.SetName("job " + typeLabel)
	t.span.SetAttributes(attribute.String("sluice.job.id", id), attribute.String("sluice.job.type", typeLabel))
}

// startAttempt returns ctx carrying the span context the attempt sends to
// the target: a new child span of the job's when spans are recorded, else
// the job's own. end closes the attempt's span with what the call gave.
func (t *jobTrace) startAttempt(ctx context.Context, n int, method string) (context.Context, func(status int, result string, err error)) {
	if t.tracer == nil {
		return trace.ContextWithSpanContext(ctx, t.sc), noEnd
	}
	ctx = trace.ContextWithSpan(ctx, t.span)
	ctx, span := t.tracer.Start(ctx, method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(
		attribute.String("http.request.method", method),
		attribute.Int("sluice.attempt", n),
	))
	return ctx, func(status int, result string, err error) {
		if status > 0 {
			span.SetAttributes(attribute.Int("http.response.status_code", status))
		}
		span.SetAttributes(attribute.String("sluice.result", result))
		if status >= 400 || err != nil {
			span.SetStatus(codes.Error, result)
		}
		span.End()
	}
}

// noEnd is startAttempt's end without a tracer.
func noEnd(int, string, error) {}

// end closes the job's span with how the delivery was settled and, for a
// dead letter, its reason. Without a span (no tracer, or a message handed
// back unread) it does nothing.
func (t *jobTrace) end(o Outcome, reason Reason) {
	if t.tracer == nil {
		return
	}
	t.span.SetAttributes(attribute.String("sluice.outcome", o.String()))
	switch o {
	case OutcomeDeadLettered:
		t.span.SetAttributes(attribute.String("sluice.dead_letter.reason", reason.String()))
		t.span.SetStatus(codes.Error, reason.String())
	case OutcomeUnsettled:
		t.span.SetStatus(codes.Error, "not settled")
	}
	t.span.End()
}
