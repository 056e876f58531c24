package natsjs

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sluicehq/sluice/field"
)

// Embedded is the Config.URL that starts an in-process server.
const Embedded = "embedded"

// Defaults for the zero fields of Config.
const (
	DefaultStream          = "SLUICE"
	DefaultSubject         = "sluice.jobs"
	DefaultConsumer        = "sluice-worker"
	DefaultAckWait         = 30 * time.Second
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultFetchWait       = 5 * time.Second
	DefaultStoreDir        = "./sluice-data"
	DefaultHost            = "127.0.0.1"
	DefaultPort            = 4222
	// RandomPort as Embedded.Port picks a free port.
	RandomPort = -1
)

// Config configures a Source. The zero value with Setup true is a working
// single-machine queue on an embedded server.
type Config struct {
	// URL is the server to connect to (nats://host:port; several separated
	// by commas), or Embedded to start an in-process server (default).
	URL string
	// Embedded configures the in-process server when URL is Embedded.
	Embedded EmbeddedConfig
	// Auth holds the client credentials; they are never logged.
	Auth Auth
	// TLS configures TLS to the server.
	TLS TLS

	// Stream is the stream holding the jobs. Default "SLUICE".
	Stream string
	// Subjects are the stream's subjects. Default ["sluice.jobs"].
	Subjects []string
	// PublishSubject is where Publish sends jobs. Default the first of
	// Subjects; it must not contain wildcards.
	PublishSubject string
	// Consumer is the durable pull consumer every worker shares.
	// Default "sluice-worker".
	Consumer string
	// Setup creates the stream, the dead-letter stream and the consumer,
	// or updates them to this configuration. Without it they must exist.
	Setup bool

	// AckWait is how long a delivered job may stay unsettled (and not
	// extended with InProgress) before it is delivered again. Default 30s.
	AckWait time.Duration
	// MaxDeliver caps deliveries of one job; 0 means no limit (default).
	MaxDeliver int
	// Backoff, when set, replaces AckWait with an ack wait per delivery:
	// the n-th delivery of a job is redelivered Backoff[n-1] after it was
	// sent if not settled (the last value repeats). It needs MaxDeliver 0
	// or >= len(Backoff).
	Backoff []time.Duration
	// MaxAckPending caps the jobs delivered and not yet settled across all
	// workers; 0 means the server's default (1000).
	MaxAckPending int
	// DuplicateWindow is how long the stream remembers a Nats-Msg-Id, so a
	// second publish of the same job id is dropped. Default 2m.
	DuplicateWindow time.Duration
	// AckSync makes Ack, Nak and Term wait for the server's confirmation.
	// Without it (default) they are sent without waiting, as nats.go does;
	// a settlement lost with the connection leads to a redelivery.
	AckSync bool
	// FetchWait is how long Receive waits for a first message before it
	// returns none. Default 5s.
	FetchWait time.Duration

	// DeadLetterSubject is where dead-letter records go. Default: the
	// first subject with its last token replaced by "dead"
	// (sluice.jobs → sluice.dead).
	DeadLetterSubject string
	// DeadLetterStream holds the dead-letter records; Setup creates it.
	// Default Stream + "_DEAD".
	DeadLetterStream string

	// ConnectTimeout bounds the first connection. Default 10s. After
	// that the client reconnects forever, with backoff.
	ConnectTimeout time.Duration
	// Name is the client connection name shown by the server.
	// Default "sluice".
	Name string
}

// EmbeddedConfig configures the in-process server.
type EmbeddedConfig struct {
	// StoreDir holds the server's data. Default "./sluice-data".
	StoreDir string
	// Host is the address to listen on. Default "127.0.0.1".
	Host string
	// Port is the client port. 0 means the default, 4222; RandomPort (-1)
	// picks a free one.
	Port int
}

// Auth holds client credentials. Use one of CredsFile, NKeySeedFile,
// User+Password or Token.
type Auth struct {
	CredsFile    string // a .creds file (JWT and nkey seed)
	NKeySeedFile string // a file holding an nkey seed (SU...)
	User         string
	Password     string
	Token        string
}

// String hides the secrets.
func (a Auth) String() string {
	var kinds []string
	if a.CredsFile != "" {
		kinds = append(kinds, "creds_file="+a.CredsFile)
	}
	if a.NKeySeedFile != "" {
		kinds = append(kinds, "nkey_seed_file="+a.NKeySeedFile)
	}
	if a.User != "" {
		kinds = append(kinds, "user="+a.User, "password=[REDACTED]")
	}
	if a.Token != "" {
		kinds = append(kinds, "token=[REDACTED]")
	}
	return "{" + strings.Join(kinds, " ") + "}"
}

// GoString hides the secrets from %#v.
func (a Auth) GoString() string { return "jetstream.Auth" + a.String() }

// TLS configures TLS to the server.
type TLS struct {
	CAFile   string // PEM roots to verify the server with
	CertFile string // client certificate (PEM), with KeyFile
	KeyFile  string
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.URL == "" {
		c.URL = Embedded
	}
	if c.Embedded.StoreDir == "" {
		c.Embedded.StoreDir = DefaultStoreDir
	}
	if c.Embedded.Host == "" {
		c.Embedded.Host = DefaultHost
	}
	if c.Embedded.Port == 0 {
		c.Embedded.Port = DefaultPort
	}
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if len(c.Subjects) == 0 {
		c.Subjects = []string{DefaultSubject}
	}
	if c.PublishSubject == "" {
		c.PublishSubject = c.Subjects[0]
	}
	if c.Consumer == "" {
		c.Consumer = DefaultConsumer
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.FetchWait == 0 {
		c.FetchWait = DefaultFetchWait
	}
	if c.DeadLetterSubject == "" {
		c.DeadLetterSubject = DeadLetterSubjectFor(c.Subjects[0])
	}
	if c.DeadLetterStream == "" {
		c.DeadLetterStream = c.Stream + "_DEAD"
	}
	if c.ConnectTimeout == 0 {
		c.ConnectTimeout = 10 * time.Second
	}
	if c.Name == "" {
		c.Name = "sluice"
	}
	return c
}

// DeadLetterSubjectFor returns the default dead-letter subject for a stream
// subject: its last token replaced by "dead" (sluice.jobs → sluice.dead,
// jobs → jobs.dead).
func DeadLetterSubjectFor(subject string) string {
	i := strings.LastIndexByte(subject, '.')
	if i < 0 {
		return subject + ".dead"
	}
	return subject[:i] + ".dead"
}

// Validate reports every invalid field, after defaults are applied, each as
// a *field.Error named as in the config file's source.jetstream section.
func (c Config) Validate() error {
	c = c.withDefaults()
	var errs []error
	bad := func(name, format string, args ...any) {
		errs = append(errs, field.Invalid(name, format, args...))
	}
	if c.URL == Embedded {
		if c.Embedded.Port < RandomPort || c.Embedded.Port > 65535 {
			bad("embedded.port", "must be -1 (random), 0 (default 4222) or a port number, got %d", c.Embedded.Port)
		}
	} else if !strings.Contains(c.URL, "://") && !strings.Contains(c.URL, ":") {
		bad("url", "must be %q or a nats://host:port URL, got %q", Embedded, RedactURL(c.URL))
	} else if err := CheckURL(c.URL); err != nil {
		bad("url", "%v", err)
	}
	c.validateNames(bad)
	c.validateSubjects(bad)
	c.validateDurations(bad)
	n := 0
	for _, set := range []bool{c.Auth.CredsFile != "", c.Auth.NKeySeedFile != "", c.Auth.User != "" || c.Auth.Password != "", c.Auth.Token != ""} {
		if set {
			n++
		}
	}
	if n > 1 {
		bad("auth", "set only one of creds_file, nkey_seed_file, user/password, token")
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		bad("tls", "cert_file and key_file go together")
	}
	return errors.Join(errs...)
}

type badFunc func(name, format string, args ...any)

func (c Config) validateNames(bad badFunc) {
	for _, f := range []struct{ name, v string }{
		{"stream", c.Stream}, {"consumer", c.Consumer}, {"dead_letter_stream", c.DeadLetterStream},
	} {
		if err := checkName(f.v); err != nil {
			bad(f.name, "%v", err)
		}
	}
	if c.DeadLetterStream == c.Stream {
		bad("dead_letter_stream", "must differ from stream %q", c.Stream)
	}
}

func (c Config) validateSubjects(bad badFunc) {
	for i, s := range c.Subjects {
		if err := checkSubject(s, true); err != nil {
			bad(fmt.Sprintf("subjects[%d]", i), "%v", err)
		}
	}
	if err := checkSubject(c.PublishSubject, false); err != nil {
		bad("publish_subject", "%v", err)
	} else {
		covered := false
		for _, s := range c.Subjects {
			covered = covered || subjectMatches(s, c.PublishSubject)
		}
		if !covered {
			bad("publish_subject", "%q is not matched by the stream subjects %q", c.PublishSubject, c.Subjects)
		}
	}
	if err := checkSubject(c.DeadLetterSubject, false); err != nil {
		bad("dead_letter_subject", "%v", err)
		return
	}
	for _, s := range c.Subjects {
		if subjectMatches(s, c.DeadLetterSubject) {
			bad("dead_letter_subject", "%q is matched by the stream subject %q; dead letters would be queued as jobs", c.DeadLetterSubject, s)
			break
		}
	}
}

func (c Config) validateDurations(bad badFunc) {
	if c.AckWait < time.Second {
		bad("ack_wait", "must be >= 1s, got %s", c.AckWait)
	}
	if c.MaxDeliver < 0 {
		bad("max_deliver", "must be >= 0 (0: no limit), got %d", c.MaxDeliver)
	}
	if c.MaxAckPending < 0 {
		bad("max_ack_pending", "must be >= 0, got %d", c.MaxAckPending)
	}
	if c.DuplicateWindow < 0 {
		bad("duplicate_window", "must be >= 0, got %s", c.DuplicateWindow)
	}
	if c.FetchWait < 10*time.Millisecond {
		bad("fetch_wait", "must be >= 10ms, got %s", c.FetchWait)
	}
	if c.ConnectTimeout < 0 {
		bad("connect_timeout", "must be >= 0, got %s", c.ConnectTimeout)
	}
	for i, d := range c.Backoff {
		if d < time.Second {
			bad(fmt.Sprintf("backoff[%d]", i), "must be >= 1s, got %s", d)
		}
	}
	if len(c.Backoff) > 0 && c.MaxDeliver > 0 && c.MaxDeliver < len(c.Backoff) {
		bad("max_deliver", "must be 0 or at least the %d backoff values, got %d", len(c.Backoff), c.MaxDeliver)
	}
}

func checkName(s string) error {
	if s == "" || strings.ContainsAny(s, " \t\r\n.*>/\\") {
		return fmt.Errorf("must be a non-empty name without spaces, '.', '*', '>', '/' or '\\', got %q", s)
	}
	return nil
}

func checkSubject(s string, wildcards bool) error {
	if s == "" || strings.ContainsAny(s, " \t\r\n") {
		return fmt.Errorf("must be a non-empty subject without spaces, got %q", s)
	}
	for i, tok := range strings.Split(s, ".") {
		switch {
		case tok == "":
			return fmt.Errorf("empty token in subject %q", s)
		case tok == "*" || (tok == ">" && i == strings.Count(s, ".")):
			if !wildcards {
				return fmt.Errorf("must not contain wildcards, got %q", s)
			}
		case strings.ContainsAny(tok, "*>"):
			return fmt.Errorf("bad wildcard in subject %q", s)
		}
	}
	return nil
}

// subjectMatches reports whether the subject filter matches the literal
// subject.
func subjectMatches(filter, subject string) bool {
	f, s := strings.Split(filter, "."), strings.Split(subject, ".")
	for i, tok := range f {
		if tok == ">" {
			return len(s) > i
		}
		if i >= len(s) || (tok != "*" && tok != s[i]) {
			return false
		}
	}
	return len(f) == len(s)
}

// ErrPortInUse matches (errors.Is) the error of an embedded server whose
// port is taken; the error itself is a *PortInUseError.
var ErrPortInUse = errors.New("jetstream: embedded server port in use")

// PortInUseError reports that the embedded server cannot listen on Addr.
type PortInUseError struct {
	Addr string // host:port
	Err  error  // the listen error
}

func (e *PortInUseError) Error() string {
	return fmt.Sprintf("jetstream: embedded.port: %s is in use (%v); set embedded.port to a free port, or -1 for a random one", e.Addr, e.Err)
}

func (e *PortInUseError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrPortInUse) hold.
func (e *PortInUseError) Is(target error) bool { return target == ErrPortInUse }
