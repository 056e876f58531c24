package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sluicehq/sluice/sources"
)

// pubsubConfig is the `source.pubsub:` section of the config file.
type pubsubConfig struct{}

func defaultPubsubConfig() pubsubConfig { return pubsubConfig{} }

func (c pubsubConfig) validate(path string) error { return nil }

func (c pubsubConfig) open(ctx context.Context, log *slog.Logger) (sources.Source, error) {
	return nil, errors.New("source.pubsub: not available in this build")
}
