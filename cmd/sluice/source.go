package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice/sources"
)

// Source kinds accepted in source.kind.
const (
	sourceJetStream = "jetstream"
	sourcePubSub    = "pubsub"
)

// sourceConfig is the `source:` section of the config file.
type sourceConfig struct {
	Kind      string          `yaml:"kind"` // jetstream (default) or pubsub
	JetStream jetstreamConfig `yaml:"jetstream"`
	PubSub    pubsubConfig    `yaml:"pubsub"`
}

func defaultSourceConfig() sourceConfig {
	return sourceConfig{
		Kind:      sourceJetStream,
		JetStream: defaultJetstreamConfig(),
		PubSub:    defaultPubsubConfig(),
	}
}

// validate checks the section; field paths in errors start with "source.".
func (c sourceConfig) validate() error {
	switch c.Kind {
	case sourceJetStream:
		return c.JetStream.validate("source.jetstream")
	case sourcePubSub:
		return c.PubSub.validate("source.pubsub")
	default:
		return fmt.Errorf("source.kind: must be %q or %q, got %q", sourceJetStream, sourcePubSub, c.Kind)
	}
}

// open connects the configured source.
func (c sourceConfig) open(ctx context.Context, log *slog.Logger) (sources.Source, error) {
	switch c.Kind {
	case sourceJetStream:
		return c.JetStream.open(ctx, log)
	case sourcePubSub:
		return c.PubSub.open(ctx, log)
	default:
		return nil, fmt.Errorf("source.kind: must be %q or %q, got %q", sourceJetStream, sourcePubSub, c.Kind)
	}
}
