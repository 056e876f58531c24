package gcppubsub

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
)

// Message is one delivery from a pull subscription. Its settling methods
// are safe for concurrent use; the first Ack, Nak or Term that succeeds
// settles it, and later calls return ErrSettled.
type Message struct {
	src        *Source
	ackID      string
	messageID  string
	id         string
	data       []byte
	attrs      map[string]string
	deliveries int
	counted    bool      // deliveries is the in-process count
	published  time.Time // Pub/Sub's publish time

	mu      sync.Mutex
	settled bool
}

// ID is the JobIDAttribute attribute, or the Pub/Sub message id when the
// message has none.
func (m *Message) ID() string { return m.id }

// PublishedAt is the time Pub/Sub accepted the message.
func (m *Message) PublishedAt() time.Time { return m.published }

// MessageID is the Pub/Sub message id.
func (m *Message) MessageID() string { return m.messageID }

// Data is the payload.
func (m *Message) Data() []byte { return m.data }

// Headers are the message's attributes. The map must not be modified.
func (m *Message) Headers() map[string]string { return m.attrs }

// DeliveryCount is Pub/Sub's delivery attempt when the subscription has a
// dead-letter policy. Otherwise it is the number of times this process has
// received the message (see the package documentation).
func (m *Message) DeliveryCount() int { return m.deliveries }

// Ack acknowledges the message.
func (m *Message) Ack(ctx context.Context) error {
	return m.settle(ctx, "ack", func() error { return m.acknowledge(ctx) })
}

// Nak makes the message available again after delay, by setting its ack
// deadline to delay rounded up to whole seconds. Pub/Sub caps a deadline at
// 600 s, so a longer delay becomes MaxNakDelay. A delay <= 0 redelivers at
// once.
func (m *Message) Nak(ctx context.Context, delay time.Duration) error {
	if delay > MaxNakDelay {
		m.src.log.Debug("nak delay capped at pub/sub's maximum", "job", m.id, "delay", delay, "max", MaxNakDelay)
		delay = MaxNakDelay
	}
	return m.settle(ctx, "nak", func() error { return m.modifyDeadline(ctx, seconds(delay)) })
}

// Term publishes a dead-letter record to the configured dead-letter topic,
// waits until Pub/Sub has accepted it, and then acknowledges the message.
// The record holds the original data and attributes plus ReasonAttribute
// (reason, cut to 1024 bytes), DeliveryCountAttribute, MessageIDAttribute
// and SubscriptionAttribute. Without a dead-letter topic, Term only
// acknowledges (and logs the reason). If the acknowledgement fails after
// the record was published, the message comes back and a second record
// may be written.
func (m *Message) Term(ctx context.Context, reason string) error {
	return m.settle(ctx, "term", func() error {
		if m.src.deadLetter == "" {
			m.src.log.Warn("terminated without a dead-letter topic", "job", m.id, "reason", reason,
				"deliveries", m.deliveries)
			return m.acknowledge(ctx)
		}
		attrs := make(map[string]string, len(m.attrs)+4)
		maps.Copy(attrs, m.attrs)
		attrs[ReasonAttribute] = truncate(reason, maxAttributeValue)
		attrs[DeliveryCountAttribute] = strconv.Itoa(m.deliveries)
		attrs[MessageIDAttribute] = m.messageID
		attrs[SubscriptionAttribute] = m.src.subscription
		if _, err := m.src.publish(ctx, m.src.deadLetter, &pubsubpb.PubsubMessage{Data: m.data, Attributes: attrs}); err != nil {
			return fmt.Errorf("publish dead-letter record to %s: %w", m.src.deadLetter, err)
		}
		return m.acknowledge(ctx)
	})
}

// InProgress extends the ack deadline to Config.AckDeadline from now.
func (m *Message) InProgress(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.settled {
		return ErrSettled
	}
	if err := m.modifyDeadline(ctx, seconds(m.src.cfg.AckDeadline)); err != nil {
		return fmt.Errorf("gcppubsub: in progress %s: %w", m.id, err)
	}
	return nil
}

// settle runs op once: concurrent and later calls after a success get
// ErrSettled; after a failure the message may be settled again.
func (m *Message) settle(ctx context.Context, name string, op func() error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.settled {
		return ErrSettled
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("gcppubsub: %s %s: %w", name, m.id, err)
	}
	if err := op(); err != nil {
		return fmt.Errorf("gcppubsub: %s %s: %w", name, m.id, err)
	}
	m.settled = true
	if name != "nak" && m.counted {
		m.src.counts.forget(m.messageID)
	}
	return nil
}

func (m *Message) acknowledge(ctx context.Context) error {
	return m.src.client.SubscriptionAdminClient.Acknowledge(ctx, &pubsubpb.AcknowledgeRequest{
		Subscription: m.src.subscription,
		AckIds:       []string{m.ackID},
	})
}

func (m *Message) modifyDeadline(ctx context.Context, secs int32) error {
	return m.src.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{
		Subscription:       m.src.subscription,
		AckIds:             []string{m.ackID},
		AckDeadlineSeconds: secs,
	})
}

// truncate cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
