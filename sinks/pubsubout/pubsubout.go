// Package pubsubout is an output that publishes each record to a Google
// Cloud Pub/Sub topic. A record is confirmed when the server has assigned
// it a message id. Pub/Sub does not deduplicate on publish: a record
// published twice is delivered twice, and consumers deduplicate by the key,
// which each message carries in the KeyAttribute attribute.
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
	// CreateTopic makes New create the topic when it does not exist.
	CreateTopic bool
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
	return nil
}

// Output publishes records to a topic. It is safe for concurrent use.
type Output struct {
	pub *pubsub.Publisher

	mu     sync.RWMutex // Close waits for publishes in progress
	closed bool
}

var _ sinks.Output = (*Output)(nil)

// New validates cfg and, with CreateTopic, creates the topic if it is
// missing. The client stays the caller's.
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
	}
	return &Output{pub: pub}, nil
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
