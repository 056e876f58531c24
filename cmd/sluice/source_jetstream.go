package main

import (
	"context"
	"errors"
	"log/slog"

	"github.com/sluicehq/sluice/sources"
)

// jetstreamConfig is the `source.jetstream:` section of the config file.
type jetstreamConfig struct{}

func defaultJetstreamConfig() jetstreamConfig { return jetstreamConfig{} }

func (c jetstreamConfig) validate(path string) error { return nil }

func (c jetstreamConfig) open(ctx context.Context, log *slog.Logger) (sources.Source, error) {
	return nil, errors.New("source.jetstream: not available in this build")
}
