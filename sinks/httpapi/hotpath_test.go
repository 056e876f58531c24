package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// TestTraceContextAsInject: the headers written for a span context are
// those that OpenTelemetry's W3C propagator writes, sampled or not, with a
// trace state or without, and with the flags the spec does not define
// dropped; they replace a job's own.
func TestTraceContextAsInject(t *testing.T) {
	s, err := New(Config{BaseURL: "http://api.test"})
	if err != nil {
		t.Fatal(err)
	}
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	ts, err := trace.ParseTraceState("vendor=opaque,other=x")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []trace.SpanContextConfig{
		{TraceID: tid, SpanID: sid},
		{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled},
		{TraceID: tid, SpanID: sid, TraceFlags: 0xff, TraceState: ts},
		{TraceID: tid, SpanID: sid, TraceState: ts, Remote: true},
	} {
		sc := trace.NewSpanContext(c)
		want := http.Header{}
		propagation.TraceContext{}.Inject(trace.ContextWithSpanContext(context.Background(), sc), propagation.HeaderCarrier(want))
		got := s.header(http.Header{"Traceparent": {"00-x"}, "Tracestate": {"job=1"}}, "", sc)
		delete(got, "User-Agent")
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("flags %v, state %q: headers %v, want %v", c.TraceFlags, c.TraceState.String(), got, want)
		}
	}
}

// TestPathCache: a cached path gives the same URL as resolve, and each
// caller its own copy; a path that does not resolve is refused every time
// and not kept; no more than maxCachedPaths paths are kept.
func TestPathCache(t *testing.T) {
	base, err := parseBaseURL("http://api.test/v1")
	if err != nil {
		t.Fatal(err)
	}
	var c pathCache
	for range 2 {
		u, err := c.resolve(base, "/items/a%2Fb?x=1")
		if err != nil {
			t.Fatal(err)
		}
		if got := u.String(); got != "http://api.test/v1/items/a%2Fb?x=1" {
			t.Fatalf("URL %s", got)
		}
		u.Path, u.RawPath = "/elsewhere", "" // the next caller must not see this
	}
	for range 2 {
		if _, err := c.resolve(base, "/../admin"); err == nil {
			t.Fatal("/../admin resolved")
		}
	}
	if _, ok := (*c.m.Load())["/../admin"]; ok {
		t.Error("a refused path was cached")
	}
	for i := range maxCachedPaths + 10 {
		if _, err := c.resolve(base, fmt.Sprintf("/p/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(*c.m.Load()); n != maxCachedPaths {
		t.Errorf("%d paths cached, want %d", n, maxCachedPaths)
	}
	want, _ := url.Parse("http://api.test/v1/p/2000")
	if u, err := c.resolve(base, "/p/2000"); err != nil || *u != *want {
		t.Errorf("past the bound: %v, %v; want %v", u, err, want)
	}
}
