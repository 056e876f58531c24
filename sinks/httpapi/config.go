package httpapi

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/field"
)

// Defaults for the zero fields of Config.
const (
	DefaultTimeout          = 30 * time.Second
	DefaultMaxResponseBytes = 1 << 20 // 1 MiB
	// MaxMaxResponseBytes bounds MaxResponseBytes: each call in flight may
	// hold this much.
	MaxMaxResponseBytes = 64 << 20
	DefaultMaxConns     = 64
	DefaultUserAgent    = "sluice"
	// DefaultIdempotencyHeader is the config file's default
	// IdempotencyHeader (IETF draft-ietf-httpapi-idempotency-key-header).
	DefaultIdempotencyHeader = "Idempotency-Key"
)

// Config describes the target API. The zero value of every field but
// BaseURL takes its default.
type Config struct {
	// BaseURL is the target, "http://host:port/base/path" or https. Every
	// request goes to its scheme, host and port, under its path. It may
	// carry no user info, query or fragment. Required.
	BaseURL string

	// Timeout bounds one request, from sending it to the last byte of the
	// response body read. Default 30s.
	Timeout time.Duration

	// MaxResponseBytes is the most of a response body kept; the rest is
	// read and discarded (up to a bound) so the connection can be reused.
	// Default 1 MiB.
	MaxResponseBytes int64

	// MaxConns sizes the connection pool to the target: at most this many
	// connections, all of which may stay idle for reuse. Set it to the
	// worker's concurrency. Default 64.
	MaxConns int

	// Headers are set on every request and replace a job's header of the
	// same name. Values are already resolved (environment references
	// expanded) and are secret: they are never logged, and Config's
	// String, GoString and LogValue redact them.
	Headers map[string]string

	// Secrets are more values that must not reach an error body or a
	// shown path: sluice run gives every value the config file took from
	// the environment (${VAR}). Like header values, those of at least 8
	// bytes are redacted in every spelling a target may echo them in
	// (percent-encoded, JSON-escaped, HTML references). String, GoString
	// and LogValue never show them.
	Secrets []string

	// AllowJobHeaders lets these job headers through where they would be
	// dropped. Only Authorization can be allowed: the connection and
	// framing headers (hop-by-hop, Host, Content-Length) are always
	// dropped.
	AllowJobHeaders []string

	// ResponseHeaders are the response headers kept in a Result. Nil keeps
	// them all; an empty, non-nil slice keeps none.
	ResponseHeaders []string

	// UserAgent is sent when neither Headers nor the job set one. Default
	// "sluice".
	UserAgent string

	// IdempotencyHeader names the header that carries the job's id
	// (call.Request.ID) on every attempt, so that the target can
	// deduplicate the redeliveries of at-least-once delivery. Empty sends
	// none; the config file's default is DefaultIdempotencyHeader.
	IdempotencyHeader string

	// Classifier classifies responses; its zero value is the default
	// (429, and 503 with Retry-After, are throttles).
	Classifier call.Classifier

	// LogURLPath shows the paths of the target's URLs (base_url's and the
	// job's) in logs, errors and Config's String and LogValue. By default
	// a path is secret, as webhook and bot URLs carry tokens in it: only
	// scheme://host[:port] is shown, followed by /[redacted].
	LogURLPath bool
}

// redactedPath stands for a URL path that is not shown.
const redactedPath = "/[redacted]"

// ShownURL is how u is printed: scheme://host[:port] and, unless
// LogURLPath, /[redacted] in place of a non-empty path. User info, query
// and fragment are never shown.
func (c Config) ShownURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	s := u.Scheme + "://" + u.Host
	switch p := u.EscapedPath(); {
	case p == "" || p == "/":
		return s + p
	case c.LogURLPath:
		return s + p
	}
	return s + redactedPath
}

// ShownPath is how a request path is printed: as is with LogURLPath, else
// /[redacted].
func (c Config) ShownPath(p string) string {
	if c.LogURLPath || p == "" || p == "/" {
		return p
	}
	return redactedPath
}

// ShownBaseURL is BaseURL as ShownURL prints it; "[invalid URL]" if it
// does not parse.
func (c Config) ShownBaseURL() string {
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return "[invalid URL]"
	}
	return c.ShownURL(u)
}

// alwaysDropped are job headers that control the connection or the framing
// of the message. They are never taken from a job, nor allowed by config:
// the HTTP client sets them itself.
var alwaysDropped = []string{
	"Connection", "Content-Length", "Host", "Keep-Alive", "Proxy-Authenticate",
	"Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// droppedUnlessAllowed are job headers dropped unless AllowJobHeaders
// names them.
var droppedUnlessAllowed = []string{"Authorization"}

// Validate reports every field that breaks its rule, naming the field as it
// is spelled in the config file. It never prints a header value.
func (c Config) Validate() error {
	var errs []error
	bad := func(name string, value any, rule string) {
		errs = append(errs, field.Invalid(name, "must be %s, got %v", rule, value))
	}
	if c.BaseURL == "" {
		errs = append(errs, field.Invalid("base_url", "required"))
	} else if _, err := parseBaseURL(c.BaseURL); err != nil {
		errs = append(errs, err)
	}
	if c.Timeout < 0 {
		bad("timeout", c.Timeout, ">= 0")
	}
	if c.MaxResponseBytes < 0 {
		bad("max_response_bytes", c.MaxResponseBytes, ">= 0")
	} else if c.MaxResponseBytes > MaxMaxResponseBytes {
		bad("max_response_bytes", c.MaxResponseBytes, fmt.Sprintf("<= %d", MaxMaxResponseBytes))
	}
	if c.MaxConns < 0 {
		bad("max_conns", c.MaxConns, ">= 0")
	}
	for _, name := range sortedKeys(c.Headers) {
		switch {
		case !httpguts.ValidHeaderFieldName(name):
			bad("headers", fmt.Sprintf("%q", name), "a valid header name")
		case slices.Contains(alwaysDropped, http.CanonicalHeaderKey(name)):
			bad("headers."+name, "a connection or framing header", "a header the client does not set itself")
		case !httpguts.ValidHeaderFieldValue(c.Headers[name]):
			// The value is secret: say what is wrong, not what it is.
			bad("headers."+name, "a value with a control character (CR, LF, NUL...)", "a valid header value")
		}
	}
	for i, name := range c.AllowJobHeaders {
		switch canon := http.CanonicalHeaderKey(name); {
		case !httpguts.ValidHeaderFieldName(name):
			bad(fmt.Sprintf("allow_job_headers[%d]", i), fmt.Sprintf("%q", name), "a valid header name")
		case slices.Contains(alwaysDropped, canon):
			bad(fmt.Sprintf("allow_job_headers[%d]", i), fmt.Sprintf("%q", name),
				"a header that does not control the connection or framing (those are always dropped)")
		}
	}
	for i, name := range c.ResponseHeaders {
		if !httpguts.ValidHeaderFieldName(name) {
			bad(fmt.Sprintf("response_headers[%d]", i), fmt.Sprintf("%q", name), "a valid header name")
		}
	}
	if c.UserAgent != "" && !httpguts.ValidHeaderFieldValue(c.UserAgent) {
		bad("user_agent", fmt.Sprintf("%q", c.UserAgent), "a valid header value")
	}
	if err := c.validateStamped(); err != nil {
		errs = append(errs, err)
	}
	if err := c.Classifier.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxResponseBytes == 0 {
		c.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if c.MaxConns == 0 {
		c.MaxConns = DefaultMaxConns
	}
	if c.UserAgent == "" {
		c.UserAgent = DefaultUserAgent
	}
	return c
}

// parseBaseURL checks the base URL and returns it with its path ending
// without a slash ("" for the root).
func parseBaseURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		// Do not echo it: url.Parse's error, and the value, may hold a
		// password in user info that did not parse.
		return nil, field.Invalid("base_url", "must be an absolute http or https URL; it does not parse (%s; the value is not shown: it may hold a password)", urlProblem(err))
	}
	switch {
	case u.User != nil:
		// Do not echo it: the user info may hold a password.
		return nil, field.Invalid("base_url", "must not carry user info; put credentials in headers")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, field.Invalid("base_url", "must be an absolute http or https URL, got %q", s)
	case u.Host == "" || u.Hostname() == "":
		return nil, field.Invalid("base_url", "must name a host, got %q", s)
	case u.RawQuery != "" || u.ForceQuery:
		return nil, field.Invalid("base_url", "must have no query (put it in the job path), got %q", s)
	case u.Fragment != "":
		return nil, field.Invalid("base_url", "must have no fragment, got %q", s)
	case strings.ContainsAny(s, "\\\x00\r\n\t "):
		return nil, field.Invalid("base_url", "must not contain spaces, backslashes or control characters, got %q", s)
	}
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	if u.RawPath != "" && u.RawPath == u.Path {
		u.RawPath = ""
	}
	return u, nil
}

const redacted = "[redacted]"

// String describes the config with header values redacted.
func (c Config) String() string {
	return fmt.Sprintf("httpapi.Config{BaseURL:%q Timeout:%v MaxResponseBytes:%d MaxConns:%d Headers:%v AllowJobHeaders:%q ResponseHeaders:%q UserAgent:%q}",
		c.ShownBaseURL(), c.Timeout, c.MaxResponseBytes, c.MaxConns, c.redactedHeaders(), c.AllowJobHeaders, c.ResponseHeaders, c.UserAgent)
}

// GoString is String, so that %#v redacts too.
func (c Config) GoString() string { return c.String() }

// LogValue implements slog.LogValuer with header values redacted.
func (c Config) LogValue() slog.Value {
	hs := make([]slog.Attr, 0, len(c.Headers))
	for _, name := range sortedKeys(c.Headers) {
		hs = append(hs, slog.String(name, redacted))
	}
	return slog.GroupValue(
		slog.String("base_url", c.ShownBaseURL()),
		slog.Duration("timeout", c.Timeout),
		slog.Int64("max_response_bytes", c.MaxResponseBytes),
		slog.Int("max_conns", c.MaxConns),
		slog.Attr{Key: "headers", Value: slog.GroupValue(hs...)},
		slog.Any("allow_job_headers", c.AllowJobHeaders),
	)
}

func (c Config) redactedHeaders() string {
	var b strings.Builder
	b.WriteString("map[")
	for i, name := range sortedKeys(c.Headers) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(name + ":" + redacted)
	}
	b.WriteString("]")
	return b.String()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// stampedHeaders are the headers the sink sets on each call from its
// context (W3C Trace Context); config headers may not name them.
var stampedHeaders = []string{"Traceparent", "Tracestate"}

// validateStamped checks IdempotencyHeader, and that no config header names
// a header the sink sets per call.
func (c Config) validateStamped() error {
	var errs []error
	idem := http.CanonicalHeaderKey(c.IdempotencyHeader)
	if c.IdempotencyHeader != "" {
		switch {
		case !httpguts.ValidHeaderFieldName(c.IdempotencyHeader):
			errs = append(errs, fmt.Errorf("httpapi: idempotency_header: must be a valid header name, got %q", c.IdempotencyHeader))
		case slices.Contains(alwaysDropped, idem) || slices.Contains(stampedHeaders, idem):
			errs = append(errs, fmt.Errorf("httpapi: idempotency_header: must be a header the client does not set itself, got %q", c.IdempotencyHeader))
		}
	}
	for _, name := range sortedKeys(c.Headers) {
		canon := http.CanonicalHeaderKey(name)
		if slices.Contains(stampedHeaders, canon) || (c.IdempotencyHeader != "" && canon == idem) {
			errs = append(errs, fmt.Errorf("httpapi: headers.%s: must not be set: sluice sets it on each call (trace context, idempotency_header)", name))
		}
	}
	return errors.Join(errs...)
}

// urlProblem names what url.Parse found wrong in a URL, without quoting
// the URL or a part of it.
func urlProblem(err error) string {
	var esc url.EscapeError
	var host url.InvalidHostError
	switch {
	case errors.As(err, &esc):
		return "an invalid %-escape"
	case errors.As(err, &host):
		return "an invalid character in the host"
	case strings.Contains(err.Error(), "missing protocol scheme"), strings.Contains(err.Error(), "first path segment"):
		return "no scheme"
	}
	return "not a valid URL"
}
