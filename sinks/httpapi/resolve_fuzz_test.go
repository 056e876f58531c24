package httpapi

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzResolve checks that whatever path a job gives, an accepted one stays
// on the target: same scheme and host, under the base path, with no dot
// segment a server could resolve.
func FuzzResolve(f *testing.F) {
	for _, p := range []string{"/users/7?fields=name", "users/7", "", "/", "//evil.example/x",
		"http://169.254.169.254/", "@evil/x", "/%2e%2e/x", "/%252e%252e/x", `/\evil`, "/a%2Fb", "?q=1",
		"/x#f", "%2F%2Fevil", "/v1/x:batchGet", "/@me"} {
		f.Add(p, true)
		f.Add(p, false)
	}
	f.Fuzz(func(t *testing.T, p string, withBasePath bool) {
		raw := "http://target.test:8080"
		if withBasePath {
			raw += "/api"
		}
		base, err := parseBaseURL(raw)
		if err != nil {
			t.Fatal(err)
		}
		u, err := resolve(base, p)
		if err != nil {
			return
		}
		back, err := url.Parse(u.String())
		if err != nil {
			t.Fatalf("resolve(%q) = %q, which does not parse: %v", p, u, err)
		}
		if back.Scheme != "http" || back.Host != "target.test:8080" || back.User != nil || back.Opaque != "" {
			t.Fatalf("resolve(%q) = %q: left the target", p, u)
		}
		if withBasePath && back.EscapedPath() != "/api" && !strings.HasPrefix(back.EscapedPath(), "/api/") {
			t.Fatalf("resolve(%q) = %q: not under /api", p, u)
		}
		if strings.HasPrefix(back.Path, "//") {
			t.Fatalf("resolve(%q) = %q: path begins with //", p, u)
		}
		for _, s := range []string{back.EscapedPath(), back.Path} {
			for seg := range strings.SplitSeq(s, "/") {
				if seg == "." || seg == ".." {
					t.Fatalf("resolve(%q) = %q: dot segment", p, u)
				}
			}
		}
		if strings.ContainsAny(u.String(), "\\\r\n\x00 #") {
			t.Fatalf("resolve(%q) = %q: forbidden character", p, u)
		}
	})
}
