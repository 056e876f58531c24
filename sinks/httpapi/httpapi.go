package httpapi

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.opentelemetry.io/otel/trace"
	"golang.org/x/net/http/httpguts"

	"github.com/sluicehq/sluice/call"
)

// ExcerptBytes is the most of a response body a call.StatusError carries.
const ExcerptBytes = 1024

// MaxResponseHeaderBytes bounds the response headers the client reads (the
// status line included): a target that sends more gets a network error,
// and its headers are never parsed.
const MaxResponseHeaderBytes = 64 << 10

// drainBytes bounds how much of a body past MaxResponseBytes is read and
// discarded so that the connection can be reused; a longer body closes the
// connection instead.
const drainBytes = 4 << 20

// ErrTimeout is wrapped by the error of a request that got no complete
// answer within Config.Timeout.
var ErrTimeout = errors.New("httpapi: request timed out")

// Sink calls the target API. It is safe for concurrent use. It is the
// worker's Target and Checker as it stands.
type Sink struct {
	cfg         Config
	base        *url.URL
	transport   *http.Transport
	client      *http.Client
	log         *slog.Logger
	allowed     map[string]bool
	respHeaders []string  // canonical; nil keeps all
	redactor    *redactor // the secrets redacted from error bodies and shown paths
	now         func() time.Time
	paths       pathCache
}

// Option configures a Sink.
type Option func(*Sink)

// WithLogger sets the logger (default: discard). The sink logs each call at
// debug level with the method, the path without its query, the status and
// the latency; never a header.
func WithLogger(l *slog.Logger) Option {
	return func(s *Sink) {
		if l != nil {
			s.log = l
		}
	}
}

// WithMiddleware wraps the sink's pooled transport, for instance in a
// test's recorder.
func WithMiddleware(wrap func(http.RoundTripper) http.RoundTripper) Option {
	return func(s *Sink) { s.client.Transport = wrap(s.client.Transport) }
}

var _ slog.LogValuer = Config{}

// New validates cfg and returns a Sink with a connection pool of
// cfg.MaxConns connections to the target.
func New(cfg Config, opts ...Option) (*Sink, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("httpapi: %w", err)
	}
	cfg = cfg.withDefaults()
	base, err := parseBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	dial := &net.Dialer{Timeout: min(cfg.Timeout, 30*time.Second), KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:                  http.ProxyFromEnvironment,
		DialContext:            dial.DialContext,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           cfg.MaxConns,
		MaxIdleConnsPerHost:    cfg.MaxConns,
		MaxConnsPerHost:        cfg.MaxConns,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    min(cfg.Timeout, 10*time.Second),
		ExpectContinueTimeout:  time.Second,
		MaxResponseHeaderBytes: MaxResponseHeaderBytes,
	}
	s := &Sink{
		cfg:       cfg,
		base:      base,
		transport: tr,
		client: &http.Client{
			Transport: tr,
			// Redirects are not followed: one could lead off the target.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		log:     slog.New(slog.DiscardHandler),
		allowed: map[string]bool{},
		now:     time.Now,
	}
	for _, name := range cfg.AllowJobHeaders {
		s.allowed[http.CanonicalHeaderKey(name)] = true
	}
	if cfg.ResponseHeaders != nil {
		s.respHeaders = make([]string, 0, len(cfg.ResponseHeaders))
		for _, name := range cfg.ResponseHeaders {
			s.respHeaders = append(s.respHeaders, http.CanonicalHeaderKey(name))
		}
	}
	secrets := secretsOf(cfg.Headers, cfg.Secrets)
	if p := strings.Trim(base.EscapedPath(), "/"); !cfg.LogURLPath && len(p) >= minSecretBytes {
		// A token in the base path, echoed by the target, must not reach
		// a dead-letter record either.
		secrets = append(secrets, []byte(p))
	}
	s.redactor = newRedactor(secrets)
	for _, o := range opts {
		o(s)
	}
	return s, nil
}

// Close closes the idle connections to the target.
func (s *Sink) Close() error {
	s.transport.CloseIdleConnections()
	return nil
}

// Check reports whether r can be made on the target without sending it:
// nil, or an error wrapping call.ErrInvalidRequest with the reason. The worker
// checks a job before it waits for units.
//
// Refused: a path longer than 8 KiB; control characters, spaces,
// backslashes or non-ASCII bytes in it; an absolute URL ("http://x/",
// "https:x"); a scheme-relative one ("//host/x"); a ':' or '@' before the
// first slash of a relative path; a fragment; bad percent-encoding;
// encoded control characters or backslashes, and dot segments ("..",
// "%2e%2e", "%252e%252e"), at up to three levels of percent-decoding; a
// joined path that begins with "//"; anything whose resolved scheme, host
// or port differs from the base URL's, or that is not under its path. Also
// refused: an invalid or CONNECT method, header names that are not tokens,
// header values with CR, LF or other control characters, and more than
// 64 KiB of job headers.
func (s *Sink) Check(r call.Request) error {
	_, _, _, err := s.prepare(r)
	return err
}

// prepare checks r and returns the method, URL and headers to send.
func (s *Sink) prepare(r call.Request) (string, *url.URL, http.Header, error) {
	method, err := checkMethod(r.Method)
	if err != nil {
		return "", nil, nil, err
	}
	u, err := s.paths.resolve(s.base, r.Path)
	if err != nil {
		return "", nil, nil, err
	}
	h, err := s.filterHeaders(r.Header)
	if err != nil {
		return "", nil, nil, err
	}
	if s.cfg.IdempotencyHeader != "" && r.ID != "" {
		if len(r.ID) > maxHeaderBytes || !httpguts.ValidHeaderFieldValue(r.ID) {
			return "", nil, nil, invalid("job id: cannot be sent as %s: a control character, or longer than %d bytes", s.cfg.IdempotencyHeader, maxHeaderBytes)
		}
		h.Set(s.cfg.IdempotencyHeader, r.ID)
	}
	return method, u, h, nil
}

func (s *Sink) build(ctx context.Context, r call.Request) (*http.Request, error) {
	method, u, h, err := s.prepare(r)
	if err != nil {
		return nil, err
	}
	var body io.Reader = http.NoBody
	if len(r.Body) > 0 {
		body = bytes.NewReader(r.Body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), body)
	if err != nil {
		return nil, invalid("%v", err)
	}
	// NewRequest parsed u.String() again; keep the URL as built.
	req.URL = u
	req.Host = ""
	req.Header = h
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		// The trace context of the call replaces a job's own.
		delete(h, "Traceparent")
		delete(h, "Tracestate")
		setTraceContext(h, sc)
	}
	return req, nil
}

// setTraceContext writes sc as W3C Trace Context, as
// propagation.TraceContext.Inject does (version 00, the flags the spec
// defines: sampled and random),
// with the header keys already canonical: Inject's carrier canonicalizes
// "traceparent" anew on every request.
func setTraceContext(h http.Header, sc trace.SpanContext) {
	var b [55]byte // 00-<32 hex>-<16 hex>-<2 hex>
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))})
	h["Traceparent"] = []string{string(b[:])}
	if ts := sc.TraceState().String(); ts != "" {
		h["Tracestate"] = []string{ts}
	}
}

// Send makes the call and reads the response body up to the cap.
//
// The Response is filled whenever something was sent: on success, with a
// *call.StatusError for a status of 400 or more (Body then has credentials
// redacted), and with a network error or a timeout (Outcome NetworkError;
// Status is set if the headers arrived before the failure). An error
// wrapping call.ErrInvalidRequest means nothing was sent and the Response
// is zero: do not report its outcome to a limiter. A 3xx is returned as is
// (redirects are not followed) and is a success. The Response holds the
// headers kept (Config.ResponseHeaders) and at most Config.MaxResponseBytes
// of the body.
func (s *Sink) Send(ctx context.Context, r call.Request) (call.Response, error) {
	tctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := s.build(tctx, r)
	if err != nil {
		return call.Response{}, err
	}
	logPath := string(s.redactor.redact([]byte(s.cfg.ShownPath(req.URL.EscapedPath()))))
	start := s.now()
	resp, err := s.client.Do(req)
	if ue, ok := err.(*url.Error); ok {
		// Its text holds the whole URL; the method and the shown path
		// are added below.
		err = ue.Err
	}
	if err != nil {
		res := call.Response{Latency: s.now().Sub(start), Outcome: call.Outcome{Kind: call.NetworkError}}
		s.log.Debug("target call failed", "job", r.ID, "method", req.Method, "path", logPath, "latency", res.Latency, "err", err)
		return res, s.networkError(ctx, tctx, req.Method, logPath, err)
	}
	body, truncated, rerr := readCapped(resp.Body, s.cfg.MaxResponseBytes)
	resp.Body.Close()
	end := s.now() // the latency's end and the classifier's now
	res := call.Response{
		Status:    resp.StatusCode,
		Header:    s.keepHeaders(resp.Header),
		Body:      body,
		Truncated: truncated,
		Latency:   end.Sub(start),
	}
	if rerr != nil {
		res.Outcome = call.Outcome{Kind: call.NetworkError}
		s.log.Debug("target response cut", "job", r.ID, "method", req.Method, "path", logPath, "status", resp.StatusCode, "latency", res.Latency, "err", rerr)
		return res, s.networkError(ctx, tctx, req.Method, logPath, fmt.Errorf("reading the body of a %d response: %w", resp.StatusCode, rerr))
	}
	res.Outcome = s.cfg.Classifier.Classify(resp.StatusCode, resp.Header, end)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("target call", "job", r.ID, "method", req.Method, "path", logPath, "status", resp.StatusCode, "latency", res.Latency, "outcome", res.Outcome.Kind.String())
	}
	if resp.StatusCode < 400 {
		return res, nil
	}
	res.Body = s.redactor.redact(res.Body)
	excerpt := res.Body
	if len(excerpt) > ExcerptBytes {
		excerpt = excerpt[:ExcerptBytes]
	}
	return res, &call.StatusError{Code: resp.StatusCode, RetryAfter: res.Outcome.RetryAfter, Body: bytes.Clone(excerpt)}
}

func (s *Sink) networkError(parent, tctx context.Context, method, path string, err error) error {
	if parent.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %v: %s %s: %w", ErrTimeout, s.cfg.Timeout, method, path, err)
	}
	return fmt.Errorf("httpapi: %s %s: %w", method, path, err)
}

// readCapped reads up to max bytes of r, then reads and discards up to
// drainBytes more so that the connection can be reused. Only an error
// before the cap is returned.
func readCapped(r io.Reader, max int64) (body []byte, truncated bool, err error) {
	body, err = io.ReadAll(io.LimitReader(r, max))
	if err != nil {
		return body, false, err
	}
	// A failure while draining loses only bytes past the cap: the body is
	// then truncated, not broken (the connection is simply not reused).
	n, err := io.CopyN(io.Discard, r, drainBytes)
	return body, n > 0 || (err != nil && !errors.Is(err, io.EOF)), nil
}

func (s *Sink) keepHeaders(h http.Header) http.Header {
	if s.respHeaders == nil {
		return h.Clone()
	}
	out := make(http.Header, len(s.respHeaders))
	for _, name := range s.respHeaders {
		if v := h.Values(name); len(v) > 0 {
			out[name] = slices.Clone(v)
		}
	}
	return out
}

// publicHeaders are config headers whose values are not credentials.
var publicHeaders = []string{
	"Accept", "Accept-Encoding", "Accept-Language", "Cache-Control", "Content-Language",
	"Content-Type", "Prefer", "User-Agent",
}

// minSecretBytes: shorter values are not redacted from bodies, where they
// would match by chance.
const minSecretBytes = 8

// secretsOf returns the values to redact from error bodies: each config
// header value and its last word ("Bearer <token>" gives "<token>"), and
// each of more, of at least minSecretBytes.
func secretsOf(h map[string]string, more []string) [][]byte {
	var out [][]byte
	add := func(c string) {
		if len(c) >= minSecretBytes {
			out = append(out, []byte(c))
		}
	}
	for _, name := range sortedKeys(h) {
		if slices.Contains(publicHeaders, http.CanonicalHeaderKey(name)) {
			continue
		}
		v := strings.TrimSpace(h[name])
		add(v)
		if f := strings.Fields(v); len(f) > 1 {
			add(f[len(f)-1])
		}
	}
	for _, v := range more {
		add(v)
	}
	return out
}
