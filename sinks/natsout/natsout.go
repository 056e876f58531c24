// Package natsout is an output that publishes each record to a NATS
// subject captured by a JetStream stream. A record is confirmed when the
// stream acknowledges it (a publish ack), so the subject must be in a
// stream: name one in Config.Stream and set CreateStream to have New create
// it, or add the subject to it.
//
// Records are deduplicated by key within the stream's duplicate window:
// the message id (Nats-Msg-Id) is "<subject>:<key>", so a record published
// twice (a worker that crashed between publishing and acking) is stored
// once, and a record never collides with the id of the job it is about
// when both share a stream. The key is also sent in the Sluice-Key header.
package natsout

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/sinks"
)

// KeyHeader carries the record's key.
const KeyHeader = "Sluice-Key"

// Defaults for a stream that New creates.
const (
	DefaultReplicas   = 1
	DefaultDuplicates = 2 * time.Minute
)

// Config describes where records go.
type Config struct {
	// Subject records are published to; no wildcards. Required.
	Subject string

	// Stream, when set, is the stream the records must land in: a publish
	// that another stream captures fails.
	Stream string

	// CreateStream makes New create Stream (file storage, limits
	// retention) capturing Subject, or add Subject to Stream's subjects
	// when it exists and does not capture it yet. Requires Stream.
	CreateStream bool

	// Replicas of a created stream; default 1.
	Replicas int
	// MaxAge of a created stream's records; 0 keeps them until removed.
	MaxAge time.Duration
	// Duplicates is a created stream's deduplication window; default 2m.
	Duplicates time.Duration
}

// Validate reports every field that breaks its rule.
func (c Config) Validate() error {
	var errs []error
	if c.Subject == "" {
		errs = append(errs, field.Invalid("subject", "required"))
	} else if !validSubject(c.Subject) {
		errs = append(errs, field.Invalid("subject", "must be a subject without wildcards or spaces, got %q", c.Subject))
	}
	if c.Stream != "" && strings.ContainsAny(c.Stream, " \t\r\n.*>/\\") {
		errs = append(errs, field.Invalid("stream", "must be a name without spaces, '.', '*', '>' or slashes, got %q", c.Stream))
	}
	if c.CreateStream && c.Stream == "" {
		errs = append(errs, field.Invalid("stream", "required when create_stream is set"))
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		errs = append(errs, field.Invalid("replicas", "must be in [1, 5] (0 for the default), got %d", c.Replicas))
	}
	if c.MaxAge < 0 {
		errs = append(errs, field.Invalid("max_age", "must be >= 0, got %v", c.MaxAge))
	}
	if c.Duplicates < 0 {
		errs = append(errs, field.Invalid("duplicates", "must be >= 0, got %v", c.Duplicates))
	}
	return errors.Join(errs...)
}

func validSubject(s string) bool {
	if strings.ContainsAny(s, " \t\r\n*>") {
		return false
	}
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" {
			return false
		}
	}
	return true
}

// Output publishes records to a JetStream subject. It is safe for
// concurrent use.
type Output struct {
	js     jetstream.JetStream
	cfg    Config
	closed atomic.Bool
}

var _ sinks.Output = (*Output)(nil)

// New validates cfg and, with CreateStream, creates or updates the stream.
// The connection behind js stays the caller's.
func New(ctx context.Context, js jetstream.JetStream, cfg Config) (*Output, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("natsout: %w", err)
	}
	if cfg.Replicas == 0 {
		cfg.Replicas = DefaultReplicas
	}
	if cfg.Duplicates == 0 {
		cfg.Duplicates = DefaultDuplicates
	}
	if cfg.CreateStream {
		if err := ensureStream(ctx, js, cfg); err != nil {
			return nil, err
		}
	}
	return &Output{js: js, cfg: cfg}, nil
}

func ensureStream(ctx context.Context, js jetstream.JetStream, cfg Config) error {
	s, err := js.Stream(ctx, cfg.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{
			Name:       cfg.Stream,
			Subjects:   []string{cfg.Subject},
			Storage:    jetstream.FileStorage,
			Retention:  jetstream.LimitsPolicy,
			Replicas:   cfg.Replicas,
			MaxAge:     cfg.MaxAge,
			Duplicates: cfg.Duplicates,
		})
		switch {
		case err == nil:
			return nil
		case !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			return fmt.Errorf("natsout: creating stream %s for %s: %w", cfg.Stream, cfg.Subject, err)
		}
		// Another worker created it meanwhile, with another config: look
		// it up again and add the subject if it lacks it.
		s, err = js.Stream(ctx, cfg.Stream)
	}
	if err != nil {
		return fmt.Errorf("natsout: stream %s: %w", cfg.Stream, err)
	}
	sc := s.CachedInfo().Config
	if slices.ContainsFunc(sc.Subjects, func(p string) bool { return subjectMatches(p, cfg.Subject) }) {
		return nil
	}
	sc.Subjects = append(sc.Subjects, cfg.Subject)
	if _, err := js.UpdateStream(ctx, sc); err != nil {
		return fmt.Errorf("natsout: adding %s to stream %s: %w", cfg.Subject, cfg.Stream, err)
	}
	return nil
}

// subjectMatches reports whether subject (no wildcards) matches pattern.
func subjectMatches(pattern, subject string) bool {
	pt, st := strings.Split(pattern, "."), strings.Split(subject, ".")
	for i, p := range pt {
		if p == ">" {
			return len(st) > i
		}
		if i >= len(st) || (p != "*" && p != st[i]) {
			return false
		}
	}
	return len(pt) == len(st)
}

// MaxRecordBytes is the largest record the server takes under key: its
// max_payload less the headers Publish adds. The worker cuts dead-letter
// records to fit.
func (o *Output) MaxRecordBytes(key string) int {
	nc := o.js.Conn()
	if nc == nil || nc.MaxPayload() <= 0 {
		return math.MaxInt
	}
	headers := len("NATS/1.0\r\n\r\n") +
		len(KeyHeader+": \r\n") + len(key) +
		len(jetstream.MsgIDHeader+": :\r\n") + len(o.cfg.Subject) + len(key) +
		len(jetstream.ExpectedStreamHeader+": \r\n") + len(o.cfg.Stream)
	return int(nc.MaxPayload()) - headers
}

// Publish publishes data and returns once the stream has acknowledged it
// (a duplicate of a record already stored counts as stored).
func (o *Output) Publish(ctx context.Context, key string, data []byte) error {
	if o.closed.Load() {
		return sinks.ErrClosed
	}
	msg := &nats.Msg{Subject: o.cfg.Subject, Data: data, Header: nats.Header{}}
	var opts []jetstream.PublishOpt
	if key != "" {
		msg.Header.Set(KeyHeader, key)
		opts = append(opts, jetstream.WithMsgID(o.cfg.Subject+":"+key))
	}
	if o.cfg.Stream != "" {
		opts = append(opts, jetstream.WithExpectStream(o.cfg.Stream))
	}
	ack, err := o.js.PublishMsg(ctx, msg, opts...)
	if err != nil {
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			return fmt.Errorf("natsout: publish to %s: no stream captures the subject: %w", o.cfg.Subject, err)
		}
		return fmt.Errorf("natsout: publish to %s: %w", o.cfg.Subject, err)
	}
	if ack == nil || ack.Stream == "" {
		return fmt.Errorf("natsout: publish to %s: no acknowledgement from a stream", o.cfg.Subject)
	}
	return nil
}

// Close makes later publishes fail with sinks.ErrClosed. It leaves the
// connection open.
func (o *Output) Close() error {
	o.closed.Store(true)
	return nil
}
