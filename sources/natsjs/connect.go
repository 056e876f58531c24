package natsjs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// reconnectDelay backs off from 100ms to 5s, with jitter.
func reconnectDelay(attempts int) time.Duration {
	d := min(100*time.Millisecond<<min(attempts, 6), 5*time.Second)
	return d/2 + rand.N(d/2+1)
}

func (s *Source) connect(url string) error {
	c := s.cfg
	opts := []nats.Option{
		nats.Name(c.Name),
		nats.Timeout(c.ConnectTimeout),
		nats.MaxReconnects(-1),
		nats.CustomReconnectDelay(reconnectDelay),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				s.log.Warn("nats disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			s.log.Info("nats reconnected", "url", nc.ConnectedUrlRedacted())
			s.mu.Lock()
			close(s.reconnect)
			s.reconnect = make(chan struct{})
			s.mu.Unlock()
		}),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			s.log.Warn("nats error", "err", err)
		}),
	}
	switch a := c.Auth; {
	case a.CredsFile != "":
		opts = append(opts, nats.UserCredentials(a.CredsFile))
	case a.NKeySeedFile != "":
		o, err := nats.NkeyOptionFromSeed(a.NKeySeedFile)
		if err != nil {
			return fmt.Errorf("jetstream: auth.nkey_seed_file: %w", err)
		}
		opts = append(opts, o)
	case a.User != "":
		opts = append(opts, nats.UserInfo(a.User, a.Password))
	case a.Token != "":
		opts = append(opts, nats.Token(a.Token))
	}
	if c.TLS.CAFile != "" {
		opts = append(opts, nats.RootCAs(c.TLS.CAFile))
	}
	if c.TLS.CertFile != "" {
		opts = append(opts, nats.ClientCert(c.TLS.CertFile, c.TLS.KeyFile))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		// The URL is redacted, and so is a parse error's copy of it.
		return fmt.Errorf("jetstream: connect to %s: %w", RedactURL(url), HideURL(err))
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return fmt.Errorf("jetstream: %w", err)
	}
	s.nc, s.js = nc, js
	s.log.Info("nats connected", "url", nc.ConnectedUrlRedacted())
	return nil
}

// ensureStream creates the stream want, or updates it when its stored
// config differs in what want sets (subjects, retention, storage, the
// duplicate window when set). A stream that already is as wanted is left
// alone: every worker of a fleet sets it up at its start, and an update
// while another worker creates its consumer on the stream trips a data
// race inside nats-server (v2.15.2, under the race detector). For the
// same reason a missing stream is created, not created-or-updated: a
// worker that starts at the same moment may create it first, and it is
// then looked up again like any other.
func ensureStream(ctx context.Context, js jetstream.JetStream, want jetstream.StreamConfig) (jetstream.Stream, error) {
	st, err := js.Stream(ctx, want.Name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		if st, err = js.CreateStream(ctx, want); !errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return st, err
		}
		st, err = js.Stream(ctx, want.Name)
	}
	if err != nil {
		return nil, err
	}
	have := st.CachedInfo().Config
	if slices.Equal(have.Subjects, want.Subjects) && have.Retention == want.Retention && have.Storage == want.Storage &&
		(want.Duplicates == 0 || have.Duplicates == want.Duplicates) {
		return st, nil
	}
	return js.UpdateStream(ctx, want)
}

// bind sets up or looks up the stream and the consumer.
func (s *Source) bind(ctx context.Context) error {
	c := s.cfg
	if c.Setup {
		if err := retrySetup(ctx, func() error {
			st, err := ensureStream(ctx, s.js, jetstream.StreamConfig{
				Name:       c.Stream,
				Subjects:   c.Subjects,
				Retention:  jetstream.WorkQueuePolicy,
				Storage:    jetstream.FileStorage,
				Duplicates: c.DuplicateWindow,
			})
			if err == nil {
				s.created = st.CachedInfo().Created
			}
			return err
		}); err != nil {
			return fmt.Errorf("jetstream: set up stream %q: %w", c.Stream, err)
		}
		if err := retrySetup(ctx, func() error {
			_, err := ensureStream(ctx, s.js, jetstream.StreamConfig{
				Name:     c.DeadLetterStream,
				Subjects: []string{c.DeadLetterSubject},
				Storage:  jetstream.FileStorage,
			})
			return err
		}); err != nil {
			return fmt.Errorf("jetstream: set up dead-letter stream %q: %w", c.DeadLetterStream, err)
		}
		maxDeliver := c.MaxDeliver
		if maxDeliver == 0 {
			maxDeliver = -1
		}
		var cons jetstream.Consumer
		err := retrySetup(ctx, func() error {
			var err error
			cons, err = s.js.CreateOrUpdateConsumer(ctx, c.Stream, jetstream.ConsumerConfig{
				Durable:       c.Consumer,
				AckPolicy:     jetstream.AckExplicitPolicy,
				AckWait:       c.AckWait,
				MaxDeliver:    maxDeliver,
				BackOff:       c.Backoff,
				MaxAckPending: c.MaxAckPending,
			})
			return err
		})
		if err != nil {
			return fmt.Errorf("jetstream: set up consumer %q on stream %q: %w", c.Consumer, c.Stream, err)
		}
		s.cons = cons
		return nil
	}
	cons, err := s.js.Consumer(ctx, c.Stream, c.Consumer)
	if err != nil {
		return fmt.Errorf("jetstream: consumer %q on stream %q (set setup: true to create it): %w", c.Consumer, c.Stream, err)
	}
	st, err := s.js.Stream(ctx, c.Stream)
	if err != nil {
		return fmt.Errorf("jetstream: stream %q: %w", c.Stream, err)
	}
	s.cons, s.created = cons, st.CachedInfo().Created
	return nil
}

// setupAttempts bounds retrySetup.
const setupAttempts = 5

// retrySetup calls op until it succeeds, fails with anything but a
// transient error, or has failed setupAttempts times, waiting 100 ms,
// 200 ms, 400 ms… in between. Transient are a JetStream API error of
// status 500, the server's own failure (a store it could not create at
// that moment, say), and a request that timed out while ctx still had
// time: a server busy with other work, or a cluster electing its meta
// leader, answers late or not at all. Creating or updating the same
// stream or consumer again is idempotent (one whose first request did
// land is found as it is), and a worker should not fail to start for
// either.
func retrySetup(ctx context.Context, op func() error) error {
	wait := 100 * time.Millisecond
	for attempt := 1; ; attempt++ {
		err := op()
		if err == nil || !transient(err) || attempt == setupAttempts {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		wait *= 2
	}
}

// transient reports whether err, from a JetStream API request, is worth
// the same request again (while the caller's context lasts: retrySetup
// stops when it is done).
func transient(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.Code == 500
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout)
}

// RedactURL returns urls, a comma-separated list of URLs, with the user
// information of each (user:password@ or token@) replaced by [REDACTED],
// whether or not it parses: for messages.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, u := range parts {
		// The last "@" of the URL, not of its authority: a password may
		// hold a "/" or a "?", and a NATS URL has no path.
		at := strings.LastIndexByte(u, '@')
		if at < 0 {
			continue
		}
		start := 0
		if j := strings.Index(u, "://"); j >= 0 && j < at {
			start = j + 3
		}
		parts[i] = u[:start] + "[REDACTED]" + u[at:]
	}
	return strings.Join(parts, ",")
}

// HideURL returns err, or, if it holds an error of url.Parse, an error that
// says what is wrong without a word of the URL: url.Parse's error quotes the
// whole URL, password included, and its cause quotes a part of it
// (invalid URL escape "%zz").
func HideURL(err error) error {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("the URL does not parse: %s (the URL is not shown: it may hold a password)", urlProblem(ue.Err))
}

// urlProblem names what url.Parse found wrong, without its quote.
func urlProblem(err error) string {
	var esc url.EscapeError
	var host url.InvalidHostError
	switch {
	case errors.As(err, &esc):
		return "an invalid %-escape (write a % in a password as %25)"
	case errors.As(err, &host):
		return "an invalid character in the host"
	}
	return "not a valid URL"
}

// CheckURL reports, without a word of the URLs, the first of urls (a
// comma-separated list, as Config.URL) that nats.Connect could not parse.
func CheckURL(urls string) error {
	for _, u := range strings.Split(urls, ",") {
		u = strings.TrimSpace(u)
		if u == "" {
			continue
		}
		if !strings.Contains(u, "://") {
			u = "nats://" + u
		}
		if _, err := url.Parse(u); err != nil {
			return HideURL(err)
		}
	}
	return nil
}
