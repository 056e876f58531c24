package main

import (
	"context"
	"log/slog"
	"os"
	"strings"

	"google.golang.org/api/option"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/gcppubsub"
)

func openPubSub(ctx context.Context, c config.PubSub, log *slog.Logger) (sources.Source, error) {
	lib := c.Lib()
	lib.Logger = log
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
