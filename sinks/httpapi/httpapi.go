package httpapi

import (
	"bytes"
	"context"
	"crypto/tls"
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
	cfg       Config
	base      *url.URL
	transport *http.Transport
	// rt makes the calls: the transport, or a middleware around it. An
	// http.Client would add nothing the sink uses (redirects are not
	// followed, the base URL holds no user info, there is no cookie jar)
	// and copy each request's headers for the redirects.
	rt          http.RoundTripper
	log         *slog.Logger
	allowed     map[string]bool
	respHeaders []string  // canonical; nil keeps all
	redactor    *redactor // the secrets redacted from error bodies and shown paths
	now         func() time.Time
	paths       pathCache
	fixed       []fixedHeader // the config's headers
	userAgent   []string      // the default User-Agent's value
	idempotency string        // canonical; "" for none
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
	return func(s *Sink) { s.rt = wrap(s.rt) }
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
		rt:        tr, // redirects are not followed: one could lead off the target
		log:       slog.New(slog.DiscardHandler),
		allowed:   map[string]bool{},
		now:       time.Now,
	}
	s.fixed = fixedHeaders(cfg.Headers)
	s.userAgent = []string{cfg.UserAgent}
	if cfg.IdempotencyHeader != "" {
		s.idempotency = http.CanonicalHeaderKey(cfg.IdempotencyHeader)
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
	if _, err := checkMethod(r.Method); err != nil {
		return err
	}
	if err := s.paths.check(s.base, r.Path); err != nil {
		return err
	}
	if err := checkHeaders(r.Header); err != nil {
		return err
	}
	return s.checkID(r.ID)
}

// checkID refuses a job id that cannot be sent as the Idempotency-Key.
func (s *Sink) checkID(id string) error {
	if s.idempotency != "" && id != "" && (len(id) > maxHeaderBytes || !httpguts.ValidHeaderFieldValue(id)) {
		return invalid("job id: cannot be sent as %s: a control character, or longer than %d bytes", s.cfg.IdempotencyHeader, maxHeaderBytes)
	}
	return nil
}

// build checks r, as Check does, and returns the request to send.
func (s *Sink) build(ctx context.Context, r call.Request) (*http.Request, error) {
	method, err := checkMethod(r.Method)
	if err != nil {
		return nil, err
	}
	u, err := s.paths.resolve(s.base, r.Path)
	if err != nil {
		return nil, err
	}
	if err := checkHeaders(r.Header); err != nil {
		return nil, err
	}
	if err := s.checkID(r.ID); err != nil {
		return nil, err
	}
	// As http.NewRequestWithContext builds it, without a parse of the
	// URL back (resolve did) or a Header to replace.
	req := &http.Request{
		Method:     method,
		URL:        u,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     s.header(r.Header, r.ID, trace.SpanContextFromContext(ctx)),
		Body:       http.NoBody,
		GetBody:    noBody,
	}
	if len(r.Body) > 0 {
		data := r.Body
		req.Body, req.ContentLength = newBody(data), int64(len(data))
		req.GetBody = func() (io.ReadCloser, error) { return newBody(data), nil }
	}
	return req.WithContext(ctx), nil
}

// newBody is a request body of b, as NewRequest makes it: net/http knows
// this type to be in memory, and writes the headers and the body at once.
func newBody(b []byte) io.ReadCloser { return io.NopCloser(bytes.NewReader(b)) }

func noBody() (io.ReadCloser, error) { return http.NoBody, nil }

// traceparent is sc as W3C Trace Context's traceparent, as
// propagation.TraceContext.Inject writes it (version 00, the flags the
// spec defines: sampled and random); the sink writes the header itself
// because Inject's carrier canonicalizes its name anew on every request.
func traceparent(sc trace.SpanContext) string {
	var b [55]byte // 00-<32 hex>-<16 hex>-<2 hex>
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:55], []byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))})
	return string(b[:])
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
//
// Send's frame is small and the work before and after the call is in
// functions of their own: the worker calls Send at the bottom of a
// handler's stack, whose depth should fit a new goroutine's first stack.
func (s *Sink) Send(ctx context.Context, r call.Request) (call.Response, error) {
	tctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := s.build(tctx, r)
	if err != nil {
		return call.Response{}, err
	}
	start := s.now()
	resp, err := s.rt.RoundTrip(req)
	return s.answer(ctx, tctx, r.ID, req, start, resp, err)
}

// answer reads and classifies the response to req, sent at start, or
// makes Send's error of the failure.
//
//go:noinline
func (s *Sink) answer(ctx, tctx context.Context, id string, req *http.Request, start time.Time, resp *http.Response, err error) (call.Response, error) {
	if ue, ok := err.(*url.Error); ok {
		// Its text holds the whole URL; the method and the shown path
		// are added below.
		err = ue.Err
	}
	var tlsErr tls.RecordHeaderError
	switch {
	case err == nil && resp == nil:
		err = errors.New("the transport returned no response and no error")
	case errors.As(err, &tlsErr) && string(tlsErr.RecordHeader[:]) == "HTTP/":
		// As http.Client says it.
		err = errors.New("http: server gave HTTP response to HTTPS client")
	}
	if err != nil {
		res := call.Response{Latency: s.now().Sub(start), Outcome: call.Outcome{Kind: call.NetworkError}}
		logPath := s.logPath(req)
		s.log.Debug("target call failed", "job", id, "method", req.Method, "path", logPath, "latency", res.Latency, "err", err)
		return res, s.networkError(ctx, tctx, req.Method, logPath, err)
	}
	if resp.Body == nil {
		resp.Body = http.NoBody
	}
	body, truncated, rerr := readCapped(resp.Body, s.cfg.MaxResponseBytes, resp.ContentLength)
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
		logPath := s.logPath(req)
		s.log.Debug("target response cut", "job", id, "method", req.Method, "path", logPath, "status", resp.StatusCode, "latency", res.Latency, "err", rerr)
		return res, s.networkError(ctx, tctx, req.Method, logPath, fmt.Errorf("reading the body of a %d response: %w", resp.StatusCode, rerr))
	}
	res.Outcome = s.cfg.Classifier.Classify(resp.StatusCode, resp.Header, end)
	if s.log.Enabled(ctx, slog.LevelDebug) {
		s.log.Debug("target call", "job", id, "method", req.Method, "path", s.logPath(req), "status", resp.StatusCode, "latency", res.Latency, "outcome", res.Outcome.Kind.String())
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

// logPath is req's path as lines and errors show it.
func (s *Sink) logPath(req *http.Request) string {
	return string(s.redactor.redact([]byte(s.cfg.ShownPath(req.URL.EscapedPath()))))
}

func (s *Sink) networkError(parent, tctx context.Context, method, path string, err error) error {
	if parent.Err() == nil && errors.Is(tctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%w after %v: %s %s: %w", ErrTimeout, s.cfg.Timeout, method, path, err)
	}
	return fmt.Errorf("httpapi: %s %s: %w", method, path, err)
}

// readCapped reads up to max bytes of r, then reads and discards up to
// drainBytes more so that the connection can be reused. Only an error
// before the cap is returned. length is the body's Content-Length, -1 if
// unknown: a body known to fit is read into one slice of its size (and a
// byte, to see its end), where io.ReadAll would begin with 512 bytes.
func readCapped(r io.Reader, max, length int64) (body []byte, truncated bool, err error) {
	size := int64(512)
	if length >= 0 && length < max {
		size = length + 1
	}
	body = make([]byte, 0, size)
	for int64(len(body)) < max {
		if len(body) == cap(body) {
			body = append(body, 0)[:len(body)] // room to read into
		}
		n, err := r.Read(body[len(body):min(int64(cap(body)), max)])
		body = body[:len(body)+n]
		if err == io.EOF {
			return body, false, nil
		}
		if err != nil {
			return body, false, err
		}
	}
	// A failure while draining loses only bytes past the cap: the body is
	// then truncated, not broken (the connection is simply not reused).
	n, err := io.CopyN(io.Discard, r, drainBytes)
	return body, n > 0 || (err != nil && !errors.Is(err, io.EOF)), nil
}

// keepHeaders returns the response headers that Config.ResponseHeaders
// keeps: all of them, as they are (the response's Header is a map of its
// own, which nothing else holds), or a copy of those named (nil for
// none).
func (s *Sink) keepHeaders(h http.Header) http.Header {
	if s.respHeaders == nil {
		return h
	}
	var out http.Header // nil, rather than an empty map, when none is kept
	for _, name := range s.respHeaders {
		if v := h.Values(name); len(v) > 0 {
			if out == nil {
				out = make(http.Header, len(s.respHeaders))
			}
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
