package gcppubsub

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	gax "github.com/googleapis/gax-go/v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/sources"
)

// JobIDAttribute is the message attribute that carries the job id given to
// Publish (sources.Outgoing.ID). Message.ID returns it, or the Pub/Sub
// message id when it is absent.
const JobIDAttribute = "sluice_job_id"

// Attributes that Term adds to a dead-letter record, next to the original
// message's own attributes.
const (
	ReasonAttribute        = "sluice_dead_letter_reason"
	DeliveryCountAttribute = "sluice_delivery_count"
	MessageIDAttribute     = "sluice_message_id"
	SubscriptionAttribute  = "sluice_subscription"
)

// maxAttributeValue is Pub/Sub's limit on an attribute value, in bytes.
const maxAttributeValue = 1024

// emptyPullPause separates two pulls that came back empty, so that a server
// that answers at once (return_immediately semantics) is not polled in a
// tight loop.
const emptyPullPause = 100 * time.Millisecond

var (
	// ErrClosed is returned by a Source used after Close.
	ErrClosed = errors.New("gcppubsub: source closed")
	// ErrSettled is returned by a Message settled a second time (after
	// Ack, Nak or Term), and by InProgress on a settled message.
	ErrSettled = errors.New("gcppubsub: message already settled")
	// ErrNoTopic is returned by Publish when Config.Topic is empty.
	ErrNoTopic = errors.New("gcppubsub: no topic configured for publish")
)

// Source receives from a Pub/Sub pull subscription with the unary Pull
// API and publishes to a topic. It is safe for concurrent use.
type Source struct {
	cfg          Config
	log          *slog.Logger
	client       *pubsub.Client
	subscription string // full name
	topic        string // full name, or ""
	deadLetter   string // full name, or ""
	counts       *deliveries
	now          func() time.Time
	// extendOnReceive is set unless the subscription's own ack deadline is
	// known to be cfg.AckDeadline: each received batch then gets one
	// ModifyAckDeadline to it.
	extendOnReceive bool

	mu     sync.Mutex
	closed bool
}

var (
	_ sources.Source    = (*Source)(nil)
	_ sources.Message   = (*Message)(nil)
	_ sources.AckWaiter = (*Source)(nil)
)

// Open validates cfg, connects, and with cfg.Setup creates the topics and
// the subscription that do not exist yet.
func Open(ctx context.Context, cfg Config) (*Source, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("gcppubsub: config: %w", err)
	}
	cfg = cfg.withDefaults()
	client, err := pubsub.NewClient(ctx, cfg.Project, cfg.ClientOptions...)
	if err != nil {
		return nil, fmt.Errorf("gcppubsub: connect: %w", err)
	}
	s := &Source{
		cfg:          cfg,
		log:          cfg.Logger,
		client:       client,
		subscription: fullName(cfg.Project, "subscriptions", cfg.Subscription),
		topic:        fullName(cfg.Project, "topics", cfg.Topic),
		deadLetter:   fullName(cfg.Project, "topics", cfg.DeadLetterTopic),
		counts:       newDeliveries(deliveryTTL, maxTrackedMessages),
		now:          time.Now,

		extendOnReceive: true,
	}
	if cfg.Setup {
		if err := s.setup(ctx); err != nil {
			_ = client.Close()
			return nil, err
		}
	}
	return s, nil
}

// setup creates what is missing: the topic, the dead-letter topic and the
// subscription that keeps its records, then the subscription.
func (s *Source) setup(ctx context.Context) error {
	for _, t := range []string{s.topic, s.deadLetter} {
		if t == "" {
			continue
		}
		_, err := s.client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: t})
		switch status.Code(err) {
		case codes.OK:
			s.log.Info("created topic", "topic", t)
		case codes.AlreadyExists:
		default:
			return fmt.Errorf("gcppubsub: create topic %s: %w", t, err)
		}
	}
	if s.deadLetter != "" {
		if err := s.keepDeadLetters(ctx); err != nil {
			return err
		}
	}
	want := &pubsubpb.Subscription{
		Name:               s.subscription,
		Topic:              s.topic,
		AckDeadlineSeconds: seconds(s.cfg.AckDeadline),
	}
	if s.cfg.MaxDeliveryAttempts > 0 {
		want.DeadLetterPolicy = &pubsubpb.DeadLetterPolicy{
			DeadLetterTopic:     s.deadLetter,
			MaxDeliveryAttempts: int32(s.cfg.MaxDeliveryAttempts),
		}
	}
	_, err := s.client.SubscriptionAdminClient.CreateSubscription(ctx, want)
	switch status.Code(err) {
	case codes.OK:
		s.log.Info("created subscription", "subscription", s.subscription, "topic", s.topic,
			"ack_deadline", s.cfg.AckDeadline, "max_delivery_attempts", s.cfg.MaxDeliveryAttempts)
		s.extendOnReceive = false
		return nil
	case codes.AlreadyExists:
	default:
		return fmt.Errorf("gcppubsub: create subscription %s: %w", s.subscription, err)
	}
	got, err := s.client.SubscriptionAdminClient.GetSubscription(ctx,
		&pubsubpb.GetSubscriptionRequest{Subscription: s.subscription})
	if err != nil {
		return fmt.Errorf("gcppubsub: get subscription %s: %w", s.subscription, err)
	}
	if got.GetTopic() != s.topic {
		return fmt.Errorf("gcppubsub: subscription %s exists on topic %s, not on the configured topic %s",
			s.subscription, got.GetTopic(), s.topic)
	}
	if got.GetAckDeadlineSeconds() != want.AckDeadlineSeconds {
		s.log.Warn("existing subscription has another ack deadline; it is left unchanged, and each received batch is extended to ack_deadline",
			"subscription", s.subscription, "subscription_ack_deadline", time.Duration(got.GetAckDeadlineSeconds())*time.Second,
			"ack_deadline", s.cfg.AckDeadline)
	} else {
		s.extendOnReceive = false
	}
	if s.cfg.MaxDeliveryAttempts > 0 && got.GetDeadLetterPolicy() == nil {
		s.log.Warn("existing subscription has no dead-letter policy; it is left unchanged, and delivery counts are per process",
			"subscription", s.subscription)
	}
	return nil
}

// DeadLetterSubscriptionSuffix makes the id of the subscription that keeps
// the dead-letter topic's records from the topic's id.
const DeadLetterSubscriptionSuffix = "-records"

// DeadLetterSubscription returns the full name of the subscription that
// keeps the records of the dead-letter topic (full name) topic: Pub/Sub
// drops what a topic with no subscription receives.
func DeadLetterSubscription(topic string) string {
	parts := strings.Split(topic, "/")
	return "projects/" + parts[1] + "/subscriptions/" + parts[3] + DeadLetterSubscriptionSuffix
}

// keepDeadLetters creates the subscription that keeps the dead-letter
// topic's records, unless it exists on that topic.
func (s *Source) keepDeadLetters(ctx context.Context) error {
	sub := DeadLetterSubscription(s.deadLetter)
	_, err := s.client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: s.deadLetter})
	switch status.Code(err) {
	case codes.OK:
		s.log.Info("created subscription", "subscription", sub, "topic", s.deadLetter)
		return nil
	case codes.AlreadyExists:
	default:
		return fmt.Errorf("gcppubsub: create subscription %s: %w", sub, err)
	}
	got, err := s.client.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub})
	if err != nil {
		return fmt.Errorf("gcppubsub: get subscription %s: %w", sub, err)
	}
	if got.GetTopic() != s.deadLetter {
		return fmt.Errorf("gcppubsub: subscription %s exists on topic %s, not on the dead-letter topic %s: its records would not be kept there",
			sub, got.GetTopic(), s.deadLetter)
	}
	return nil
}

// Receive pulls at most max messages with one unary Pull (MaxMessages =
// max): nothing is prefetched or buffered. It waits up to the poll interval
// for a message; then it returns none and a nil error.
func (s *Source) Receive(ctx context.Context, max int) ([]sources.Message, error) {
	if max <= 0 {
		return nil, fmt.Errorf("gcppubsub: receive: max must be > 0, got %d", max)
	}
	if s.isClosed() {
		return nil, ErrClosed
	}
	poll, cancel := context.WithTimeout(ctx, s.cfg.PollInterval)
	defer cancel()
	ask := int32(min(max, 1<<31-1))
	for {
		// The client retries transient errors until the poll ends; the
		// recorder keeps the last one, so that an unreachable server is
		// not mistaken for an empty subscription.
		rec := &retryRecorder{inner: gax.OnCodes(pullRetryCodes, pullBackoff)}
		resp, err := s.client.SubscriptionAdminClient.Pull(poll, &pubsubpb.PullRequest{
			Subscription: s.subscription,
			MaxMessages:  ask,
		}, gax.WithRetry(func() gax.Retryer { return rec }))
		if rms := resp.GetReceivedMessages(); err == nil && len(rms) > 0 {
			// Even if ctx ended meanwhile: these are leased to us now.
			return s.wrap(ctx, rms, max), nil
		}
		switch {
		case ctx.Err() != nil:
			// Messages the server leased to this cancelled pull, if any,
			// are redelivered after their ack deadline.
			return nil, ctx.Err()
		case s.isClosed():
			return nil, ErrClosed
		case err != nil && rec.last != nil && (poll.Err() != nil || status.Code(err) == codes.DeadlineExceeded):
			return nil, fmt.Errorf("gcppubsub: pull %s: %w", s.subscription, rec.last)
		case err != nil && (poll.Err() != nil || status.Code(err) == codes.DeadlineExceeded):
			// The poll interval ended. The server may notice the
			// deadline a moment before the local timer fires.
			return nil, nil
		case err != nil:
			return nil, fmt.Errorf("gcppubsub: pull %s: %w", s.subscription, err)
		}
		select {
		case <-poll.Done():
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, nil
		case <-time.After(emptyPullPause):
		}
	}
}

// wrap turns received messages into Messages. Should a server ever return
// more than max, the surplus goes back at once. When the subscription's ack
// deadline may differ from Config.AckDeadline, the batch is leased for
// Config.AckDeadline with one ModifyAckDeadline.
func (s *Source) wrap(ctx context.Context, rms []*pubsubpb.ReceivedMessage, max int) []sources.Message {
	if len(rms) > max {
		var ids []string
		for _, rm := range rms[max:] {
			ids = append(ids, rm.GetAckId())
		}
		s.log.Warn("pull returned more messages than asked; releasing the surplus", "asked", max, "got", len(rms))
		// Best effort: the surplus is redelivered after its ack deadline
		// anyway if this fails.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_ = s.client.SubscriptionAdminClient.ModifyAckDeadline(ctx, &pubsubpb.ModifyAckDeadlineRequest{
			Subscription: s.subscription, AckIds: ids, AckDeadlineSeconds: 0,
		})
		cancel()
		rms = rms[:max]
	}
	if s.extendOnReceive {
		ids := make([]string, len(rms))
		for i, rm := range rms {
			ids[i] = rm.GetAckId()
		}
		err := s.client.SubscriptionAdminClient.ModifyAckDeadline(context.WithoutCancel(ctx), &pubsubpb.ModifyAckDeadlineRequest{
			Subscription: s.subscription, AckIds: ids, AckDeadlineSeconds: seconds(s.cfg.AckDeadline),
		})
		if err != nil {
			// The messages keep the subscription's own deadline.
			s.log.Warn("extending received messages to ack_deadline failed", "subscription", s.subscription, "err", err)
		}
	}
	now := s.now()
	out := make([]sources.Message, 0, len(rms))
	for _, rm := range rms {
		pm := rm.GetMessage()
		m := &Message{
			src:       s,
			ackID:     rm.GetAckId(),
			messageID: pm.GetMessageId(),
			data:      pm.GetData(),
			attrs:     pm.GetAttributes(),
			published: pm.GetPublishTime().AsTime(),
		}
		if pm.GetPublishTime() == nil {
			m.published = time.Time{}
		}
		if m.attrs == nil {
			m.attrs = map[string]string{}
		}
		m.id = m.attrs[JobIDAttribute]
		if m.id == "" {
			m.id = m.messageID
		}
		if n := rm.GetDeliveryAttempt(); n > 0 {
			m.deliveries = int(n) // the subscription has a dead-letter policy
		} else {
			m.deliveries = s.counts.observe(m.messageID, now)
			m.counted = true
		}
		out = append(out, m)
	}
	return out
}

// Pull's retry policy: the client library's codes, with a shorter
// backoff cap so that a retry fits in a poll interval.
var (
	pullRetryCodes = []codes.Code{codes.Unknown, codes.Aborted, codes.Unavailable, codes.Internal}
	pullBackoff    = gax.Backoff{Initial: 100 * time.Millisecond, Max: 2 * time.Second, Multiplier: 1.3}
)

// retryRecorder is a gax.Retryer that remembers the last error it chose
// to retry. One is made per call, which gax uses from one goroutine.
type retryRecorder struct {
	inner gax.Retryer
	last  error
}

func (r *retryRecorder) Retry(err error) (time.Duration, bool) {
	pause, retry := r.inner.Retry(err)
	if retry {
		r.last = err
	}
	return pause, retry
}

// Publish publishes one message to the configured topic with a unary
// Publish call and returns once Pub/Sub has accepted it. m.ID goes into the
// JobIDAttribute attribute. Pub/Sub does not deduplicate: publishing the
// same ID twice enqueues two messages.
func (s *Source) Publish(ctx context.Context, m sources.Outgoing) error {
	if s.isClosed() {
		return ErrClosed
	}
	if s.topic == "" {
		return ErrNoTopic
	}
	attrs := make(map[string]string, len(m.Headers)+1)
	maps.Copy(attrs, m.Headers)
	if m.ID != "" {
		attrs[JobIDAttribute] = m.ID
	}
	if len(attrs) == 0 {
		attrs = nil
	}
	if n := messageSize(m.Data, attrs); n > MaxMessageBytes {
		return fmt.Errorf("gcppubsub: publish to %s: %w: %d bytes, Pub/Sub accepts %d", s.topic, sources.ErrTooLarge, n, MaxMessageBytes)
	}
	if _, err := s.publish(ctx, s.topic, &pubsubpb.PubsubMessage{Data: m.Data, Attributes: attrs}); err != nil {
		if m.ID != "" {
			return fmt.Errorf("gcppubsub: publish job %q to %s: %w", m.ID, s.topic, err)
		}
		return fmt.Errorf("gcppubsub: publish to %s: %w", s.topic, err)
	}
	return nil
}

// MaxMessageBytes is Pub/Sub's limit on a message: data and attributes.
const MaxMessageBytes = 10_000_000

// messageSize is the size Pub/Sub counts for a message: its data and the
// keys and values of its attributes.
func messageSize(data []byte, attrs map[string]string) int {
	n := len(data)
	for k, v := range attrs {
		n += len(k) + len(v)
	}
	return n
}

func (s *Source) publish(ctx context.Context, topic string, pm *pubsubpb.PubsubMessage) (string, error) {
	resp, err := s.client.TopicAdminClient.Publish(ctx, &pubsubpb.PublishRequest{
		Topic:    topic,
		Messages: []*pubsubpb.PubsubMessage{pm},
	})
	if err != nil {
		return "", err
	}
	if ids := resp.GetMessageIds(); len(ids) == 1 {
		return ids[0], nil
	}
	return "", fmt.Errorf("server returned %d message ids for one message", len(resp.GetMessageIds()))
}

// Config returns the configuration in effect, defaults filled in.
func (s *Source) Config() Config { return s.cfg }

// AckWait returns the subscription's ack deadline (sources.AckWaiter).
func (s *Source) AckWait() time.Duration { return s.cfg.AckDeadline }

// Close closes the client. Messages not yet settled are redelivered after
// their ack deadline. Close is idempotent.
func (s *Source) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	if err := s.client.Close(); err != nil {
		return fmt.Errorf("gcppubsub: close: %w", err)
	}
	return nil
}

func (s *Source) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}
