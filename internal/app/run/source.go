package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"google.golang.org/api/option"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/gcppubsub"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// OpenSource connects the configured source. Its errors name the config
// section they come from.
func OpenSource(ctx context.Context, c config.Source, log *slog.Logger) (sources.Source, error) {
	switch c.Kind {
	case config.SourceJetStream:
		s, err := OpenJetStream(ctx, c.JetStream, log)
		if err != nil {
			return nil, err
		}
		return s, nil
	case config.SourcePubSub:
		return openPubSub(ctx, c.PubSub, log)
	default:
		return nil, fmt.Errorf("source.kind: must be %q or %q, got %q", config.SourceJetStream, config.SourcePubSub, c.Kind)
	}
}

// OpenJetStream opens the JetStream source with its concrete type, for the
// commands that use more than sources.Source (its connection, its dead
// letters).
func OpenJetStream(ctx context.Context, c config.JetStream, log *slog.Logger) (*natsjs.Source, error) {
	lib, err := c.LibWithSecrets()
	if err != nil {
		return nil, err
	}
	s, err := natsjs.Open(ctx, lib, log)
	var inUse *natsjs.PortInUseError
	switch {
	case errors.As(err, &inUse):
		return nil, fmt.Errorf("source.jetstream.embedded.port: %s is in use (%w); choose a free port in source.jetstream.embedded.port (-1 picks a random one; run, enqueue and status take it as --nats-port), or, if it is a NATS server you want to use, point source.jetstream.url at it (--nats-url)", inUse.Addr, inUse.Err)
	case err != nil:
		return nil, &sectionError{section: "source.jetstream", prefix: "jetstream: ", err: err}
	}
	return s, nil
}

func openPubSub(ctx context.Context, c config.PubSub, log *slog.Logger) (sources.Source, error) {
	lib := c.Lib()
	lib.Logger = log
	if host := os.Getenv("PUBSUB_EMULATOR_HOST"); host != "" {
		log.Info("using the Pub/Sub emulator", "emulator", host)
		if c.CredentialsFile != "" {
			log.Info("source.pubsub.credentials_file is ignored with the emulator")
		}
	}
	lib.ClientOptions = append(lib.ClientOptions, pubsubCredentials(c)...)
	s, err := gcppubsub.Open(ctx, lib)
	if err != nil {
		return nil, &sectionError{section: "source.pubsub", prefix: "gcppubsub: ", err: err}
	}
	return s, nil
}

// pubsubCredentials are the client options for source.pubsub's
// credentials: its credentials_file, unless PUBSUB_EMULATOR_HOST sends
// every call to the emulator; none for Application Default Credentials.
func pubsubCredentials(c config.PubSub) []option.ClientOption {
	if os.Getenv("PUBSUB_EMULATOR_HOST") != "" || c.CredentialsFile == "" {
		return nil
	}
	return []option.ClientOption{option.WithAuthCredentialsFile(option.ServiceAccount, c.CredentialsFile)}
}

// sectionError names the config section a library error comes from, in
// place of the library's own prefix.
type sectionError struct {
	section, prefix string
	err             error
}

func (e *sectionError) Error() string {
	return e.section + ": " + strings.TrimPrefix(e.err.Error(), e.prefix)
}

func (e *sectionError) Unwrap() error { return e.err }
