// Package pubsubout is an output that publishes each record to a Google
// Cloud Pub/Sub topic. A record is confirmed when the server has assigned
// it a message id. Pub/Sub does not deduplicate on publish: a record
// published twice is delivered twice, and consumers deduplicate by the key,
// which each message carries in the KeyAttribute attribute.
//
// Pub/Sub keeps a message only for the subscriptions its topic has when it
// is published: a record published to a topic with none is dropped. So
// New, when it creates the topic, creates a subscription with it (by
// default "<topic id>-records"), and a Reader reads the records back from
// that subscription (`sluice dlq replay`).
package pubsubout

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"cloud.google.com/go/pubsub/v2"
	"cloud.google.com/go/pubsub/v2/apiv1/pubsubpb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/sinks"
)

// KeyAttribute is the message attribute that carries the record's key.
const KeyAttribute = "sluice_key"

// maxAttributeValue is Pub/Sub's limit on an attribute value, in bytes.
const maxAttributeValue = 1024

// Config describes the topic.
type Config struct {
	// Topic is a full name ("projects/p/topics/t") or an id in the
	// client's project. Required.
	Topic string
	// CreateTopic makes New create the topic when it does not exist, and
	// the subscription that keeps the records when that does not exist.
	CreateTopic bool
	// Subscription keeps the records: a full name
	// ("projects/p/subscriptions/s") or an id in the topic's project.
	// Default: the topic's id followed by SubscriptionSuffix.
	Subscription string
}

// SubscriptionSuffix makes the default subscription's id from the topic's.
const SubscriptionSuffix = "-records"

// SubscriptionName returns the full name of the subscription that keeps
// the records of a valid cfg, for a client of project.
func (c Config) SubscriptionName(project string) string {
	topic := c.Topic
	if parts := strings.Split(topic, "/"); len(parts) == 4 {
		project, topic = parts[1], parts[3]
	}
	sub := c.Subscription
	if sub == "" {
		sub = topic + SubscriptionSuffix
	}
	if strings.Contains(sub, "/") {
		return sub
	}
	return "projects/" + project + "/subscriptions/" + sub
}

// Validate reports a missing or malformed topic.
func (c Config) Validate() error {
	switch {
	case c.Topic == "":
		return field.Invalid("topic", "required")
	case strings.Contains(c.Topic, "/"):
		parts := strings.Split(c.Topic, "/")
		if len(parts) != 4 || parts[0] != "projects" || parts[1] == "" || parts[2] != "topics" || parts[3] == "" {
			return field.Invalid("topic", "must be an id or projects/PROJECT/topics/ID, got %q", c.Topic)
		}
	case strings.ContainsAny(c.Topic, " \t\r\n"):
		return field.Invalid("topic", "must not contain spaces, got %q", c.Topic)
	}
	switch s := c.Subscription; {
	case strings.Contains(s, "/"):
		parts := strings.Split(s, "/")
		if len(parts) != 4 || parts[0] != "projects" || parts[1] == "" || parts[2] != "subscriptions" || parts[3] == "" {
			return field.Invalid("subscription", "must be an id or projects/PROJECT/subscriptions/ID, got %q", s)
		}
	case strings.ContainsAny(s, " \t\r\n"):
		return field.Invalid("subscription", "must not contain spaces, got %q", s)
	}
	return nil
}

// Output publishes records to a topic. It is safe for concurrent use.
type Output struct {
	pub *pubsub.Publisher

	mu     sync.RWMutex // Close waits for publishes in progress
	closed bool
}

var _ sinks.Output = (*Output)(nil)

// New validates cfg and, with CreateTopic, creates the topic and the
// subscription that keeps its records if they are missing (an existing
// subscription attached to another topic is an error). The client stays
// the caller's.
func New(ctx context.Context, client *pubsub.Client, cfg Config) (*Output, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("pubsubout: %w", err)
	}
	pub := client.Publisher(cfg.Topic)
	if cfg.CreateTopic {
		_, err := client.TopicAdminClient.CreateTopic(ctx, &pubsubpb.Topic{Name: pub.String()})
		if err != nil && status.Code(err) != codes.AlreadyExists {
			return nil, fmt.Errorf("pubsubout: create topic %s: %w", pub, err)
		}
		if err := keep(ctx, client, pub.String(), cfg.SubscriptionName(client.Project())); err != nil {
			return nil, err
		}
	}
	return &Output{pub: pub}, nil
}

// keep creates the subscription sub on topic, unless it exists attached to
// it.
func keep(ctx context.Context, client *pubsub.Client, topic, sub string) error {
	_, err := client.SubscriptionAdminClient.CreateSubscription(ctx, &pubsubpb.Subscription{Name: sub, Topic: topic})
	switch status.Code(err) {
	case codes.OK:
		return nil
	case codes.AlreadyExists:
	default:
		return fmt.Errorf("pubsubout: create subscription %s: %w", sub, err)
	}
	got, err := client.SubscriptionAdminClient.GetSubscription(ctx, &pubsubpb.GetSubscriptionRequest{Subscription: sub})
	if err != nil {
		return fmt.Errorf("pubsubout: get subscription %s: %w", sub, err)
	}
	if got.GetTopic() != topic {
		return fmt.Errorf("pubsubout: subscription %s exists on topic %s, not on %s: its records would not be kept there", sub, got.GetTopic(), topic)
	}
	return nil
}

// Publish publishes data with the key as an attribute and returns once the
// server has assigned it a message id.
func (o *Output) Publish(ctx context.Context, key string, data []byte) error {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if o.closed {
		return sinks.ErrClosed
	}
	msg := &pubsub.Message{Data: data}
	if key != "" {
		msg.Attributes = map[string]string{KeyAttribute: attributeValue(key)}
	}
	id, err := o.pub.Publish(ctx, msg).Get(ctx)
	if err != nil {
		return fmt.Errorf("pubsubout: publish to %s: %w", o.pub, err)
	}
	if id == "" {
		return fmt.Errorf("pubsubout: publish to %s: no message id from the server", o.pub)
	}
	return nil
}

// attributeValue makes s a valid attribute value: valid UTF-8 of at most
// maxAttributeValue bytes.
func attributeValue(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= maxAttributeValue {
		return s
	}
	cut := maxAttributeValue
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

// Close waits for publishes in progress, then stops the publisher's
// background work. Publish after Close returns sinks.ErrClosed.
func (o *Output) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil
	}
	o.closed = true
	o.pub.Stop()
	return nil
}
