package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"google.golang.org/api/option"

	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/gcppubsub"
)

// pubsubConfig is the `source.pubsub:` section of the config file. See
// sources/gcppubsub.Config for what each field does.
type pubsubConfig struct {
	Project             string          `yaml:"project"`
	Subscription        string          `yaml:"subscription"`
	Topic               string          `yaml:"topic"`
	DeadLetterTopic     string          `yaml:"dead_letter_topic"`
	AckDeadline         limiterDuration `yaml:"ack_deadline"`
	PollInterval        limiterDuration `yaml:"poll_interval"`
	Setup               bool            `yaml:"setup"`
	MaxDeliveryAttempts int             `yaml:"max_delivery_attempts"`
	// CredentialsFile is a service account key file; empty: Application
	// Default Credentials. Ignored when PUBSUB_EMULATOR_HOST is set.
	CredentialsFile string `yaml:"credentials_file"`
}

// Defaults of the section that are not the library's.
const (
	defaultPubsubSubscription = "sluice-jobs"
	defaultPubsubTopic        = "sluice-jobs"
)

func defaultPubsubConfig() pubsubConfig {
	return pubsubConfig{
		Subscription: defaultPubsubSubscription,
		Topic:        defaultPubsubTopic,
		AckDeadline:  limiterDuration(gcppubsub.DefaultAckDeadline),
		PollInterval: limiterDuration(gcppubsub.DefaultPollInterval),
	}
}

// pubsubFields maps gcppubsub.Config field names to their keys here.
var pubsubFields = map[string]string{
	"Project":             "project",
	"Subscription":        "subscription",
	"Topic":               "topic",
	"DeadLetterTopic":     "dead_letter_topic",
	"AckDeadline":         "ack_deadline",
	"PollInterval":        "poll_interval",
	"Setup":               "setup",
	"MaxDeliveryAttempts": "max_delivery_attempts",
}

// validate checks the section; each line of the error is "path.field:
// message".
func (c pubsubConfig) validate(path string) error {
	var errs []error
	if c.PollInterval == 0 {
		// Zero would mean the library default; here it is a mistake.
		errs = append(errs, fmt.Errorf("%s.poll_interval: must be > 0, got 0s", path))
	}
	if c.CredentialsFile != "" {
		if _, err := os.Stat(c.CredentialsFile); err != nil {
			errs = append(errs, fmt.Errorf("%s.credentials_file: %v", path, err))
		}
	}
	if err := c.lib(nil).Validate(); err != nil {
		list := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			list = j.Unwrap()
		}
		for _, e := range list {
			var ce *gcppubsub.ConfigError
			if errors.As(e, &ce) {
				errs = append(errs, fmt.Errorf("%s.%s: %s", path, pubsubFields[ce.Field], pubsubReason(path, ce.Reason)))
			} else {
				errs = append(errs, fmt.Errorf("%s: %s", path, strings.TrimPrefix(e.Error(), "gcppubsub: ")))
			}
		}
	}
	return errors.Join(errs...)
}

// pubsubReason names fields in a library message by their config keys.
func pubsubReason(path, reason string) string {
	return strings.NewReplacer(
		"DeadLetterTopic", path+".dead_letter_topic",
		"Topic", path+".topic",
		"Setup", path+".setup",
	).Replace(reason)
}

// lib copies the section into the library's Config.
func (c pubsubConfig) lib(log *slog.Logger) gcppubsub.Config {
	return gcppubsub.Config{
		Project:             c.Project,
		Subscription:        c.Subscription,
		Topic:               c.Topic,
		DeadLetterTopic:     c.DeadLetterTopic,
		AckDeadline:         time.Duration(c.AckDeadline),
		PollInterval:        time.Duration(c.PollInterval),
		Setup:               c.Setup,
		MaxDeliveryAttempts: c.MaxDeliveryAttempts,
		Logger:              log,
	}
}

func (c pubsubConfig) open(ctx context.Context, log *slog.Logger) (sources.Source, error) {
	lib := c.lib(log)
	switch host := os.Getenv("PUBSUB_EMULATOR_HOST"); {
	case host != "":
		log.Info("using the Pub/Sub emulator", "emulator", host)
		if c.CredentialsFile != "" {
			log.Info("source.pubsub.credentials_file is ignored with the emulator")
		}
	case c.CredentialsFile != "":
		lib.ClientOptions = append(lib.ClientOptions, option.WithAuthCredentialsFile(option.ServiceAccount, c.CredentialsFile))
	}
	s, err := gcppubsub.Open(ctx, lib)
	if err != nil {
		return nil, &pubsubError{err}
	}
	return s, nil
}

// pubsubError names the config section in place of the library's prefix.
type pubsubError struct{ err error }

func (e *pubsubError) Error() string {
	return "source.pubsub: " + strings.TrimPrefix(e.err.Error(), "gcppubsub: ")
}

func (e *pubsubError) Unwrap() error { return e.err }
