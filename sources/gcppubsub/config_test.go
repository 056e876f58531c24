package gcppubsub

import (
	"errors"
	"testing"
	"time"

	"github.com/sluicehq/sluice/field"
)

func TestValidate(t *testing.T) {
	ok := Config{Project: "sluice-test", Subscription: "jobs", Topic: "jobs", DeadLetterTopic: "dead"}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"no project", func(c *Config) { c.Project = "" }, "project"},
		{"project with slash", func(c *Config) { c.Project = "a/b" }, "project"},
		{"no subscription", func(c *Config) { c.Subscription = "" }, "subscription"},
		{"short subscription", func(c *Config) { c.Subscription = "ab" }, "subscription"},
		{"subscription with digit first", func(c *Config) { c.Subscription = "1abc" }, "subscription"},
		{"subscription goog", func(c *Config) { c.Subscription = "google-x" }, "subscription"},
		{"subscription bad char", func(c *Config) { c.Subscription = "ab c" }, "subscription"},
		{"subscription wrong kind", func(c *Config) { c.Subscription = "projects/p/topics/abc" }, "subscription"},
		{"topic malformed full name", func(c *Config) { c.Topic = "projects/p/topics" }, "topic"},
		{"dead letter same as topic", func(c *Config) { c.DeadLetterTopic = "projects/sluice-test/topics/jobs" }, "dead_letter_topic"},
		{"ack deadline too long", func(c *Config) { c.AckDeadline = 601 * time.Second }, "ack_deadline"},
		{"ack deadline negative", func(c *Config) { c.AckDeadline = -time.Second }, "ack_deadline"},
		{"ack deadline fraction", func(c *Config) { c.AckDeadline = 1500 * time.Millisecond }, "ack_deadline"},
		{"poll interval negative", func(c *Config) { c.PollInterval = -1 }, "poll_interval"},
		{"setup without topic", func(c *Config) { c.Setup, c.Topic = true, "" }, "topic"},
		{"attempts out of range", func(c *Config) { c.Setup, c.MaxDeliveryAttempts = true, 4 }, "max_delivery_attempts"},
		{"attempts over 100", func(c *Config) { c.Setup, c.MaxDeliveryAttempts = true, 101 }, "max_delivery_attempts"},
		{"attempts without dead letter", func(c *Config) { c.Setup, c.MaxDeliveryAttempts, c.DeadLetterTopic = true, 5, "" }, "max_delivery_attempts"},
		{"attempts without setup", func(c *Config) { c.MaxDeliveryAttempts = 5 }, "max_delivery_attempts"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := ok
			tc.edit(&c)
			err := c.Validate()
			var fe *field.Error
			if !errors.As(err, &fe) || fe.Field != tc.field {
				t.Fatalf("Validate() = %v, want a *field.Error on %s", err, tc.field)
			}
			if n := len(err.(interface{ Unwrap() []error }).Unwrap()); n != 1 {
				t.Errorf("Validate() reported %d problems, want 1: %v", n, err)
			}
		})
	}
	var all Config
	all.AckDeadline = time.Hour
	all.MaxDeliveryAttempts = 1
	if n := len(all.Validate().(interface{ Unwrap() []error }).Unwrap()); n != 6 {
		t.Errorf("Validate() of a bad config reported %d problems, want 6 (every one): %v", n, all.Validate())
	}
	full := ok
	full.Subscription = "projects/other-project/subscriptions/jobs"
	full.Topic = "projects/other-project/topics/jobs"
	full.Setup, full.MaxDeliveryAttempts = true, 100
	if err := full.Validate(); err != nil {
		t.Fatalf("full names: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	c := Config{}.withDefaults()
	if c.AckDeadline != DefaultAckDeadline || c.PollInterval != DefaultPollInterval || c.Logger == nil {
		t.Fatalf("defaults: %+v", c)
	}
}

func TestFullName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{
		{"jobs", "projects/p/topics/jobs"},
		{"projects/q/topics/jobs", "projects/q/topics/jobs"},
		{"", ""},
	} {
		if got := fullName("p", "topics", tc.name); got != tc.want {
			t.Errorf("fullName(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestSeconds(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want int32
	}{
		{0, 0}, {-time.Second, 0}, {time.Nanosecond, 1}, {time.Second, 1},
		{time.Second + 1, 2}, {600 * time.Second, 600},
	} {
		if got := seconds(tc.d); got != tc.want {
			t.Errorf("seconds(%v) = %d, want %d", tc.d, got, tc.want)
		}
	}
}

func TestTruncate(t *testing.T) {
	for _, tc := range []struct {
		s    string
		n    int
		want string
	}{
		{"abc", 5, "abc"}, {"abc", 2, "ab"}, {"aé", 2, "a"}, {"aé", 3, "aé"}, {"é", 1, ""},
	} {
		if got := truncate(tc.s, tc.n); got != tc.want {
			t.Errorf("truncate(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
