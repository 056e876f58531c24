package httpapi_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sinks/httpapi"
)

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
