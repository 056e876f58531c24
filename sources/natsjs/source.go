package natsjs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/sources"
)

var discard = slog.New(slog.DiscardHandler)

// ErrClosed is returned by a Source after Close.
var ErrClosed = errors.New("jetstream: source closed")

// Source is a JetStream stream read through a durable pull consumer. It is
// safe for concurrent use.
type Source struct {
	cfg         Config
	log         *slog.Logger
	srv         *Server // the embedded server this Source started, if any
	embeddedURL string
	nc          *nats.Conn
	js          jetstream.JetStream
	cons        jetstream.Consumer

	mu        sync.Mutex
	reconnect chan struct{} // closed and replaced on each reconnection
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error
}

var (
	_ sources.Source      = (*Source)(nil)
	_ sources.StatsSource = (*Source)(nil)
	_ sources.Message     = (*message)(nil)
)

// Open connects to the server (starting the embedded one when cfg.URL is
// Embedded), and with cfg.Setup creates or updates the stream, the
// dead-letter stream and the consumer.
//
// With an embedded URL, if another process already runs the embedded
// server on the same store directory, Open connects to that server
// instead of starting a second one.
func Open(ctx context.Context, cfg Config, log *slog.Logger) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	cfg = cfg.withDefaults()
	if log == nil {
		log = discard
	}
	s := &Source{
		cfg:       cfg,
		log:       log,
		reconnect: make(chan struct{}),
		closed:    make(chan struct{}),
	}
	url := cfg.URL
	if url == Embedded {
		var err error
		if url, err = s.startEmbedded(ctx); err != nil {
			return nil, err
		}
		s.embeddedURL = url
	}
	if err := s.connect(url); err != nil {
		s.shutdownServer()
		return nil, err
	}
	s.answerStoreDir()
	if err := s.bind(ctx); err != nil {
		s.nc.Close()
		s.shutdownServer()
		return nil, err
	}
	return s, nil
}

// startEmbedded starts the embedded server, or finds the one another
// process runs on the same store directory, and returns its URL.
func (s *Source) startEmbedded(ctx context.Context) (string, error) {
	srv, err := StartServer(s.cfg.Embedded, s.log)
	if err == nil {
		s.srv = srv
		return srv.ClientURL(), nil
	}
	var inUse *PortInUseError
	if errors.As(err, &inUse) {
		// Another sluice process may run its embedded server there, on
		// another store directory: use it, but no other NATS server.
		u := "nats://" + inUse.Addr
		if s.isEmbeddedServer(u) {
			// Found through the port, not through this store: the jobs go
			// to the other directory's store. Say so, and name it.
			s.log.Warn("using the embedded nats server of another store directory, found on its port; jobs go to its store, not to this one",
				"url", u, "its_store_dir", s.embeddedStoreOf(u), "store_dir", s.cfg.Embedded.StoreDir)
			return u, nil
		}
		return "", err
	}
	if !errors.Is(err, ErrStoreLocked) {
		return "", err
	}
	// The other process writes its URL once its server is up.
	deadline := time.Now().Add(s.cfg.ConnectTimeout)
	for {
		if u, ok := runningURL(s.cfg.Embedded.StoreDir); ok {
			s.log.Info("using the embedded nats server of another process", "url", u, "store_dir", s.cfg.Embedded.StoreDir)
			return u, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%w (%s), but it published no server URL within %s", ErrStoreLocked, s.cfg.Embedded.StoreDir, s.cfg.ConnectTimeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isEmbeddedServer reports whether a sluice embedded server answers at
// url.
func (s *Source) isEmbeddedServer(url string) bool {
	nc, err := nats.Connect(url, nats.Name(s.cfg.Name), nats.Timeout(2*time.Second), nats.NoReconnect())
	if err != nil {
		return false
	}
	defer nc.Close()
	return nc.ConnectedServerName() == serverName
}

// storeSubject is where the process that runs an embedded server answers
// with the server's store directory.
const storeSubject = "_SLUICE.EMBEDDED.STORE_DIR"

// answerStoreDir serves the store directory of the embedded server this
// source started, on storeSubject, for the processes that find the server
// through its port.
func (s *Source) answerStoreDir() {
	if s.srv == nil {
		return
	}
	dir, err := filepath.Abs(s.cfg.Embedded.StoreDir)
	if err != nil {
		dir = s.cfg.Embedded.StoreDir
	}
	if _, err := s.nc.Subscribe(storeSubject, func(m *nats.Msg) { m.Respond([]byte(dir)) }); err != nil {
		s.log.Debug("serving the embedded store directory", "err", err)
	}
}

// embeddedStoreOf asks the embedded server at url for its store directory;
// "unknown" if no process answers.
func (s *Source) embeddedStoreOf(url string) string {
	nc, err := nats.Connect(url, nats.Name(s.cfg.Name), nats.Timeout(2*time.Second), nats.NoReconnect())
	if err != nil {
		return "unknown"
	}
	defer nc.Close()
	m, err := nc.Request(storeSubject, nil, 2*time.Second)
	if err != nil {
		return "unknown"
	}
	return string(m.Data)
}

func (s *Source) shutdownServer() {
	if s.srv != nil {
		s.srv.Shutdown()
	}
}

// reconnectDelay backs off from 100ms to 5s, with jitter.
func reconnectDelay(attempts int) time.Duration {
	d := min(100*time.Millisecond<<min(attempts, 6), 5*time.Second)
	return d/2 + rand.N(d/2+1)
}

func (s *Source) connect(url string) error {
	c := s.cfg
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.Timeout(c.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				s.log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			s.log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
			s.mu.Lock()
			close(s.reconnect)
			s.reconnect = make(chan struct{})
			s.mu.Unlock()
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			s.log.Warn("nats error", "err", err)
		}),
	}
	switch a := c.Auth; {
	case a.CredsFile != "":
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return fmt.Errorf("jetstream: auth.nkey_seed_file: %w", err)
		}
		opts = append(opts, o)
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	}
	if c.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.TLS.CAFile))
	}
	if c.TLS.CertFile != "" {
		opts = append(opts, nats.ClientCert(c.TLS.CertFile, c.TLS.KeyFile))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		// nats.go errors carry no credentials; the URL is redacted.
		return fmt.Errorf("jetstream: connect to %s: %w", redact(url), err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("jetstream: %w", err)
	}
	s.nc, s.js = nc, js
	s.log.Info("nats connected", "url", nc.ConnectedUrlRedacted())
	return nil
}

// bind sets up or looks up the stream and the consumer.
func (s *Source) bind(ctx context.Context) error {
	c := s.cfg
	if c.Setup {
		if err := retryServerError(ctx, func() error {
			_, err := s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
				Name:       c.Stream,
				Subjects:   c.Subjects,
				Retention:  jetstream.WorkQueuePolicy,
				Storage:    jetstream.FileStorage,
				Duplicates: c.DuplicateWindow,
			})
			return err
		}); err != nil {
			return fmt.Errorf("jetstream: set up stream %q: %w", c.Stream, err)
		}
		if err := retryServerError(ctx, func() error {
			_, err := s.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
				Name:     c.DeadLetterStream,
				Subjects: []string{c.DeadLetterSubject},
				Storage:  jetstream.FileStorage,
			})
			return err
		}); err != nil {
			return fmt.Errorf("jetstream: set up dead-letter stream %q: %w", c.DeadLetterStream, err)
		}
		maxDeliver := c.MaxDeliver
		if maxDeliver == 0 {
			maxDeliver = -1
		}
		var cons jetstream.Consumer
		err := retryServerError(ctx, func() error {
			var err error
			cons, err = s.js.CreateOrUpdateConsumer(ctx, c.Stream, jetstream.ConsumerConfig{
				Durable:       c.Consumer,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       c.AckWait,
				MaxDeliver:    maxDeliver,
				BackOff:       c.Backoff,
				MaxAckPending: c.MaxAckPending,
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("jetstream: set up consumer %q on stream %q: %w", c.Consumer, c.Stream, err)
		}
		s.cons = cons
		return nil
	}
	cons, err := s.js.Consumer(ctx, c.Stream, c.Consumer)
	if err != nil {
		return fmt.Errorf("jetstream: consumer %q on stream %q (set setup: true to create it): %w", c.Consumer, c.Stream, err)
	}
	s.cons = cons
	return nil
}

// setupAttempts bounds retryServerError.
const setupAttempts = 5

// retryServerError calls op until it succeeds, fails with anything but a
// JetStream API error of status 500, or has failed setupAttempts times,
// waiting 100 ms, 200 ms, 400 ms… in between. A 500 from the stream and
// consumer API is the server's own failure (a store it could not create
// at that moment, say): creating or updating the same stream again is
// idempotent, and a worker should not fail to start for it.
func retryServerError(ctx context.Context, op func() error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := op()
		var api *jetstream.APIError
		if err == nil || !errors.As(err, &api) || api.Code != 500 || attempt == setupAttempts {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// Config returns the configuration in use, defaults applied.
func (s *Source) Config() Config { return s.cfg }

// Conn returns the connection, for other packages to share.
func (s *Source) Conn() *nats.Conn { return s.nc }

// JetStream returns the JetStream context of the connection.
func (s *Source) JetStream() jetstream.JetStream { return s.js }

// EmbeddedURL returns the client URL of the embedded server in use
// (started by this Source or by another process on the same store
// directory), or "" when cfg.URL is not Embedded.
func (s *Source) EmbeddedURL() string { return s.embeddedURL }

// Connected reports whether the connection is up (not reconnecting).
func (s *Source) Connected() bool { return s.nc.IsConnected() }

// Server returns the embedded server this Source started, or nil.
func (s *Source) Server() *Server { return s.srv }

// Receive returns at most max messages. It takes what is available at
// once (a no-wait fetch of max); when nothing is, it waits up to
// cfg.FetchWait for one message and then takes what else is available, so
// the server never hands this consumer more than max. While the connection
// is re-establishing, it waits for it instead.
func (s *Source) Receive(ctx context.Context, max int) ([]sources.Message, error) {
	if max <= 0 {
		return nil, fmt.Errorf("jetstream: receive max must be > 0, got %d", max)
	}
	if s.isClosed() {
		return nil, ErrClosed
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(s.cfg.FetchWait)
	if !s.nc.IsConnected() {
		if !s.waitConnected(ctx, deadline) {
			return nil, s.stopErr(ctx)
		}
	}
	out, err := s.fetchNoWait(max, nil)
	if len(out) > 0 || err != nil {
		return out, err
	}
	wctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	// The wait ends at the fetch wait or at ctx's own deadline, whichever
	// comes first. nats.go refuses a context whose deadline has passed even
	// before ctx.Err() reports it, so a wait that is (almost) over ends
	// here, as an empty poll rather than a fetch error.
	if d, _ := wctx.Deadline(); time.Until(d) < 10*time.Millisecond {
		return nil, s.stopErr(ctx)
	}
	batch, err := s.cons.Fetch(1, jetstream.FetchContext(wctx))
	if err != nil {
		return nil, s.fetchErr(ctx, err)
	}
	out = s.collect(batch, out)
	if err := batch.Error(); err != nil && len(out) == 0 {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if wctx.Err() != nil {
			return nil, nil
		}
		return nil, s.fetchErr(ctx, err)
	}
	if len(out) > 0 && max > 1 {
		return s.fetchNoWait(max-1, out)
	}
	return out, nil
}

// fetchNoWait appends up to n messages available now.
func (s *Source) fetchNoWait(n int, out []sources.Message) ([]sources.Message, error) {
	batch, err := s.cons.FetchNoWait(n)
	if err != nil {
		if len(out) > 0 {
			return out, nil
		}
		return nil, s.fetchErr(context.Background(), err)
	}
	out = s.collect(batch, out)
	if err := batch.Error(); err != nil && len(out) == 0 {
		return nil, s.fetchErr(context.Background(), err)
	}
	return out, nil
}

func (s *Source) collect(batch jetstream.MessageBatch, out []sources.Message) []sources.Message {
	for m := range batch.Messages() {
		out = append(out, s.wrap(m))
	}
	return out
}

// fetchErr turns a fetch failure into Receive's result: a failure caused
// by a lost connection is an empty poll, not an error.
func (s *Source) fetchErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if s.isClosed() {
		return ErrClosed
	}
	if !s.nc.IsConnected() || errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrTimeout) {
		return nil
	}
	return fmt.Errorf("jetstream: fetch from %s/%s: %w", s.cfg.Stream, s.cfg.Consumer, err)
}

// stopErr is Receive's result when it stops without messages.
func (s *Source) stopErr(ctx context.Context) error {
	if s.isClosed() {
		return ErrClosed
	}
	return ctx.Err()
}

// waitConnected waits until the connection is up again, the deadline, or
// ctx is done; it reports whether the connection is up.
func (s *Source) waitConnected(ctx context.Context, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	for !s.nc.IsConnected() {
		s.mu.Lock()
		ch := s.reconnect
		s.mu.Unlock()
		if s.nc.IsConnected() {
			return true
		}
		select {
		case <-ch:
		case <-t.C:
			return false
		case <-ctx.Done():
			return false
		case <-s.closed:
			return false
		}
	}
	return true
}

func (s *Source) wrap(m jetstream.Msg) *message {
	msg := &message{m: m, nc: s.nc, sync: s.cfg.AckSync, headers: make(map[string]string, len(m.Headers()))}
	for k, v := range m.Headers() {
		if len(v) > 0 {
			msg.headers[k] = v[0]
		}
	}
	meta, err := m.Metadata()
	if err == nil {
		msg.count = int(meta.NumDelivered)
		msg.at = meta.Timestamp
	}
	msg.id = msg.headers[jetstream.MsgIDHeader]
	if msg.id == "" && meta != nil {
		msg.id = strconv.FormatUint(meta.Sequence.Stream, 10)
	}
	return msg
}

// Publish publishes m on cfg.PublishSubject with Nats-Msg-Id set to m.ID
// (when not empty) and waits for the stream's ack. A duplicate within the
// stream's duplicate window is acked by the server and not stored again.
func (s *Source) Publish(ctx context.Context, m sources.Outgoing) error {
	_, err := s.PublishAck(ctx, m)
	return err
}

// PublishAck is Publish returning the stream's ack, whose Duplicate field
// tells whether the message was already in the duplicate window.
func (s *Source) PublishAck(ctx context.Context, m sources.Outgoing) (*jetstream.PubAck, error) {
	if s.isClosed() {
		return nil, ErrClosed
	}
	msg := &nats.Msg{Subject: s.cfg.PublishSubject, Data: m.Data}
	if len(m.Headers) > 0 {
		msg.Header = make(nats.Header, len(m.Headers))
		for k, v := range m.Headers {
			msg.Header[k] = []string{v}
		}
	}
	var opts []jetstream.PublishOpt
	if m.ID != "" {
		opts = append(opts, jetstream.WithMsgID(m.ID))
	}
	ack, err := s.js.PublishMsg(ctx, msg, opts...)
	if errors.Is(err, nats.ErrMaxPayload) {
		return nil, fmt.Errorf("jetstream: publish to %s: %w: %d bytes, the server's max_payload is %d",
			s.cfg.PublishSubject, sources.ErrTooLarge, len(m.Data), s.nc.MaxPayload())
	}
	if err != nil {
		return nil, fmt.Errorf("jetstream: publish to %s: %w", s.cfg.PublishSubject, err)
	}
	return ack, nil
}

// Stats reports the consumer's pending, ack-pending and redelivered counts
// and the number of records in the dead-letter stream (-1 when that
// stream does not exist).
func (s *Source) Stats(ctx context.Context) (sources.Stats, error) {
	info, err := s.cons.Info(ctx)
	if err != nil {
		return sources.Stats{}, fmt.Errorf("jetstream: consumer info %s/%s: %w", s.cfg.Stream, s.cfg.Consumer, err)
	}
	st := sources.Stats{
		Pending:     int64(info.NumPending),
		AckPending:  int64(info.NumAckPending),
		Redelivered: int64(info.NumRedelivered),
		DeadLetters: -1,
		Done:        -1,
	}
	// The job stream has work-queue retention: a job leaves it when it is
	// acked or terminated. So the jobs done are the sequence numbers handed
	// out minus the messages still held, and the first message held is
	// the oldest unsettled job.
	if jobs, err := s.js.Stream(ctx, s.cfg.Stream); err != nil {
		return sources.Stats{}, fmt.Errorf("jetstream: stream info %s: %w", s.cfg.Stream, err)
	} else if state := jobs.CachedInfo().State; state.LastSeq >= state.Msgs {
		st.Done = int64(state.LastSeq - state.Msgs)
		if state.Msgs > 0 {
			st.Oldest = state.FirstTime
		}
	}
	dead, err := s.js.Stream(ctx, s.cfg.DeadLetterStream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return sources.Stats{}, fmt.Errorf("jetstream: stream info %s: %w", s.cfg.DeadLetterStream, err)
	default:
		st.DeadLetters = int64(dead.CachedInfo().State.Msgs)
	}
	return st, nil
}

// Close flushes pending settlements, closes the connection and stops the
// embedded server if this Source started it. Messages not settled are
// delivered again after their ack deadline.
func (s *Source) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.nc.IsConnected() {
			if err := s.nc.FlushTimeout(5 * time.Second); err != nil {
				s.closeErr = fmt.Errorf("jetstream: flush on close: %w", err)
			}
		}
		s.nc.Close()
		s.shutdownServer()
	})
	return s.closeErr
}

func (s *Source) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// message is one delivery.
type message struct {
	m       jetstream.Msg
	nc      *nats.Conn
	id      string
	headers map[string]string
	count   int
	sync    bool
	at      time.Time // the stream's timestamp of the message
}

var _ sources.Published = (*message)(nil)

// PublishedAt is when the stream stored the message.
func (m *message) PublishedAt() time.Time { return m.at }

func (m *message) ID() string                 { return m.id }
func (m *message) Data() []byte               { return m.m.Data() }
func (m *message) Headers() map[string]string { return m.headers }
func (m *message) DeliveryCount() int         { return m.count }

// Ack acks the message; with Config.AckSync it waits for the server.
func (m *message) Ack(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if m.sync {
		return wrapSettle("ack", m.m.DoubleAck(ctx))
	}
	return wrapSettle("ack", m.m.Ack())
}

// Nak asks for redelivery after delay (at once when delay <= 0).
func (m *message) Nak(ctx context.Context, delay time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if delay <= 0 {
		return wrapSettle("nak", m.m.Nak())
	}
	return wrapSettle("nak", m.m.NakWithDelay(delay))
}

// Term stops redelivery; the reason appears in the server's advisory.
// Servers before 2.10.4 ignore a term with a reason, so they get a plain
// one.
func (m *message) Term(ctx context.Context, reason string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if reason == "" || !termReasonSupported(m.nc.ConnectedServerVersion()) {
		return wrapSettle("term", m.m.Term())
	}
	return wrapSettle("term", m.m.TermWithReason(reason))
}

// termReasonSupported reports whether a server version is 2.10.4 or later.
func termReasonSupported(version string) bool {
	var v [3]int
	for i, p := range strings.SplitN(strings.TrimPrefix(version, "v"), ".", 3) {
		n := 0
		for _, r := range p {
			if r < '0' || r > '9' {
				break
			}
			n = n*10 + int(r-'0')
		}
		v[i] = n
	}
	return v[0] > 2 || (v[0] == 2 && (v[1] > 10 || (v[1] == 10 && v[2] >= 4)))
}

// InProgress resets the ack deadline to the consumer's ack wait.
func (m *message) InProgress(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return wrapSettle("in progress", m.m.InProgress())
}

func wrapSettle(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("jetstream: %s: %w", op, err)
}

// redact drops user information (user:password@ or token@) from a
// comma-separated list of URLs, for messages.
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		at := strings.LastIndexByte(u, '@')
		if at < 0 {
			continue
		}
		start := 0
		if j := strings.Index(u, "://"); j >= 0 && j < at {
			start = j + 3
		}
		parts[i] = u[:start] + "[REDACTED]" + u[at:]
	}
	return strings.Join(parts, ",")
}
