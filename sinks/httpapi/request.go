package httpapi

import (
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/call"
)

// Limits on what a job may ask for.
const (
	maxPathBytes   = 8 << 10  // path and query
	maxHeaderBytes = 64 << 10 // names and values of the job's headers
	decodeDepth    = 3        // levels of percent-decoding checked for tricks
)

// invalid returns an error wrapping call.ErrInvalidRequest: the request
// cannot be made on the target (a path that would leave it, a bad method,
// a header with CR/LF); it is never sent and retrying cannot help.
func invalid(format string, args ...any) error {
	return fmt.Errorf("httpapi: %w: "+format, append([]any{call.ErrInvalidRequest}, args...)...)
}

// quote shortens s for an error message.
func quote(s string) string {
	const max = 200
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}

var standardMethods = []string{
	http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
	http.MethodDelete, http.MethodOptions, http.MethodTrace,
}

func checkMethod(m string) (string, error) {
	if m == "" {
		return http.MethodGet, nil
	}
	for _, std := range standardMethods {
		if strings.EqualFold(m, std) {
			return std, nil
		}
	}
	if strings.EqualFold(m, http.MethodConnect) {
		return "", invalid("method: CONNECT is not allowed")
	}
	if err := call.CheckMethod("method", m); err != nil {
		return "", invalid("%v", err)
	}
	return m, nil
}

// resolve joins p under the base URL and checks that the result stays on
// the target: same scheme, host and port, under the base path.
func resolve(base *url.URL, p string) (*url.URL, error) {
	if len(p) > maxPathBytes {
		return nil, invalid("path: longer than %d bytes", maxPathBytes)
	}
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c < 0x20 || c == 0x7f:
			return nil, invalid("path: control character at byte %d", i)
		case c == ' ':
			return nil, invalid("path: space at byte %d (percent-encode it)", i)
		case c == '\\':
			return nil, invalid("path: backslash at byte %d", i)
		case c > 0x7e:
			return nil, invalid("path: non-ASCII byte at %d (percent-encode it)", i)
		}
	}
	if strings.HasPrefix(p, "//") {
		return nil, invalid("path: scheme-relative URL %s would leave the target", quote(p))
	}
	if strings.IndexByte(p, '#') >= 0 {
		return nil, invalid("path: fragment not allowed in %s", quote(p))
	}
	rawPath, rawQuery, _ := strings.Cut(p, "?")
	if !validEscapes(rawPath) || !validEscapes(rawQuery) {
		return nil, invalid("path: bad percent-encoding in %s", quote(p))
	}
	if rawPath != "" && !strings.HasPrefix(rawPath, "/") {
		// A first segment with a colon would read as a scheme, one with
		// an @ as user info before a host: "http:x", "evil.example@x".
		first, _, _ := strings.Cut(rawPath, "/")
		for level, s := range decodings(first) {
			if strings.ContainsAny(s, ":@") {
				if level == 0 && strings.Contains(s, ":") {
					return nil, invalid("path: absolute URL %s would leave the target", quote(p))
				}
				return nil, invalid("path: ':' or '@' before the first slash in %s", quote(p))
			}
		}
		rawPath = "/" + rawPath
	}
	for _, s := range decodings(rawPath) {
		if err := checkDecodedPath(s); err != nil {
			return nil, invalid("path: %s in %s", err, quote(p))
		}
	}

	joined := base.EscapedPath() + rawPath
	decoded, err := url.PathUnescape(joined)
	if err != nil {
		return nil, invalid("path: bad percent-encoding in %s", quote(p))
	}
	if strings.HasPrefix(decoded, "//") {
		return nil, invalid("path: %s would begin with //", quote(p))
	}
	u := &url.URL{Scheme: base.Scheme, Host: base.Host, Path: decoded, RawQuery: rawQuery}
	if decoded != joined {
		u.RawPath = joined
	}

	// Belt and braces: read the URL back as the client will send it.
	back, err := url.Parse(u.String())
	if err != nil || back.Scheme != base.Scheme || back.Host != base.Host || back.User != nil ||
		back.Port() != base.Port() || back.Hostname() != base.Hostname() ||
		!underBase(back.EscapedPath(), base.EscapedPath()) {
		return nil, invalid("path: %s does not stay on the target", quote(p))
	}
	return u, nil
}

func underBase(p, base string) bool {
	return p == base || strings.HasPrefix(p, base+"/")
}

// decodings returns s and its successive percent-decodings, up to
// decodeDepth levels or until nothing is left to decode.
func decodings(s string) []string {
	out := []string{s}
	for range decodeDepth {
		if strings.IndexByte(s, '%') < 0 {
			break
		}
		d, err := url.PathUnescape(s)
		if err != nil || d == s {
			break
		}
		out = append(out, d)
		s = d
	}
	return out
}

// checkDecodedPath refuses what a server decoding the path might read as a
// different path: dot segments (which climb out of the base path),
// backslashes (a separator to some servers) and control characters.
func checkDecodedPath(s string) error {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return errors.New("encoded control character")
		}
	}
	if strings.IndexByte(s, '\\') >= 0 {
		return errors.New("encoded backslash")
	}
	for seg := range strings.SplitSeq(s, "/") {
		if seg == "." || seg == ".." {
			return errors.New("dot segment")
		}
	}
	return nil
}

// validEscapes reports whether every % in s starts a two-digit hex escape.
func validEscapes(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '%' {
			if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
				return false
			}
			i += 2
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// checkHeaders refuses job headers that cannot be sent: more than
// maxHeaderBytes, a name that is not a token, a value with CR, LF or
// another control character; even a header that would have been dropped.
func checkHeaders(in http.Header) error {
	size := 0
	valid := true
	for name, vals := range in {
		size += len(name)
		valid = valid && httpguts.ValidHeaderFieldName(name)
		for _, v := range vals {
			size += len(v)
			valid = valid && httpguts.ValidHeaderFieldValue(v)
		}
	}
	if size > maxHeaderBytes {
		return invalid("headers: larger than %d bytes", maxHeaderBytes)
	}
	if valid {
		return nil
	}
	// Name the first bad header in order.
	for _, name := range slices.Sorted(maps.Keys(in)) {
		if !httpguts.ValidHeaderFieldName(name) {
			return invalid("header %s: invalid name", quote(name))
		}
		for _, v := range in[name] {
			if !httpguts.ValidHeaderFieldValue(v) {
				// Do not echo the value: it may be a credential.
				return invalid("header %s: value contains CR, LF or another control character", name)
			}
		}
	}
	return nil
}

// fixedHeader is a header every request carries: one of the config's, or
// the default User-Agent. vals is shared by every request's Header, which
// nothing changes in place.
type fixedHeader struct {
	name string // canonical
	vals []string
}

// fixedHeaders returns the config's headers, canonical, in the order Set
// would apply them (sorted by the name as configured).
func fixedHeaders(h map[string]string) []fixedHeader {
	out := make([]fixedHeader, 0, len(h))
	for _, name := range sortedKeys(h) {
		canon := http.CanonicalHeaderKey(name)
		out = slices.DeleteFunc(out, func(f fixedHeader) bool { return f.name == canon })
		out = append(out, fixedHeader{name: canon, vals: []string{h[name]}})
	}
	return out
}

// header returns the headers of a request with job headers in (checked by
// checkHeaders) and the job id: the job's headers that may be sent, the
// config's on top, the default User-Agent unless one is set, the
// Idempotency-Key, and the trace context sc when it is valid (it replaces
// a job's own). The values of the request's own headers share one array.
func (s *Sink) header(in http.Header, id string, sc trace.SpanContext) http.Header {
	n := 0
	canonical := true
	for name, vals := range in {
		n += len(vals)
		canonical = canonical && http.CanonicalHeaderKey(name) == name
	}
	out := make(http.Header, len(in)+len(s.fixed)+4)
	vals := make([]string, 0, n+3)
	// put sets name to v, its values in vals.
	put := func(name string, v ...string) {
		i := len(vals)
		vals = append(vals, v...)
		out[name] = vals[i:len(vals):len(vals)]
	}
	if len(in) > 0 {
		// Headers named in Connection are hop-by-hop too (RFC 9110, 7.6.1).
		var listed []string
		for _, v := range in.Values("Connection") {
			for tok := range strings.SplitSeq(v, ",") {
				if tok = strings.TrimSpace(tok); tok != "" {
					listed = append(listed, http.CanonicalHeaderKey(tok))
				}
			}
		}
		keep := func(canon string) bool {
			switch {
			case slices.Contains(alwaysDropped, canon), strings.HasPrefix(canon, "Proxy-"), slices.Contains(listed, canon):
				return false
			case slices.Contains(droppedUnlessAllowed, canon) && !s.allowed[canon]:
				return false
			}
			return true
		}
		if canonical {
			// No two names are one header: map order will do.
			for name, v := range in {
				if keep(name) {
					put(name, v...)
				}
			}
		} else {
			for _, name := range slices.Sorted(maps.Keys(in)) {
				if canon := http.CanonicalHeaderKey(name); keep(canon) {
					out[canon] = append(slices.Clip(out[canon]), in[name]...)
				}
			}
		}
	}
	for _, f := range s.fixed {
		out[f.name] = f.vals
	}
	if ua := out["User-Agent"]; len(ua) == 0 || ua[0] == "" {
		out["User-Agent"] = s.userAgent
	}
	if s.idempotency != "" && id != "" {
		put(s.idempotency, id)
	}
	if sc.IsValid() {
		delete(out, "Traceparent")
		delete(out, "Tracestate")
		put("Traceparent", traceparent(sc))
		if ts := sc.TraceState().String(); ts != "" {
			put("Tracestate", ts)
		}
	}
	return out
}
