package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sinks/httpapi"
)

// attemptContext returns a context carrying a sampled span context with a
// trace state, as the worker gives each attempt.
func attemptContext(t *testing.T) context.Context {
	t.Helper()
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=opaque")
	if err != nil {
		t.Fatal(err)
	}
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, TraceState: ts})
	return trace.ContextWithSpanContext(context.Background(), sc)
}

// TestTraceContextAndIdempotencyKey: the call carries the job id under the
// configured idempotency header and the context's trace as traceparent and
// tracestate, replacing a job's own headers of those names; the debug line
// of the call names the job.
func TestTraceContextAndIdempotencyKey(t *testing.T) {
	rec := newRecorder(t, nil)
	var logs bytes.Buffer
	s := newSink(t, httpapi.Config{BaseURL: rec.URL, IdempotencyHeader: httpapi.DefaultIdempotencyHeader},
		httpapi.WithLogger(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	h := http.Header{}
	h.Set("Traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
	h.Set("Idempotency-Key", "forged")
	if _, err := s.Send(attemptContext(t), call.Request{ID: "job-7", Method: "POST", Path: "/x", Header: h}); err != nil {
		t.Fatal(err)
	}
	got := rec.last().Header
	if v := got.Values("Idempotency-Key"); len(v) != 1 || v[0] != "job-7" {
		t.Errorf("Idempotency-Key = %q, want [job-7]", v)
	}
	if v := got.Values("Traceparent"); len(v) != 1 || v[0] != "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01" {
		t.Errorf("traceparent = %q, want the context's", v)
	}
	if v := got.Get("Tracestate"); v != "vendor=opaque" {
		t.Errorf("tracestate = %q", v)
	}
	if !strings.Contains(logs.String(), "msg=\"target call\" job=job-7 ") {
		t.Errorf("the call's log line does not name the job: %s", logs.String())
	}
}

// TestNoStampWithoutConfigOrTrace: with no idempotency header configured
// and no trace in the context, the job's own headers go through as they
// are.
func TestNoStampWithoutConfigOrTrace(t *testing.T) {
	rec := newRecorder(t, nil)
	s := newSink(t, httpapi.Config{BaseURL: rec.URL})
	h := http.Header{}
	h.Set("Traceparent", "00-11111111111111111111111111111111-2222222222222222-01")
	if _, err := s.Send(context.Background(), call.Request{ID: "job-7", Method: "POST", Path: "/x", Header: h}); err != nil {
		t.Fatal(err)
	}
	got := rec.last().Header
	if got.Get("Idempotency-Key") != "" || got.Get("Traceparent") != h.Get("Traceparent") {
		t.Errorf("headers = %v, want the job's traceparent and no key", got)
	}
}

// TestIdempotencyKeyInvalidJobID: a job id that cannot be a header value
// makes the request invalid (dead-lettered by the worker), before sending.
func TestIdempotencyKeyInvalidJobID(t *testing.T) {
	rec := newRecorder(t, nil)
	s := newSink(t, httpapi.Config{BaseURL: rec.URL, IdempotencyHeader: "X-Request-Key"})
	for _, id := range []string{"a\r\nInjected: 1", strings.Repeat("x", 70<<10)} {
		err := s.Check(call.Request{ID: id, Method: "POST", Path: "/x"})
		if !errors.Is(err, call.ErrInvalidRequest) || !strings.Contains(err.Error(), "X-Request-Key") {
			t.Errorf("Check(id of %d bytes) = %v, want an invalid request naming the header", len(id), err)
		}
	}
	if rec.count() != 0 {
		t.Errorf("%d requests sent", rec.count())
	}
}

// TestConfigRefusesStampedHeaders: config headers may not name the headers
// set per call, and the idempotency header must be a header name the
// client does not set.
func TestConfigRefusesStampedHeaders(t *testing.T) {
	for _, tc := range []struct {
		cfg  httpapi.Config
		want string
	}{
		{httpapi.Config{BaseURL: "http://x", Headers: map[string]string{"traceparent": "00-..."}}, "headers.traceparent"},
		{httpapi.Config{BaseURL: "http://x", IdempotencyHeader: "Idempotency-Key", Headers: map[string]string{"idempotency-key": "k"}}, "headers.idempotency-key"},
		{httpapi.Config{BaseURL: "http://x", IdempotencyHeader: "Bad Name"}, "idempotency_header"},
		{httpapi.Config{BaseURL: "http://x", IdempotencyHeader: "Content-Length"}, "idempotency_header"},
		{httpapi.Config{BaseURL: "http://x", IdempotencyHeader: "Tracestate"}, "idempotency_header"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%v) = %v, want an error at %s", tc.cfg, err, tc.want)
		}
	}
	if err := (httpapi.Config{BaseURL: "http://x", Headers: map[string]string{"Idempotency-Key": "k"}}).Validate(); err != nil {
		t.Errorf("a static Idempotency-Key with the header off: %v", err)
	}
}
