package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/sources"
)

// open connects the configured source.
func openSource(ctx context.Context, c config.Source, log *slog.Logger) (sources.Source, error) {
	switch c.Kind {
	case config.SourceJetStream:
		return openJetStream(ctx, c.JetStream, log)
	case config.SourcePubSub:
		return openPubSub(ctx, c.PubSub, log)
	default:
		return nil, fmt.Errorf("source.kind: must be %q or %q, got %q", config.SourceJetStream, config.SourcePubSub, c.Kind)
	}
}
