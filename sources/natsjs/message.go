package natsjs

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/sources"
)

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
		msg.id = seqID(meta.Stream, s.created, meta.Sequence.Stream)
	}
	return msg
}

// seqID is the id of a message published without Nats-Msg-Id: its stream's
// name and creation time (Unix nanoseconds) and its sequence,
// "JOBS:1767323045123456789:42". The sequence alone repeats: it restarts
// at 1 when the stream is made again, and each stream has its own. The
// three are the same on every redelivery.
func seqID(stream string, created time.Time, seq uint64) string {
	return stream + ":" + strconv.FormatInt(created.UnixNano(), 10) + ":" + strconv.FormatUint(seq, 10)
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

func (m *message) ID() string { return m.id }

func (m *message) Data() []byte { return m.m.Data() }

func (m *message) Headers() map[string]string { return m.headers }

func (m *message) DeliveryCount() int { return m.count }

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
