package config

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/sources/gcppubsub"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// Source kinds accepted in source.kind.
const (
	SourceJetStream = "jetstream"
	SourcePubSub    = "pubsub"
)

// Source is the `source:` section.
type Source struct {
	Kind      string    `yaml:"kind"` // jetstream (default) or pubsub
	JetStream JetStream `yaml:"jetstream"`
	PubSub    PubSub    `yaml:"pubsub"`
}

func defaultSource() Source {
	return Source{Kind: SourceJetStream, JetStream: defaultJetStream(), PubSub: defaultPubSub()}
}

// Check checks the section of the configured kind; paths start with
// "source.".
func (c Source) Check() error {
	switch c.Kind {
	case SourceJetStream:
		return field.Under("source.jetstream", c.JetStream.check())
	case SourcePubSub:
		return field.Under("source.pubsub", c.PubSub.check())
	}
	return field.Invalid("source.kind", "must be %q or %q, got %q", SourceJetStream, SourcePubSub, c.Kind)
}

// JetStream is the `source.jetstream:` section. See sources/natsjs.Config
// for what each field does.
type JetStream struct {
	URL               string          `yaml:"url"` // "embedded" or nats://host:port[,...]
	Embedded          EmbeddedNATS    `yaml:"embedded"`
	Stream            string          `yaml:"stream"`
	Subjects          []string        `yaml:"subjects"`
	PublishSubject    string          `yaml:"publish_subject"`
	Consumer          string          `yaml:"consumer"`
	Setup             bool            `yaml:"setup"`
	AckWait           time.Duration   `yaml:"ack_wait"`
	MaxDeliver        int             `yaml:"max_deliver"`
	Backoff           []time.Duration `yaml:"backoff"`
	MaxAckPending     int             `yaml:"max_ack_pending"`
	DuplicateWindow   time.Duration   `yaml:"duplicate_window"`
	AckSync           bool            `yaml:"ack_sync"`
	FetchWait         time.Duration   `yaml:"fetch_wait"`
	DeadLetterSubject string          `yaml:"dead_letter_subject"`
	DeadLetterStream  string          `yaml:"dead_letter_stream"`
	ConnectTimeout    time.Duration   `yaml:"connect_timeout"`
	Auth              JetStreamAuth   `yaml:"auth"`
	TLS               JetStreamTLS    `yaml:"tls"`
	Name              string          `yaml:"name"`
}

// EmbeddedNATS is `source.jetstream.embedded:`.
type EmbeddedNATS struct {
	StoreDir string `yaml:"store_dir"`
	Host     string `yaml:"host"`
	Port     int    `yaml:"port"` // 0 or -1: a random free port
}

// JetStreamAuth is `source.jetstream.auth:`. Secrets come from a file
// (password_file, token_file) or from the environment through ${VAR}; they
// are never printed.
type JetStreamAuth struct {
	CredsFile    string `yaml:"creds_file"`
	NKeySeedFile string `yaml:"nkey_seed_file"`
	User         string `yaml:"user"`
	Password     string `yaml:"password"`
	PasswordFile string `yaml:"password_file"`
	Token        string `yaml:"token"`
	TokenFile    string `yaml:"token_file"`
}

// JetStreamTLS is `source.jetstream.tls:`.
type JetStreamTLS struct {
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
}

func defaultJetStream() JetStream {
	return JetStream{
		URL:             natsjs.Embedded,
		Embedded:        EmbeddedNATS{StoreDir: natsjs.DefaultStoreDir, Host: natsjs.DefaultHost, Port: natsjs.DefaultPort},
		Stream:          natsjs.DefaultStream,
		Subjects:        []string{natsjs.DefaultSubject},
		Consumer:        natsjs.DefaultConsumer,
		Setup:           true,
		AckWait:         natsjs.DefaultAckWait,
		DuplicateWindow: natsjs.DefaultDuplicateWindow,
		FetchWait:       natsjs.DefaultFetchWait,
		ConnectTimeout:  10 * time.Second,
		Name:            "sluice",
	}
}

// check holds the rules of the file's own keys (the secret files) and runs
// the library's Validate; paths are relative to the section.
func (c JetStream) check() error {
	var errs []error
	a := c.Auth
	if a.Password != "" && a.PasswordFile != "" {
		errs = append(errs, field.Invalid("auth.password_file", "set password or password_file, not both"))
	}
	if a.Token != "" && a.TokenFile != "" {
		errs = append(errs, field.Invalid("auth.token_file", "set token or token_file, not both"))
	}
	if a.PasswordFile != "" && a.User == "" {
		errs = append(errs, field.Invalid("auth.user", "required with password_file"))
	}
	for _, f := range []struct{ name, file string }{
		{"auth.creds_file", a.CredsFile}, {"auth.nkey_seed_file", a.NKeySeedFile},
		{"auth.password_file", a.PasswordFile}, {"auth.token_file", a.TokenFile},
		{"tls.ca_file", c.TLS.CAFile}, {"tls.cert_file", c.TLS.CertFile}, {"tls.key_file", c.TLS.KeyFile},
	} {
		if f.file == "" {
			continue
		}
		if _, err := os.Stat(f.file); err != nil {
			errs = append(errs, field.Invalid(f.name, "%v", err))
		}
	}
	lib := c.Lib()
	// Placeholders stand in for secrets read from files at open.
	if a.PasswordFile != "" {
		lib.Auth.Password = "file"
	}
	if a.TokenFile != "" {
		lib.Auth.Token = "file"
	}
	errs = append(errs, lib.Validate())
	return errors.Join(errs...)
}

// Lib copies the section into the library's Config, without the secrets
// kept in files (LibWithSecrets reads them).
func (c JetStream) Lib() natsjs.Config {
	port := c.Embedded.Port
	if port == 0 {
		port = natsjs.RandomPort
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
		AckWait:           c.AckWait,
		MaxDeliver:        c.MaxDeliver,
		Backoff:           slices.Clone(c.Backoff),
		MaxAckPending:     c.MaxAckPending,
		DuplicateWindow:   c.DuplicateWindow,
		AckSync:           c.AckSync,
		FetchWait:         c.FetchWait,
		DeadLetterSubject: c.DeadLetterSubject,
		DeadLetterStream:  c.DeadLetterStream,
		ConnectTimeout:    c.ConnectTimeout,
		Name:              c.Name,
	}
}

// LibWithSecrets is Lib with the secrets read from their files.
func (c JetStream) LibWithSecrets() (natsjs.Config, error) {
	lib := c.Lib()
	read := func(name, path string) (string, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			// The error names the file, never its content.
			return "", fmt.Errorf("source.jetstream.auth.%s: %w", name, err)
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

// PubSub is the `source.pubsub:` section. See sources/gcppubsub.Config for
// what each field does.
type PubSub struct {
	Project             string        `yaml:"project"`
	Subscription        string        `yaml:"subscription"`
	Topic               string        `yaml:"topic"`
	DeadLetterTopic     string        `yaml:"dead_letter_topic"`
	AckDeadline         time.Duration `yaml:"ack_deadline"`
	PollInterval        time.Duration `yaml:"poll_interval"`
	Setup               bool          `yaml:"setup"`
	MaxDeliveryAttempts int           `yaml:"max_delivery_attempts"`
	// CredentialsFile is a service account key file; empty: Application
	// Default Credentials. Ignored when PUBSUB_EMULATOR_HOST is set.
	CredentialsFile string `yaml:"credentials_file"`
}

// Defaults of the section that are not the library's.
const (
	DefaultPubSubSubscription = "sluice-jobs"
	DefaultPubSubTopic        = "sluice-jobs"
)

func defaultPubSub() PubSub {
	return PubSub{
		Subscription: DefaultPubSubSubscription,
		Topic:        DefaultPubSubTopic,
		AckDeadline:  gcppubsub.DefaultAckDeadline,
		PollInterval: gcppubsub.DefaultPollInterval,
	}
}

// check holds the rules of the file's own keys and runs the library's
// Validate; paths are relative to the section.
func (c PubSub) check() error {
	var errs []error
	if c.PollInterval == 0 {
		// Zero would mean the library default; here it is a mistake.
		errs = append(errs, field.Invalid("poll_interval", "must be > 0, got 0s"))
	}
	if c.CredentialsFile != "" {
		if _, err := os.Stat(c.CredentialsFile); err != nil {
			errs = append(errs, field.Invalid("credentials_file", "%v", err))
		}
	}
	errs = append(errs, c.Lib().Validate())
	return errors.Join(errs...)
}

// Lib copies the section into the library's Config (no logger, no client
// options).
func (c PubSub) Lib() gcppubsub.Config {
	return gcppubsub.Config{
		Project:             c.Project,
		Subscription:        c.Subscription,
		Topic:               c.Topic,
		DeadLetterTopic:     c.DeadLetterTopic,
		AckDeadline:         c.AckDeadline,
		PollInterval:        c.PollInterval,
		Setup:               c.Setup,
		MaxDeliveryAttempts: c.MaxDeliveryAttempts,
	}
}
