package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sinks/httpapi"
)

// recorder is a test server that records what reaches it.
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	requests []*http.Request
	bodies   [][]byte
	newConns atomic.Int32
}

func newRecorder(t *testing.T, h http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{}
	rec.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.requests = append(rec.requests, r)
		rec.bodies = append(rec.bodies, b)
		rec.mu.Unlock()
		if h != nil {
			h(w, r)
		}
	}))
	rec.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			rec.newConns.Add(1)
		}
	}
	rec.Start()
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.requests)
}

func (r *recorder) last() *http.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.requests) == 0 {
		return nil
	}
	return r.requests[len(r.requests)-1]
}

func newSink(t *testing.T, cfg httpapi.Config, opts ...httpapi.Option) *httpapi.Sink {
	t.Helper()
	s, err := httpapi.New(cfg, opts...)
	if err != nil {
		t.Fatalf("New(%v): %v", cfg, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestStatusErrors(t *testing.T) {
	const secret = "tok-9f8e7d6c5b4a"
	target := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/429":
			w.Header().Set("Retry-After", "5")
			w.WriteHeader(429)
		case "/503":
			w.Header().Set("x-ms-retry-after-ms", "1500")
			w.WriteHeader(503)
		case "/500":
			w.WriteHeader(500)
		case "/echo":
			// A target that echoes the request, credentials included.
			w.WriteHeader(400)
			fmt.Fprintf(w, "bad request; you sent Authorization=%q X-Api-Key=%q; %s",
				r.Header.Get("Authorization"), r.Header.Get("X-Api-Key"), strings.Repeat("x", 5000))
		case "/ok":
			w.Header().Set("Retry-After", "5")
			fmt.Fprint(w, "fine, "+r.Header.Get("X-Api-Key"))
		default:
			http.NotFound(w, r)
		}
	})
	s := newSink(t, httpapi.Config{
		BaseURL: target.URL,
		Headers: map[string]string{"Authorization": "Bearer " + secret, "X-Api-Key": "key-" + secret, "Accept": "application/json"},
		Classifier: call.Classifier{RetryAfterHeaders: []call.RetryAfterHeader{
			{Name: "x-ms-retry-after-ms", Unit: call.UnitMilliseconds},
		}},
	})
	tests := []struct {
		path    string
		outcome call.Outcome
	}{
		{"/429", call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: 5 * time.Second}},
		{"/503", call.Outcome{Kind: call.Throttle, Status: 503, RetryAfter: 1500 * time.Millisecond}},
		{"/500", call.Outcome{Kind: call.ServerError, Status: 500}},
		{"/echo", call.Outcome{Kind: call.ClientError, Status: 400}},
		{"/404", call.Outcome{Kind: call.ClientError, Status: 404}},
	}
	for _, tt := range tests {
		res, err := s.Send(context.Background(), call.Request{Path: tt.path})
		if res.Outcome != tt.outcome {
			t.Errorf("%s: outcome %+v; want %+v", tt.path, res.Outcome, tt.outcome)
		}
		if tt.outcome.Status < 400 {
			if err != nil {
				t.Errorf("%s: err %v", tt.path, err)
			}
			continue
		}
		var se *call.StatusError
		if !errors.As(err, &se) {
			t.Fatalf("%s: err %v; want a *StatusError", tt.path, err)
		}
		if se.Code != tt.outcome.Status || se.RetryAfter != tt.outcome.RetryAfter {
			t.Errorf("%s: StatusError %+v; want code %d, retry after %v", tt.path, se, tt.outcome.Status, tt.outcome.RetryAfter)
		}
	}

	res, err := s.Send(context.Background(), call.Request{Path: "/echo"})
	var se *call.StatusError
	if !errors.As(err, &se) {
		t.Fatalf("/echo: %v", err)
	}
	if len(se.Body) != httpapi.ExcerptBytes {
		t.Errorf("excerpt of %d bytes; want %d", len(se.Body), httpapi.ExcerptBytes)
	}
	for _, b := range [][]byte{se.Body, res.Body, []byte(err.Error())} {
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("a credential leaked: %.200s", b)
		}
	}
	if !bytes.Contains(se.Body, []byte(`Authorization="[redacted]" X-Api-Key="[redacted]"`)) {
		t.Errorf("excerpt not redacted as expected: %.200s", se.Body)
	}
	if !strings.HasPrefix(err.Error(), "call: target answered 400") {
		t.Errorf("error text %q", err)
	}

	// Success bodies are returned as they are; a success carries no wait.
	res, err = s.Send(context.Background(), call.Request{Path: "/ok"})
	if err != nil || string(res.Body) != "fine, key-"+secret || res.Outcome.RetryAfter != 0 {
		t.Errorf("/ok: %q, %+v, %v", res.Body, res.Outcome, err)
	}
}

func TestBodyCap(t *testing.T) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 3<<20/16) // 3 MiB
	target := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/big":
			w.Write(big)
		case "/exact":
			w.Write(big[:1024])
		case "/huge": // more than the sink drains
			w.Header().Set("Content-Type", "application/octet-stream")
			for range 3 {
				w.Write(big)
			}
		}
	})
	s := newSink(t, httpapi.Config{BaseURL: target.URL, MaxResponseBytes: 1024})
	for range 3 {
		res, err := s.Send(context.Background(), call.Request{Path: "/big"})
		if err != nil {
			t.Fatalf("Send: %v", err)
		}
		if !res.Truncated || !bytes.Equal(res.Body, big[:1024]) {
			t.Fatalf("body of %d bytes, truncated %v; want the first 1024 bytes, truncated", len(res.Body), res.Truncated)
		}
	}
	res, err := s.Send(context.Background(), call.Request{Path: "/exact"})
	if err != nil || res.Truncated || len(res.Body) != 1024 {
		t.Fatalf("exact: %d bytes, truncated %v, %v", len(res.Body), res.Truncated, err)
	}
	if n := target.newConns.Load(); n != 1 {
		t.Errorf("%d connections for 4 sequential requests; want 1 (the rest of the body drained, the connection reused)", n)
	}
	res, err = s.Send(context.Background(), call.Request{Path: "/huge"})
	if err != nil || !res.Truncated || len(res.Body) != 1024 {
		t.Fatalf("huge: %d bytes, truncated %v, %v", len(res.Body), res.Truncated, err)
	}
	if got := res.Header.Get("Content-Type"); got != "application/octet-stream" {
		t.Errorf("Content-Type %q", got)
	}
}

func TestResponseHeaders(t *testing.T) {
	target := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		w.Header().Set("X-Request-Id", "abc")
		w.Header().Add("Set-Cookie", "a=1")
	})
	s := newSink(t, httpapi.Config{BaseURL: target.URL, ResponseHeaders: []string{"etag", "x-request-id", "x-missing"}})
	res, err := s.Send(context.Background(), call.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Header) != 2 || res.Header.Get("ETag") != `"v1"` || res.Header.Get("X-Request-Id") != "abc" {
		t.Errorf("headers %v; want ETag and X-Request-Id only", res.Header)
	}
	s = newSink(t, httpapi.Config{BaseURL: target.URL})
	res, _ = s.Send(context.Background(), call.Request{})
	if res.Header.Get("Set-Cookie") != "a=1" || res.Header.Get("Etag") == "" {
		t.Errorf("nil ResponseHeaders should keep them all: %v", res.Header)
	}
}

// TestResponseHeaderCap: headers of up to MaxResponseHeaderBytes are read;
// more (the report's 1.3 MB quota header) make a network error, never
// parsed.
func TestResponseHeaderCap(t *testing.T) {
	var size atomic.Int64
	target := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("RateLimit-Policy", strings.Repeat("a", int(size.Load())))
		w.WriteHeader(http.StatusOK)
	})
	s := newSink(t, httpapi.Config{BaseURL: target.URL})
	size.Store(httpapi.MaxResponseHeaderBytes / 2)
	if res, err := s.Send(context.Background(), call.Request{}); err != nil || res.Status != http.StatusOK {
		t.Fatalf("a header of %d bytes: status %d, %v; want 200", size.Load(), res.Status, err)
	}
	size.Store(httpapi.MaxResponseHeaderBytes + 1)
	res, err := s.Send(context.Background(), call.Request{})
	if err == nil || res.Outcome.Kind != call.NetworkError {
		t.Fatalf("a header of %d bytes: status %d, outcome %v, err %v; want a network error", size.Load(), res.Status, res.Outcome.Kind, err)
	}
}

func TestNetworkError(t *testing.T) {
	gone := httptest.NewServer(http.NotFoundHandler())
	url := gone.URL
	gone.Close()
	s := newSink(t, httpapi.Config{BaseURL: url})
	res, err := s.Send(context.Background(), call.Request{Path: "/x"})
	if err == nil || errors.Is(err, call.ErrInvalidRequest) || errors.Is(err, httpapi.ErrTimeout) {
		t.Fatalf("err = %v; want a network error", err)
	}
	var se *call.StatusError
	if errors.As(err, &se) {
		t.Fatalf("err = %v; want no StatusError", err)
	}
	if res.Outcome.Kind != call.NetworkError || res.Status != 0 {
		t.Errorf("result %+v; want a network error", res)
	}
	if !strings.HasPrefix(err.Error(), "httpapi: GET /[redacted]: ") || strings.Contains(err.Error(), url) {
		t.Errorf("error text %q: want the method, the path redacted, and no URL", err)
	}
}

// TestTimeoutRealNetwork checks that the timeout holds on a real socket
// against a server that accepts and never answers, and one that stops in
// the middle of the body. The deadline is short; nothing asserts how long
// it took.
func TestTimeoutRealNetwork(t *testing.T) {
	release := make(chan struct{})
	target := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/half" {
			w.Write([]byte("partial"))
			w.(http.Flusher).Flush()
		}
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	s := newSink(t, httpapi.Config{BaseURL: target.URL, Timeout: 200 * time.Millisecond})
	res, err := s.Send(context.Background(), call.Request{Path: "/hang"})
	if !errors.Is(err, httpapi.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hang: err = %v; want ErrTimeout", err)
	}
	if res.Outcome.Kind != call.NetworkError {
		t.Errorf("hang: outcome %v; want network_error", res.Outcome.Kind)
	}
	res, err = s.Send(context.Background(), call.Request{Path: "/half"})
	if !errors.Is(err, httpapi.ErrTimeout) {
		t.Fatalf("half: err = %v; want ErrTimeout", err)
	}
	if res.Outcome.Kind != call.NetworkError || res.Status != 200 {
		t.Errorf("half: result %+v; want status 200, network_error", res)
	}
}

func TestMiddleware(t *testing.T) {
	target := newRecorder(t, nil)
	var seen atomic.Int32
	s := newSink(t, httpapi.Config{BaseURL: target.URL}, httpapi.WithMiddleware(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			seen.Add(1)
			return next.RoundTrip(r)
		})
	}))
	if _, err := s.Send(context.Background(), call.Request{}); err != nil {
		t.Fatal(err)
	}
	if seen.Load() != 1 || target.count() != 1 {
		t.Errorf("middleware saw %d, target %d; want 1 and 1", seen.Load(), target.count())
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
