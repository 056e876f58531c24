package natsjs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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
	storeDir    string // the store directory of the embedded server in use; "" when unknown or not embedded
	nc          *nats.Conn
	js          jetstream.JetStream
	cons        jetstream.Consumer
	created     time.Time // the stream's creation time, part of a message's id (seqID)

	mu        sync.Mutex
	reconnect chan struct{} // closed and replaced on each reconnection
	closed    chan struct{}
	closeOnce sync.Once
	closeErr  error

	store storeHealth
}

var (
	_ sources.Source       = (*Source)(nil)
	_ sources.StatsSource  = (*Source)(nil)
	_ sources.AckWaiter    = (*Source)(nil)
	_ sources.Connector    = (*Source)(nil)
	_ sources.Healther     = (*Source)(nil)
	_ sources.Deduplicator = (*Source)(nil)
	_ sources.Message      = (*message)(nil)
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
		s.publishFailed(ctx, err)
		return nil, fmt.Errorf("jetstream: publish to %s: %w", s.cfg.PublishSubject, err)
	}
	s.store.set(nil)
	return ack, nil
}

// Stats reports the consumer's pending, ack-pending and redelivered counts
// and the number of records in the dead-letter stream (-1 when that
// stream does not exist). It fails while the embedded store is failing
// (see Healthy), since the counts the server gives then are not stored.
func (s *Source) Stats(ctx context.Context) (sources.Stats, error) {
	if err := s.storeFault(); err != nil {
		return sources.Stats{}, err
	}
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

// AckWait returns the consumer's ack wait (sources.AckWaiter).
func (s *Source) AckWait() time.Duration { return s.cfg.AckWait }

// PublishDedup is Publish that reports whether the stream already held the
// message's ID in its duplicate window (sources.Deduplicator).
func (s *Source) PublishDedup(ctx context.Context, m sources.Outgoing) (bool, error) {
	ack, err := s.PublishAck(ctx, m)
	if err != nil {
		return false, err
	}
	return ack.Duplicate, nil
}
