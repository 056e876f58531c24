package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// jetstreamConfig is the `source.jetstream:` section of the config file.
// See sources/natsjs.Config for what each field does.
type jetstreamConfig struct {
	URL               string              `yaml:"url"` // "embedded" or nats://host:port[,...]
	Embedded          embeddedNATSConfig  `yaml:"embedded"`
	Stream            string              `yaml:"stream"`
	Subjects          []string            `yaml:"subjects"`
	PublishSubject    string              `yaml:"publish_subject"`
	Consumer          string              `yaml:"consumer"`
	Setup             bool                `yaml:"setup"`
	AckWait           limiterDuration     `yaml:"ack_wait"`
	MaxDeliver        int                 `yaml:"max_deliver"`
	Backoff           []limiterDuration   `yaml:"backoff"`
	MaxAckPending     int                 `yaml:"max_ack_pending"`
	DuplicateWindow   limiterDuration     `yaml:"duplicate_window"`
	AckSync           bool                `yaml:"ack_sync"`
	FetchWait         limiterDuration     `yaml:"fetch_wait"`
	DeadLetterSubject string              `yaml:"dead_letter_subject"`
	DeadLetterStream  string              `yaml:"dead_letter_stream"`
	ConnectTimeout    limiterDuration     `yaml:"connect_timeout"`
	Auth              jetstreamAuthConfig `yaml:"auth"`
	TLS               jetstreamTLSConfig  `yaml:"tls"`
	Name              string              `yaml:"name"`
}

// embeddedNATSConfig is `source.jetstream.embedded:`.
type embeddedNATSConfig struct {
	StoreDir string `yaml:"store_dir"`
	Host     string `yaml:"host"`
	Port     int    `yaml:"port"` // 0 or -1: a random free port
}

// jetstreamAuthConfig is `source.jetstream.auth:`. Secrets come from a
// file (password_file, token_file) or from the environment through
// ${VAR}; they are never printed.
type jetstreamAuthConfig struct {
	CredsFile    string `yaml:"creds_file"`
	NKeySeedFile string `yaml:"nkey_seed_file"`
	User         string `yaml:"user"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	Token        string `yaml:"token"`
	TokenFile    string `yaml:"token_file"`
}

// jetstreamTLSConfig is `source.jetstream.tls:`.
type jetstreamTLSConfig struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

func defaultJetstreamConfig() jetstreamConfig {
	return jetstreamConfig{
		URL: natsjs.Embedded,
		Embedded: embeddedNATSConfig{
			StoreDir: natsjs.DefaultStoreDir,
			Host:     natsjs.DefaultHost,
			Port:     natsjs.DefaultPort,
		},
		Stream:          natsjs.DefaultStream,
		Subjects:        []string{natsjs.DefaultSubject},
		Consumer:        natsjs.DefaultConsumer,
		Setup:           true,
		AckWait:         limiterDuration(natsjs.DefaultAckWait),
		DuplicateWindow: limiterDuration(natsjs.DefaultDuplicateWindow),
		FetchWait:       limiterDuration(natsjs.DefaultFetchWait),
		ConnectTimeout:  limiterDuration(10 * time.Second),
		Name:            "sluice",
	}
}

// validate checks the section; each line of the error is "path.field:
// message".
func (c jetstreamConfig) validate(path string) error {
	var errs []error
	a := c.Auth
	if a.Password != "" && a.PasswordFile != "" {
		errs = append(errs, fmt.Errorf("%s.auth.password_file: set password or password_file, not both", path))
	}
	if a.Token != "" && a.TokenFile != "" {
		errs = append(errs, fmt.Errorf("%s.auth.token_file: set token or token_file, not both", path))
	}
	if a.PasswordFile != "" && a.User == "" {
		errs = append(errs, fmt.Errorf("%s.auth.user: required with password_file", path))
	}
	for _, f := range []struct{ field, file string }{
		{"auth.creds_file", a.CredsFile}, {"auth.nkey_seed_file", a.NKeySeedFile},
		{"auth.password_file", a.PasswordFile}, {"auth.token_file", a.TokenFile},
		{"tls.ca_file", c.TLS.CAFile}, {"tls.cert_file", c.TLS.CertFile}, {"tls.key_file", c.TLS.KeyFile},
	} {
		if f.file == "" {
			continue
		}
		if _, err := os.Stat(f.file); err != nil {
			errs = append(errs, fmt.Errorf("%s.%s: %v", path, f.field, err))
		}
	}
	lib := c.lib()
	// Placeholders stand in for secrets read from files at open.
	if a.PasswordFile != "" {
		lib.Auth.Password = "file"
	}
	if a.TokenFile != "" {
		lib.Auth.Token = "file"
	}
	if err := lib.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("%s.%s", path, strings.TrimPrefix(err.Error(), "jetstream: ")))
	}
	return errors.Join(errs...)
}

// lib copies the section into the library's Config, without the secrets
// kept in files.
func (c jetstreamConfig) lib() natsjs.Config {
	port := c.Embedded.Port
	if port == 0 {
		port = natsjs.RandomPort
	}
	backoff := make([]time.Duration, len(c.Backoff))
	for i, d := range c.Backoff {
		backoff[i] = time.Duration(d)
	}
	return natsjs.Config{
		URL:      c.URL,
		Embedded: natsjs.EmbeddedConfig{StoreDir: c.Embedded.StoreDir, Host: c.Embedded.Host, Port: port},
		Auth: natsjs.Auth{
			CredsFile:    c.Auth.CredsFile,
			NKeySeedFile: c.Auth.NKeySeedFile,
			User:         c.Auth.User,
			Password:     c.Auth.Password,
			Token:        c.Auth.Token,
		},
		TLS:               natsjs.TLS{CAFile: c.TLS.CAFile, CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile},
		Stream:            c.Stream,
		Subjects:          slices.Clone(c.Subjects),
		PublishSubject:    c.PublishSubject,
		Consumer:          c.Consumer,
		Setup:             c.Setup,
		AckWait:           time.Duration(c.AckWait),
		MaxDeliver:        c.MaxDeliver,
		Backoff:           backoff,
		MaxAckPending:     c.MaxAckPending,
		DuplicateWindow:   time.Duration(c.DuplicateWindow),
		AckSync:           c.AckSync,
		FetchWait:         time.Duration(c.FetchWait),
		DeadLetterSubject: c.DeadLetterSubject,
		DeadLetterStream:  c.DeadLetterStream,
		ConnectTimeout:    time.Duration(c.ConnectTimeout),
		Name:              c.Name,
	}
}

// libWithSecrets is lib with the secrets read from their files.
func (c jetstreamConfig) libWithSecrets() (natsjs.Config, error) {
	lib := c.lib()
	read := func(field, path string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			// The error names the file, never its content.
			return "", fmt.Errorf("source.jetstream.auth.%s: %w", field, err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	var err error
	if c.Auth.PasswordFile != "" {
		if lib.Auth.Password, err = read("password_file", c.Auth.PasswordFile); err != nil {
			return lib, err
		}
	}
	if c.Auth.TokenFile != "" {
		if lib.Auth.Token, err = read("token_file", c.Auth.TokenFile); err != nil {
			return lib, err
		}
	}
	return lib, nil
}

func (c jetstreamConfig) open(ctx context.Context, log *slog.Logger) (sources.Source, error) {
	s, err := c.openJetStream(ctx, log)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// openJetStream opens the source with its concrete type, for the commands
// that use more than sources.Source.
func (c jetstreamConfig) openJetStream(ctx context.Context, log *slog.Logger) (*natsjs.Source, error) {
	lib, err := c.libWithSecrets()
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
