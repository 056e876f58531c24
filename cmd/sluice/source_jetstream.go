package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
)

func openJetStream(ctx context.Context, c config.JetStream, log *slog.Logger) (sources.Source, error) {
	s, err := openNATSJS(ctx, c, log)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openNATSJS opens the source with its concrete type, for the commands
// that use more than sources.Source.
func openNATSJS(ctx context.Context, c config.JetStream, log *slog.Logger) (*natsjs.Source, error) {
	lib, err := c.LibWithSecrets()
	if err != nil {
		return nil, err
	}
	s, err := natsjs.Open(ctx, lib, log)
	var inUse *natsjs.PortInUseError
	switch {
	case errors.As(err, &inUse):
		return nil, fmt.Errorf("source.jetstream.embedded.port: %s is in use (%w); choose a free port with --nats-port or source.jetstream.embedded.port (-1 picks a random one), or, if it is a NATS server you want to use, point --nats-url or source.jetstream.url at it", inUse.Addr, inUse.Err)
	case err != nil:
		return nil, &fieldError{field: "source.jetstream", err: err}
	}
	return s, nil
}

// fieldError prefixes a library error with the config section it comes
// from, in place of the library's own prefix.
type fieldError struct {
	field string
	err   error
}

func (e *fieldError) Error() string {
	return e.field + ": " + strings.TrimPrefix(e.err.Error(), "jetstream: ")
}

func (e *fieldError) Unwrap() error { return e.err }
