// Package otlptest is an in-process OTLP/HTTP trace receiver for tests: it
// decodes each protobuf ExportTraceServiceRequest posted to /v1/traces and
// keeps its spans.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is a received span, its ids in lowercase hex as in traceparent.
type Span struct {
	Name         string
	TraceID      string
	SpanID       string
	ParentSpanID string // "" for a root span
	Kind         tracepb.Span_SpanKind
	Attributes   map[string]string // every value as its string form
	StatusCode   tracepb.Status_StatusCode
	Service      string // the resource's service.name
}

// Receiver is an OTLP/HTTP trace endpoint. Its URL is the base URL to give
// as OTEL_EXPORTER_OTLP_ENDPOINT or observability.otlp_endpoint.
type Receiver struct {
	URL string

	srv     *httptest.Server
	mu      sync.Mutex
	spans   []Span
	changed chan struct{} // closed and replaced on each export
}

// NewReceiver starts a receiver; Close stops it.
func NewReceiver() *Receiver {
	r := &Receiver{changed: make(chan struct{})}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", r.export)
	r.srv = httptest.NewServer(mux)
	r.URL = r.srv.URL
	return r
}

// Close stops the receiver.
func (r *Receiver) Close() { r.srv.Close() }

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Changed returns a channel closed at the next export.
func (r *Receiver) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.changed
}

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = zr
	}
	raw, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var msg coltrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(raw, &msg); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var got []Span
	for _, rs := range msg.GetResourceSpans() {
		service := attrs(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				sp := Span{
					Name: s.GetName(), TraceID: hex.EncodeToString(s.GetTraceId()), SpanID: hex.EncodeToString(s.GetSpanId()),
					Kind: s.GetKind(), Attributes: attrs(s.GetAttributes()), StatusCode: s.GetStatus().GetCode(), Service: service,
				}
				if len(s.GetParentSpanId()) > 0 {
					sp.ParentSpanID = hex.EncodeToString(s.GetParentSpanId())
				}
				got = append(got, sp)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, got...)
	close(r.changed)
	r.changed = make(chan struct{})
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func attrs(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		m[kv.GetKey()] = valueString(kv.GetValue())
	}
	return m
}

func valueString(v *commonpb.AnyValue) string {
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return x.StringValue
	case *commonpb.AnyValue_IntValue:
		return strconv.FormatInt(x.IntValue, 10)
	case *commonpb.AnyValue_BoolValue:
		if x.BoolValue {
			return "true"
		}
		return "false"
	case *commonpb.AnyValue_DoubleValue:
		return strconv.FormatFloat(x.DoubleValue, 'g', -1, 64)
	}
	return v.String()
}
