package gcppubsub

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"google.golang.org/api/option"

	"github.com/sluicehq/sluice/field"
)

// Defaults for the zero values of Config.
const (
	DefaultAckDeadline  = 60 * time.Second
	DefaultPollInterval = 5 * time.Second
)

// Limits of Pub/Sub itself.
const (
	// MinAckDeadline and MaxAckDeadline bound the deadline that
	// ModifyAckDeadline sets. Google Cloud creates subscriptions only with
	// an ack deadline of at least 10 s; the emulator and pstest accept less.
	MinAckDeadline = 1 * time.Second
	MaxAckDeadline = 600 * time.Second
	// MaxNakDelay is the longest redelivery delay Pub/Sub can express: a
	// message's ack deadline can be set to at most 600 s, so Nak caps its
	// delay there.
	MaxNakDelay = 600 * time.Second
	// MinDeliveryAttempts and MaxDeliveryAttempts bound a subscription
	// dead-letter policy's max_delivery_attempts.
	MinDeliveryAttempts = 5
	MaxDeliveryAttempts = 100
)

// Config configures a Source. The zero value of an optional field means its
// default.
type Config struct {
	// Project is the Google Cloud project id. Required.
	Project string
	// Subscription is the pull subscription to receive from: a name in
	// Project, or a full "projects/P/subscriptions/S". Required.
	Subscription string
	// Topic is the topic Publish sends to, and the topic Setup attaches
	// the subscription to: a name in Project or "projects/P/topics/T".
	// Required when Setup is true; without it Publish fails.
	Topic string
	// DeadLetterTopic receives a record of every message settled with
	// Term (its data, attributes, the reason and the delivery count).
	// Empty: Term acknowledges without a record.
	DeadLetterTopic string
	// AckDeadline is how long a message stays leased to this consumer
	// after InProgress, and the ack deadline of a subscription created by
	// Setup. Whole seconds up to 600 s (Google Cloud creates subscriptions
	// only with 10 s or more). Default 60 s. It should equal the
	// subscription's own ack deadline, which governs the lease of a freshly
	// received message.
	AckDeadline time.Duration
	// PollInterval is how long Receive waits for a message before it
	// returns none. Default 5 s.
	PollInterval time.Duration
	// Setup creates Topic, DeadLetterTopic and Subscription when they do
	// not exist. An existing subscription is left as it is (a different
	// ack deadline is logged; a different topic is an error).
	Setup bool
	// MaxDeliveryAttempts, when > 0 and Setup creates the subscription,
	// gives it a dead-letter policy to DeadLetterTopic with this many
	// delivery attempts (5 to 100). Pub/Sub then counts deliveries itself
	// and DeliveryCount is exact. 0: no policy.
	MaxDeliveryAttempts int
	// ClientOptions are passed to the Pub/Sub client: credentials, an
	// endpoint, or a test connection. Close closes a connection given with
	// option.WithGRPCConn, so two Sources must not share one. When the
	// environment variable PUBSUB_EMULATOR_HOST is set, the client goes to
	// that emulator without credentials.
	ClientOptions []option.ClientOption
	// Logger receives the source's logs. Nil discards them.
	Logger *slog.Logger
}

// withDefaults returns c with defaults in place of zero values.
func (c Config) withDefaults() Config {
	if c.AckDeadline == 0 {
		c.AckDeadline = DefaultAckDeadline
	}
	if c.PollInterval == 0 {
		c.PollInterval = DefaultPollInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate reports every field that is not valid, each as a *field.Error
// named as in the config file's source.pubsub section ("ack_deadline"),
// joined with errors.Join.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, field.Invalid(name, format, args...))
	}
	if c.Project == "" {
		bad("project", "must be set")
	} else if err := checkProject(c.Project); err != nil {
		bad("project", "%v", err)
	}
	if c.Subscription == "" {
		bad("subscription", "must be set")
	} else if err := checkResource(c.Subscription, "subscriptions"); err != nil {
		bad("subscription", "%v", err)
	}
	if c.Topic != "" {
		if err := checkResource(c.Topic, "topics"); err != nil {
			bad("topic", "%v", err)
		}
	}
	if c.DeadLetterTopic != "" {
		if err := checkResource(c.DeadLetterTopic, "topics"); err != nil {
			bad("dead_letter_topic", "%v", err)
		}
		if fullName(c.Project, "topics", c.DeadLetterTopic) == fullName(c.Project, "topics", c.Topic) {
			bad("dead_letter_topic", "must differ from topic (%q), or terminated messages come back", c.Topic)
		}
	}
	if c.AckDeadline < MinAckDeadline || c.AckDeadline > MaxAckDeadline {
		bad("ack_deadline", "must be between %v and %v, got %v", MinAckDeadline, MaxAckDeadline, c.AckDeadline)
	} else if c.AckDeadline%time.Second != 0 {
		bad("ack_deadline", "must be whole seconds, got %v", c.AckDeadline)
	}
	if c.PollInterval < 0 {
		bad("poll_interval", "must be > 0, got %v", c.PollInterval)
	}
	if c.Setup && c.Topic == "" {
		bad("topic", "must be set when setup is true")
	}
	if c.MaxDeliveryAttempts != 0 {
		if c.MaxDeliveryAttempts < MinDeliveryAttempts || c.MaxDeliveryAttempts > MaxDeliveryAttempts {
			bad("max_delivery_attempts", "must be 0 or between %d and %d, got %d", MinDeliveryAttempts, MaxDeliveryAttempts, c.MaxDeliveryAttempts)
		}
		if c.DeadLetterTopic == "" {
			bad("max_delivery_attempts", "needs dead_letter_topic")
		}
		if !c.Setup {
			bad("max_delivery_attempts", "applies only when setup creates the subscription; set setup or configure the policy on the subscription")
		}
	}
	return errors.Join(errs...)
}

// checkProject checks a project id loosely: ids are usually 6 to 30
// lowercase letters, digits and hyphens, but older domain-scoped ids
// ("example.com:name") exist, so only what would break a resource name is
// refused.
func checkProject(p string) error {
	if p == "" || strings.ContainsAny(p, "/ \t\n") {
		return fmt.Errorf("must be a project id without '/' or spaces, got %q", p)
	}
	return nil
}

// checkResource checks a topic or subscription given as a short name or as
// "projects/P/<kind>/NAME".
func checkResource(name, kind string) error {
	short := name
	if strings.HasPrefix(name, "projects/") {
		parts := strings.Split(name, "/")
		if len(parts) != 4 || parts[2] != kind {
			return fmt.Errorf("must be a name or \"projects/PROJECT/%s/NAME\", got %q", kind, name)
		}
		if err := checkProject(parts[1]); err != nil {
			return fmt.Errorf("project in %q: %v", name, err)
		}
		short = parts[3]
	}
	if len(short) < 3 || len(short) > 255 {
		return fmt.Errorf("name must be 3 to 255 characters, got %q", short)
	}
	if !(short[0] >= 'a' && short[0] <= 'z' || short[0] >= 'A' && short[0] <= 'Z') {
		return fmt.Errorf("name must start with a letter, got %q", short)
	}
	if strings.HasPrefix(strings.ToLower(short), "goog") {
		return fmt.Errorf("name must not start with \"goog\", got %q", short)
	}
	for _, r := range short {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.~+%", r)) {
			return fmt.Errorf("name may hold only letters, digits and - _ . ~ + %%, got %q", short)
		}
	}
	return nil
}

// fullName returns "projects/P/<kind>/NAME" for a short name, or name
// itself when it is already a full name.
func fullName(project, kind, name string) string {
	if name == "" || strings.HasPrefix(name, "projects/") {
		return name
	}
	return "projects/" + project + "/" + kind + "/" + name
}

// seconds rounds d up to whole seconds, so that a delay is never shortened.
func seconds(d time.Duration) int32 {
	if d <= 0 {
		return 0
	}
	return int32((d + time.Second - 1) / time.Second)
}
