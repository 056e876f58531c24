package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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

func TestPathStaysOnTarget(t *testing.T) {
	target := newRecorder(t, nil)
	other := newRecorder(t, nil)
	otherHost := strings.TrimPrefix(other.URL, "http://")
	otherPort := other.Listener.Addr().(*net.TCPAddr).Port

	bad := []string{
		"http://169.254.169.254/latest/meta-data/",
		"https://other/",
		"HTTP://" + otherHost + "/x",
		other.URL + "/x",
		"http:" + otherHost + "/x",
		"http:/x",
		"javascript:alert(1)",
		"//evil.example/x",
		"//" + otherHost + "/x",
		"///" + otherHost + "/x",
		otherHost + "/x",
		"localhost:" + fmt.Sprint(otherPort) + "/x",
		"@" + otherHost + "/x",
		"user@" + otherHost + "/x",
		"user%40" + otherHost + "/x",
		"http://target@" + otherHost + "/x",
		target.URL + "@" + otherHost + "/x",
		`\\` + otherHost + `\x`,
		`/\` + otherHost + `/x`,
		`/x\y`,
		"/%5C%5C" + otherHost + "/x",
		"/../x",
		"/a/../../x",
		"/a/./b",
		"..",
		"/%2e%2e/x",
		"/%2E%2E%2Fx",
		"/..%2fx",
		"/.%2e/x",
		"/%252e%252e/x",
		"/%25252e%25252e/x",
		"/x%00y",
		"/x%0d%0aHost:%20evil",
		"/x\r\nHost: evil",
		"/x\x00",
		"/x\x7f",
		"\t//evil.example/x",
		" /x",
		"/x y",
		"/x#fragment",
		"/é",
		"/%zz",
		"/x%",
		"/x%4",
		"/x?q=%zz",
		strings.Repeat("/a", 5000),
	}
	for _, basePath := range []string{"", "/api"} {
		s := newSink(t, httpapi.Config{BaseURL: target.URL + basePath})
		for _, p := range bad {
			res, err := s.Send(context.Background(), call.Request{Method: "GET", Path: p})
			if !errors.Is(err, call.ErrInvalidRequest) {
				t.Errorf("base %q: Send(%q): err = %v; want ErrInvalidRequest", basePath, p, err)
			}
			if res.Status != 0 || res.Outcome != (call.Outcome{}) {
				t.Errorf("base %q: Send(%q): result %+v; want zero", basePath, p, res)
			}
			if err := s.Check(call.Request{Path: p}); !errors.Is(err, call.ErrInvalidRequest) {
				t.Errorf("base %q: Check(%q) = %v; want ErrInvalidRequest", basePath, p, err)
			}
		}
	}
	// Encoded slashes that would begin the joined path with // are refused
	// only where there is no base path.
	root := newSink(t, httpapi.Config{BaseURL: target.URL})
	for _, p := range []string{"/%2F%2F" + otherHost + "/x", "%2F" + otherHost + "/x", "/%2f"} {
		if err := root.Check(call.Request{Path: p}); !errors.Is(err, call.ErrInvalidRequest) {
			t.Errorf("root: Check(%q) = %v; want ErrInvalidRequest", p, err)
		}
	}
	if n := other.count(); n != 0 {
		t.Fatalf("the other server saw %d requests; want 0", n)
	}
	if n := target.count(); n != 0 {
		t.Fatalf("the target saw %d requests for invalid paths; want 0", n)
	}
}

func TestPathJoin(t *testing.T) {
	target := newRecorder(t, nil)
	tests := []struct {
		base, path, want string
	}{
		{"/api", "/users/7?fields=name", "/api/users/7?fields=name"},
		{"/api/", "/users/7", "/api/users/7"},
		{"/api", "users/7", "/api/users/7"},
		{"/api", "", "/api"},
		{"/api", "/", "/api/"},
		{"/api", "?q=1", "/api?q=1"},
		{"/api", "/group%2Fproject/issues", "/api/group%2Fproject/issues"},
		{"/api", "/v1/things:batchGet", "/api/v1/things:batchGet"},
		{"/api", "/@me", "/api/@me"},
		{"/api", "/a%20b/..c/c..", "/api/a%20b/..c/c.."},
		{"/api", "/x?redirect=http://169.254.169.254/", "/api/x?redirect=http://169.254.169.254/"},
		{"/api/v%31", "/x", "/api/v%31/x"},
		{"", "/x", "/x"},
		{"", "", "/"},
		{"/api", "/%2F%2Fevil/x", "/api/%2F%2Fevil/x"},
	}
	for _, tt := range tests {
		s := newSink(t, httpapi.Config{BaseURL: target.URL + tt.base})
		res, err := s.Send(context.Background(), call.Request{Path: tt.path})
		if err != nil || res.Status != 200 {
			t.Errorf("base %q path %q: status %d, err %v", tt.base, tt.path, res.Status, err)
			continue
		}
		if got := target.last().RequestURI; got != tt.want {
			t.Errorf("base %q path %q: target saw %q; want %q", tt.base, tt.path, got, tt.want)
		}
	}
}

func TestRedirectNotFollowed(t *testing.T) {
	other := newRecorder(t, nil)
	target := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/stolen", http.StatusFound)
	})
	s := newSink(t, httpapi.Config{BaseURL: target.URL})
	res, err := s.Send(context.Background(), call.Request{Method: "POST", Path: "/x", Body: []byte("{}")})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if res.Status != http.StatusFound || res.Outcome.Kind != call.Success {
		t.Errorf("result %+v; want 302, success", res)
	}
	if n := other.count(); n != 0 {
		t.Fatalf("the redirect was followed: the other server saw %d requests", n)
	}
}

func TestHeaders(t *testing.T) {
	target := newRecorder(t, nil)
	const secret = "config-secret-0123456789"
	job := http.Header{
		"Connection":          {"keep-alive, X-Hop"},
		"X-Hop":               {"1"},
		"Keep-Alive":          {"timeout=5"},
		"Proxy-Authorization": {"Basic cHJveHk="},
		"Proxy-Anything":      {"x"},
		"Te":                  {"trailers"},
		"Trailer":             {"X-T"},
		"Transfer-Encoding":   {"chunked"},
		"Upgrade":             {"websocket"},
		"Host":                {"evil.example"},
		"Content-Length":      {"999"},
		"Authorization":       {"Bearer job-token"},
		"X-Custom":            {"a", "b"},
		"x-lower":             {"yes"},
		"X-Api-Key":           {"job-value"},
		"Content-Type":        {"application/json"},
	}
	body := []byte(`{"a":1}`)
	cfg := httpapi.Config{BaseURL: target.URL, Headers: map[string]string{"X-Api-Key": secret}}

	s := newSink(t, cfg)
	if _, err := s.Send(context.Background(), call.Request{Method: "post", Path: "/x", Header: job, Body: body}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	r := target.last()
	if r.Method != "POST" {
		t.Errorf("method %q; want POST", r.Method)
	}
	for _, name := range []string{"X-Hop", "Keep-Alive", "Proxy-Authorization", "Proxy-Anything", "Te", "Trailer", "Upgrade", "Authorization"} {
		if v := r.Header.Values(name); len(v) > 0 {
			t.Errorf("header %s reached the target: %q", name, v)
		}
	}
	if r.Host != strings.TrimPrefix(target.URL, "http://") {
		t.Errorf("Host %q; want the target's", r.Host)
	}
	if r.ContentLength != int64(len(body)) || len(r.TransferEncoding) != 0 {
		t.Errorf("Content-Length %d, Transfer-Encoding %v; want %d and none", r.ContentLength, r.TransferEncoding, len(body))
	}
	want := map[string][]string{
		"X-Custom":     {"a", "b"},
		"X-Lower":      {"yes"},
		"X-Api-Key":    {secret},
		"Content-Type": {"application/json"},
		"User-Agent":   {"sluice"},
	}
	for name, v := range want {
		if got := r.Header.Values(name); strings.Join(got, ",") != strings.Join(v, ",") {
			t.Errorf("header %s = %q; want %q", name, got, v)
		}
	}

	// Authorization allowed; a config Authorization still wins over it.
	cfg.AllowJobHeaders = []string{"authorization"}
	s = newSink(t, cfg)
	if _, err := s.Send(context.Background(), call.Request{Path: "/x", Header: job}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := target.last().Header.Get("Authorization"); got != "Bearer job-token" {
		t.Errorf("allowed Authorization = %q; want the job's", got)
	}
	cfg.Headers = map[string]string{"Authorization": "Bearer config-token-123", "User-Agent": "ua/1"}
	s = newSink(t, cfg)
	if _, err := s.Send(context.Background(), call.Request{Path: "/x", Header: job}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := target.last().Header.Get("Authorization"); got != "Bearer config-token-123" {
		t.Errorf("Authorization = %q; want the config's", got)
	}
	if got := target.last().Header.Get("User-Agent"); got != "ua/1" {
		t.Errorf("User-Agent = %q; want the config's", got)
	}
}

func TestInvalidRequests(t *testing.T) {
	target := newRecorder(t, nil)
	s := newSink(t, httpapi.Config{BaseURL: target.URL})
	tests := []struct {
		name string
		req  call.Request
		want string
	}{
		{"CR LF in value", call.Request{Header: http.Header{"X-A": {"v\r\nX-Injected: 1"}}}, `header X-A: value contains CR, LF`},
		{"LF in value", call.Request{Header: http.Header{"X-A": {"v\nw"}}}, `header X-A: value contains`},
		{"NUL in value", call.Request{Header: http.Header{"X-A": {"v\x00"}}}, `header X-A: value contains`},
		{"CR LF in a dropped header", call.Request{Header: http.Header{"Connection": {"close\r\nX: 1"}}}, `header Connection: value contains`},
		{"CR LF in name", call.Request{Header: http.Header{"X-A\r\nX-B": {"v"}}}, `invalid name`},
		{"space in name", call.Request{Header: http.Header{"X A": {"v"}}}, `invalid name`},
		{"colon in name", call.Request{Header: http.Header{"X:A": {"v"}}}, `invalid name`},
		{"empty name", call.Request{Header: http.Header{"": {"v"}}}, `invalid name`},
		{"huge headers", call.Request{Header: http.Header{"X-A": {strings.Repeat("a", 70<<10)}}}, `headers: larger than`},
		{"CONNECT", call.Request{Method: "connect"}, `method: CONNECT`},
		{"method with space", call.Request{Method: "GET /x HTTP/1.1\r\n"}, `method: must be an HTTP method such as POST`},
	}
	for _, tt := range tests {
		_, err := s.Send(context.Background(), tt.req)
		if !errors.Is(err, call.ErrInvalidRequest) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v; want ErrInvalidRequest with %q", tt.name, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "Injected") {
			t.Errorf("%s: the error echoes the header value: %v", tt.name, err)
		}
	}
	if n := target.count(); n != 0 {
		t.Fatalf("the target saw %d requests; want 0", n)
	}
	// Methods: standard ones in any case, others as tokens.
	for in, want := range map[string]string{"": "GET", "delete": "DELETE", "Patch": "PATCH", "PROPFIND": "PROPFIND"} {
		if _, err := s.Send(context.Background(), call.Request{Method: in}); err != nil {
			t.Fatalf("method %q: %v", in, err)
		}
		if got := target.last().Method; got != want {
			t.Errorf("method %q sent as %q; want %q", in, got, want)
		}
	}
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

func TestConfigValidate(t *testing.T) {
	ok := []httpapi.Config{
		{BaseURL: "http://127.0.0.1:8080"},
		{BaseURL: "https://api.example/v2/", Timeout: time.Second, MaxResponseBytes: 10, MaxConns: 4,
			Headers: map[string]string{"Authorization": "Bearer x"}, AllowJobHeaders: []string{"Authorization", "X-Other"}},
	}
	for _, c := range ok {
		if err := c.Validate(); err != nil {
			t.Errorf("Validate(%v) = %v", c, err)
		}
	}
	tests := []struct {
		c    httpapi.Config
		want string
	}{
		{httpapi.Config{}, "base_url: required"},
		{httpapi.Config{BaseURL: "127.0.0.1:8080"}, "base_url: must be an absolute http or https URL"},
		{httpapi.Config{BaseURL: "ftp://x/"}, "base_url: must be an absolute http or https URL"},
		{httpapi.Config{BaseURL: "http:///x"}, "base_url: must name a host"},
		{httpapi.Config{BaseURL: "http://u:hunter2@x/"}, "base_url: must not carry user info"},
		{httpapi.Config{BaseURL: "http://x/?a=1"}, "base_url: must have no query"},
		{httpapi.Config{BaseURL: "http://x/#f"}, "base_url: must have no fragment"},
		{httpapi.Config{BaseURL: `http://x/a\b`}, "base_url: must not contain"},
		{httpapi.Config{BaseURL: "http://x", Timeout: -1}, "timeout: must be >= 0, got -1ns"},
		{httpapi.Config{BaseURL: "http://x", MaxResponseBytes: -1}, "max_response_bytes: must be >= 0, got -1"},
		{httpapi.Config{BaseURL: "http://x", MaxConns: -2}, "max_conns: must be >= 0, got -2"},
		{httpapi.Config{BaseURL: "http://x", Headers: map[string]string{"Bad Name": "v"}}, `headers: must be a valid header name, got "Bad Name"`},
		{httpapi.Config{BaseURL: "http://x", Headers: map[string]string{"X-Key": "hunter2\r\nX: y"}}, "headers.X-Key: must be a valid header value"},
		{httpapi.Config{BaseURL: "http://x", Headers: map[string]string{"host": "other"}}, "headers.host: must be a header the client does not set itself"},
		{httpapi.Config{BaseURL: "http://x", AllowJobHeaders: []string{"Host"}}, `allow_job_headers[0]: must be a header that does not control`},
		{httpapi.Config{BaseURL: "http://x", AllowJobHeaders: []string{"ok", "transfer-encoding"}}, `allow_job_headers[1]`},
		{httpapi.Config{BaseURL: "http://x", ResponseHeaders: []string{"a b"}}, `response_headers[0]`},
		{httpapi.Config{BaseURL: "http://x", UserAgent: "a\nb"}, `user_agent`},
		{httpapi.Config{BaseURL: "http://x", Classifier: call.Classifier{ThrottleStatuses: []int{1}}}, `throttle_statuses[0]`},
	}
	for _, tt := range tests {
		err := tt.c.Validate()
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%v) = %v; want %q", tt.c, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("Validate echoes a secret: %v", err)
		}
		if _, nerr := httpapi.New(tt.c); nerr == nil {
			t.Errorf("New(%v) accepted an invalid config", tt.c)
		}
	}
}

func TestConfigRedacts(t *testing.T) {
	const secret = "s3cr3t-token-value"
	c := httpapi.Config{BaseURL: "http://127.0.0.1:1", Headers: map[string]string{"Authorization": "Bearer " + secret, "X-Key": secret}}
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})).Info("config", "target", c)
	slog.New(slog.NewTextHandler(&logs, nil)).Info("config", "target", c)
	outs := []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c), logs.String()}
	for _, out := range outs {
		if strings.Contains(out, secret) {
			t.Errorf("secret printed: %s", out)
		}
		if !strings.Contains(out, "Authorization") || !strings.Contains(out, "[redacted]") {
			t.Errorf("header names should be shown with redacted values: %s", out)
		}
	}

	// Debug logs of calls never hold header values.
	target := newRecorder(t, nil)
	c.BaseURL = target.URL
	var calls bytes.Buffer
	s := newSink(t, c, httpapi.WithLogger(slog.New(slog.NewJSONHandler(&calls, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	if _, err := s.Send(context.Background(), call.Request{Path: "/x?token=" + secret, Header: http.Header{"X-Job": {secret}}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(calls.String(), `"path":"/[redacted]"`) || strings.Contains(calls.String(), secret) {
		t.Errorf("call log: %s", calls.String())
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
