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
	Kind      string    `yaml:"kind" enum:"jetstream,pubsub" doc:"jetstream (NATS JetStream; an embedded server unless jetstream.url names one) or pubsub (Google Cloud Pub/Sub)."`
	JetStream JetStream `yaml:"jetstream" doc:"NATS JetStream (kind jetstream)."`
	PubSub    PubSub    `yaml:"pubsub" doc:"Google Cloud Pub/Sub (kind pubsub). PUBSUB_EMULATOR_HOST is honoured."`
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
	URL               string          `yaml:"url" doc:"embedded starts a NATS server with JetStream inside this process (a second sluice process on the same store_dir, such as sluice enqueue, finds and uses it); or nats://host:port[,...]. NATS_URL replaces it."`
	Embedded          EmbeddedNATS    `yaml:"embedded" doc:"The embedded server (url embedded)."`
	Stream            string          `yaml:"stream" doc:"The stream that holds the jobs."`
	Subjects          []string        `yaml:"subjects" doc:"The stream's subjects."`
	PublishSubject    string          `yaml:"publish_subject" doc:"Where sluice enqueue publishes. Empty: the first of subjects."`
	Consumer          string          `yaml:"consumer" doc:"The durable pull consumer every worker shares."`
	Setup             bool            `yaml:"setup" doc:"Create or update the stream, the dead-letter stream and the consumer."`
	AckWait           time.Duration   `yaml:"ack_wait" doc:"A delivered job not settled within ack_wait is delivered again; the worker extends it every ack_wait/3 while the job waits."`
	MaxDeliver        int             `yaml:"max_deliver" doc:"Most deliveries of one job, 0 for no limit (the worker dead-letters a job at worker.max_deliveries)."`
	Backoff           []time.Duration `yaml:"backoff" doc:"Per-delivery ack waits replacing ack_wait, such as [30s, 1m, 5m]."`
	MaxAckPending     int             `yaml:"max_ack_pending" doc:"Most jobs delivered and unsettled across all workers; 0: the server's default (1000)."`
	DuplicateWindow   time.Duration   `yaml:"duplicate_window" doc:"A job id published twice within this window is stored once."`
	AckSync           bool            `yaml:"ack_sync" doc:"Wait for the server to confirm each ack, nak and term."`
	FetchWait         time.Duration   `yaml:"fetch_wait" doc:"How long one fetch waits for a first job."`
	DeadLetterSubject string          `yaml:"dead_letter_subject" doc:"Where dead letters go with dead_letters.kind nats. Empty: the first subject with its last token replaced by dead (sluice.dead)."`
	DeadLetterStream  string          `yaml:"dead_letter_stream" doc:"The stream that stores the dead letters. Empty: the job stream's name followed by _DEAD (SLUICE_DEAD)."`
	ConnectTimeout    time.Duration   `yaml:"connect_timeout" doc:"How long connecting to the server may take."`
	Auth              JetStreamAuth   `yaml:"auth" doc:"Credentials: one of creds_file, nkey_seed_file, user with password (or password_file), token (or token_file). Never printed; use ${VAR} or the password_file and token_file options rather than writing secrets in the file."`
	TLS               JetStreamTLS    `yaml:"tls" doc:"TLS to the server: a CA file, and a client certificate and key."`
	Name              string          `yaml:"name" doc:"The connection name the server shows."`
}

// EmbeddedNATS is `source.jetstream.embedded:`.
type EmbeddedNATS struct {
	StoreDir string `yaml:"store_dir" doc:"Where the embedded server keeps the queue."`
	Host     string `yaml:"host" doc:"The address the embedded server listens on."`
	Port     int    `yaml:"port" doc:"The embedded server's client port; 0 or -1: a free port."`
}

// JetStreamAuth is `source.jetstream.auth:`. Secrets come from a file
// (password_file, token_file) or from the environment through ${VAR}; they
// are never printed.
type JetStreamAuth struct {
	CredsFile    string `yaml:"creds_file" doc:"A NATS credentials file (a user JWT and its NKey seed)."`
	NKeySeedFile string `yaml:"nkey_seed_file" doc:"A file holding an NKey seed."`
	User         string `yaml:"user" doc:"The user name, with password or password_file."`
	Password     string `yaml:"password" doc:"The user's password; secret. Prefer ${VAR} or password_file."`
	PasswordFile string `yaml:"password_file" doc:"A file holding the user's password."`
	Token        string `yaml:"token" doc:"An authentication token; secret. Prefer ${VAR} or token_file."`
	TokenFile    string `yaml:"token_file" doc:"A file holding the authentication token."`
}

// JetStreamTLS is `source.jetstream.tls:`.
type JetStreamTLS struct {
	CAFile   string `yaml:"ca_file" doc:"The CA certificates (PEM) that the server's certificate is checked against. Empty: the system's."`
	CertFile string `yaml:"cert_file" doc:"A client certificate (PEM), with key_file."`
	KeyFile  string `yaml:"key_file" doc:"The client certificate's private key (PEM)."`
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
	Project             string        `yaml:"project" doc:"The Google Cloud project; required with kind pubsub. GOOGLE_CLOUD_PROJECT replaces it."`
	Subscription        string        `yaml:"subscription" doc:"The subscription the workers receive from."`
	Topic               string        `yaml:"topic" doc:"Where sluice enqueue publishes."`
	DeadLetterTopic     string        `yaml:"dead_letter_topic" doc:"Receives a record of every message the source terminates (data, attributes, reason, delivery count). Empty: no record from the source."`
	AckDeadline         time.Duration `yaml:"ack_deadline" doc:"The lease of a received message, whole seconds from 1s to 10m; the worker extends it every third."`
	PollInterval        time.Duration `yaml:"poll_interval" doc:"How long one receive waits for messages before it returns none."`
	Setup               bool          `yaml:"setup" doc:"Create the topic, the dead-letter topic and the subscription when missing, and the subscriptions that keep pubsub results and dead letters."`
	MaxDeliveryAttempts int           `yaml:"max_delivery_attempts" doc:"With setup, give a new subscription a dead-letter policy to dead_letter_topic after this many deliveries (5 to 100; 0: none)."`
	// CredentialsFile is a service account key file; empty: Application
	// Default Credentials. Ignored when PUBSUB_EMULATOR_HOST is set.
	CredentialsFile string `yaml:"credentials_file" doc:"A service account key file. Empty: Application Default Credentials. Ignored when PUBSUB_EMULATOR_HOST is set."`
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
