package natsjs_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/sources/sourcetest"
)

// startServer starts an embedded server on a random port with its store
// in a temporary directory.
func startServer(t *testing.T) *natsjs.Server {
	t.Helper()
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: t.TempDir(), Port: natsjs.RandomPort}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// runServer starts a nats-server with opts, stopped when the test ends.
func runServer(t *testing.T, opts *server.Options) *server.Server {
	t.Helper()
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	return ns
}

var nameSeq atomic.Int64

// uniqueConfig returns a Config for url with stream, subjects and consumer
// names no other test uses.
func uniqueConfig(url string) natsjs.Config {
	name := fmt.Sprintf("T%d_%d_%d", os.Getpid(), time.Now().UnixNano()%1e9, nameSeq.Add(1))
	return natsjs.Config{
		URL:       url,
		Stream:    name,
		Subjects:  []string{"sluicetest." + name + ".jobs"},
		Consumer:  "w",
		Setup:     true,
		FetchWait: 250 * time.Millisecond,
	}
}

func open(t *testing.T, cfg natsjs.Config) *natsjs.Source {
	t.Helper()
	s, err := natsjs.Open(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deleteStreams removes the test's streams when it ends.
func deleteStreams(t *testing.T, url string, cfg natsjs.Config) {
	t.Cleanup(func() {
		nc, err := nats.Connect(url)
		if err != nil {
			t.Errorf("cleanup: %v", err)
			return
		}
		defer nc.Close()
		js, _ := nc.JetStream()
		for _, name := range []string{cfg.Stream, cfg.Stream + "_DEAD"} {
			if err := js.DeleteStream(name); err != nil && !errors.Is(err, nats.ErrStreamNotFound) {
				t.Errorf("cleanup: delete stream %s: %v", name, err)
			}
		}
	})
}

func conformance(t *testing.T, url string) {
	sourcetest.Run(t, func(t *testing.T, opts sourcetest.Options) sourcetest.Queue {
		cfg := uniqueConfig(url)
		cfg.AckWait = opts.AckWait
		deleteStreams(t, url, cfg)
		return sourcetest.Queue{Open: func(t *testing.T) sources.Source { return open(t, cfg) }}
	})
}

func TestConformanceEmbedded(t *testing.T) {
	conformance(t, startServer(t).ClientURL())
}

// TestConformanceNATSURL runs the suite against the server in NATS_URL.
func TestConformanceNATSURL(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("NATS_URL not set")
	}
	conformance(t, url)
}

func TestPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	port := l.Addr().(*net.TCPAddr).Port
	_, err = natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: t.TempDir(), Port: port}, nil)
	if !errors.Is(err, natsjs.ErrPortInUse) {
		t.Fatalf("StartServer on a port in use: %v, want ErrPortInUse", err)
	}
	if !strings.Contains(err.Error(), "embedded.port") || !strings.Contains(err.Error(), strconv.Itoa(port)) {
		t.Errorf("error does not name the setting and the port: %v", err)
	}
}

// TestEmbeddedJoinsByPort: an embedded Open whose port is taken by
// another sluice embedded server (on another store directory) uses it; one
// taken by any other NATS server is an error.
func TestEmbeddedJoinsByPort(t *testing.T) {
	srv := startServer(t)
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.ClientURL(), "nats://"))
	port, _ := strconv.Atoi(portStr)
	cfg := uniqueConfig(natsjs.Embedded)
	cfg.Embedded = natsjs.EmbeddedConfig{StoreDir: t.TempDir(), Port: port}
	s := open(t, cfg)
	if s.Server() != nil || s.EmbeddedURL() != srv.ClientURL() {
		t.Errorf("Open on the port of a running embedded server: own server %v, url %s", s.Server() != nil, s.EmbeddedURL())
	}
	_ = s.Close()

	ns := runServer(t, &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, ServerName: "other"})
	cfg.Embedded.Port = ns.Addr().(*net.TCPAddr).Port
	if _, err := natsjs.Open(t.Context(), cfg, nil); !errors.Is(err, natsjs.ErrPortInUse) {
		t.Errorf("Open on the port of another NATS server: %v, want ErrPortInUse", err)
	}
}

// TestEmbeddedShared: a second Open on the same store directory uses the
// first one's server instead of starting another.
func TestEmbeddedShared(t *testing.T) {
	cfg := uniqueConfig(natsjs.Embedded)
	cfg.Embedded = natsjs.EmbeddedConfig{StoreDir: t.TempDir(), Port: natsjs.RandomPort}
	first := open(t, cfg)
	defer first.Close()
	if first.Server() == nil || first.EmbeddedURL() == "" {
		t.Fatal("first Source did not start the embedded server")
	}
	second := open(t, cfg)
	if second.Server() != nil {
		t.Error("second Source started its own server")
	}
	if second.EmbeddedURL() != first.EmbeddedURL() {
		t.Errorf("second Source uses %s, want %s", second.EmbeddedURL(), first.EmbeddedURL())
	}
	if err := second.Publish(t.Context(), sources.Outgoing{ID: "x", Data: []byte("hi")}); err != nil {
		t.Fatal(err)
	}
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	msgs, err := first.Receive(t.Context(), 10)
	if err != nil || len(msgs) != 1 || string(msgs[0].Data()) != "hi" {
		t.Fatalf("Receive: %d messages, %v", len(msgs), err)
	}
	// A third opener cannot start a server while the first holds the
	// directory.
	if _, err := natsjs.StartServer(cfg.Embedded, nil); !errors.Is(err, natsjs.ErrStoreLocked) {
		t.Errorf("StartServer on a locked store: %v, want ErrStoreLocked", err)
	}
}

func TestDedupeAndStats(t *testing.T) {
	srv := startServer(t)
	cfg := uniqueConfig(srv.ClientURL())
	s := open(t, cfg)
	defer s.Close()
	ctx := t.Context()
	for i, wantDup := range []bool{false, true} {
		ack, err := s.PublishAck(ctx, sources.Outgoing{ID: "job-1", Data: []byte("a")})
		if err != nil {
			t.Fatal(err)
		}
		if ack.Duplicate != wantDup {
			t.Errorf("publish %d: Duplicate = %v, want %v", i+1, ack.Duplicate, wantDup)
		}
	}
	for _, id := range []string{"job-2", "job-3", ""} {
		if err := s.Publish(ctx, sources.Outgoing{ID: id, Data: []byte(id)}); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute) // only a net: each wait below is for the server to catch up
	before := time.Now()
	st := settleStats(t, s, deadline, statsAre(sources.Stats{Pending: 4}))
	// Oldest is job-1's publish time, a moment ago.
	if st.Oldest.IsZero() || st.Oldest.After(before) || before.Sub(st.Oldest) > time.Minute {
		t.Errorf("oldest %v, want job-1's publish time just before %v", st.Oldest, before)
	}
	st.Oldest = time.Time{}
	if st != (sources.Stats{Pending: 4}) {
		t.Errorf("stats after 4 publishes: %+v", st)
	}

	msgs, err := s.Receive(ctx, 2)
	if err != nil || len(msgs) != 2 {
		t.Fatalf("Receive(2): %d, %v", len(msgs), err)
	}
	if msgs[0].ID() != "job-1" || msgs[0].Headers()["Nats-Msg-Id"] != "job-1" {
		t.Errorf("first message id %q headers %v", msgs[0].ID(), msgs[0].Headers())
	}
	if err := msgs[1].Nak(ctx, 0); err != nil {
		t.Fatal(err)
	}
	// A dead-letter record published by JetStream on the derived subject is
	// acked by the dead-letter stream.
	if cfg := s.Config(); cfg.DeadLetterSubject != "sluicetest."+cfg.Stream+".dead" || cfg.DeadLetterStream != cfg.Stream+"_DEAD" {
		t.Errorf("dead letters on %s in %s", cfg.DeadLetterSubject, cfg.DeadLetterStream)
	}
	if _, err := s.JetStream().Publish(ctx, s.Config().DeadLetterSubject, []byte(`{"id":"x"}`)); err != nil {
		t.Fatalf("publish dead letter: %v", err)
	}
	want := sources.Stats{Pending: 2, AckPending: 2, Redelivered: 0, DeadLetters: 1}
	st = settleStats(t, s, deadline, statsAre(want))
	st.Oldest = time.Time{}
	if st != want {
		t.Errorf("stats: %+v, want %+v", st, want)
	}

	// The last message had no ID: its stream sequence stands in.
	var ids []string
	for len(ids) < 3 && time.Now().Before(deadline) {
		more, err := s.Receive(ctx, 3)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range more {
			ids = append(ids, m.ID())
			_ = m.Ack(ctx)
		}
	}
	// The duplicate took no sequence: job-1..3 are 1..3.
	if !slices.ContainsFunc(ids, func(id string) bool { return strings.HasPrefix(id, cfg.Stream+":") && strings.HasSuffix(id, ":4") }) {
		t.Errorf("ids %v: want the stream, its creation time and the sequence 4 for the message without id", ids)
	}
	_ = msgs[0].Ack(ctx)
	// Every job acked: 4 done (the duplicate is no job), none left.
	done := func(st sources.Stats) bool {
		return st.Done == 4 && st.Oldest.IsZero() && st.Pending+st.AckPending == 0
	}
	if st = settleStats(t, s, deadline, done); !done(st) {
		t.Errorf("stats after every ack: %+v, want 4 done and no oldest", st)
	}
}

// settleStats returns the stats of s once ok holds for them, or the last
// read at deadline. The consumer's counts follow the stream's a moment
// after a publish is acked, a receive, an ack or a nak.
func settleStats(t *testing.T, s *natsjs.Source, deadline time.Time, ok func(sources.Stats) bool) sources.Stats {
	t.Helper()
	for {
		st, err := s.Stats(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if ok(st) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// statsAre says whether stats are want, but for Oldest.
func statsAre(want sources.Stats) func(sources.Stats) bool {
	return func(st sources.Stats) bool {
		st.Oldest = time.Time{}
		return st == want
	}
}

// receiveOne returns the next message of s.
func receiveOne(t *testing.T, s *natsjs.Source) sources.Message {
	t.Helper()
	for range 40 {
		msgs, err := s.Receive(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) == 1 {
			return msgs[0]
		}
	}
	t.Fatal("no message")
	return nil
}

// TestIDWithoutMsgID: a message published without Nats-Msg-Id gets an id
// unique to it: the same on a redelivery, but not the same as the message
// of the same sequence in a stream made again, or in another stream (the
// sequence alone sent two jobs out with Idempotency-Key: 1).
func TestIDWithoutMsgID(t *testing.T) {
	srv := startServer(t)
	cfg := uniqueConfig(srv.ClientURL())
	first := func(cfg natsjs.Config) (string, string) {
		s := open(t, cfg)
		defer s.Close()
		if err := s.Publish(t.Context(), sources.Outgoing{Data: []byte(`{"path":"/accounts/alice/charge"}`)}); err != nil {
			t.Fatal(err)
		}
		m := receiveOne(t, s)
		if err := m.Nak(t.Context(), 0); err != nil {
			t.Fatal(err)
		}
		again := receiveOne(t, s)
		if err := again.Ack(t.Context()); err != nil {
			t.Fatal(err)
		}
		return m.ID(), again.ID()
	}
	id, redelivered := first(cfg)
	if id != redelivered {
		t.Errorf("a redelivery changed the id: %q, then %q", id, redelivered)
	}
	if !strings.HasPrefix(id, cfg.Stream+":") || !strings.HasSuffix(id, ":1") {
		t.Errorf("id %q: want %s:<created>:1", id, cfg.Stream)
	}
	// The stream made again: its sequences restart at 1.
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := nc.JetStream()
	if err := js.DeleteStream(cfg.Stream); err != nil {
		t.Fatal(err)
	}
	remade, _ := first(cfg)
	other := uniqueConfig(srv.ClientURL())
	deleteStreams(t, srv.ClientURL(), other)
	elsewhere, _ := first(other)
	if remade == id || elsewhere == id || !strings.HasSuffix(remade, ":1") || !strings.HasSuffix(elsewhere, ":1") {
		t.Errorf("ids of sequence 1: %q, in the stream made again %q, in another stream %q; want three", id, remade, elsewhere)
	}
}

func TestSetupFalseNeedsConsumer(t *testing.T) {
	srv := startServer(t)
	cfg := uniqueConfig(srv.ClientURL())
	cfg.Setup = false
	_, err := natsjs.Open(t.Context(), cfg, nil)
	if err == nil || !strings.Contains(err.Error(), "setup: true") {
		t.Fatalf("Open without the stream: %v", err)
	}
}

func TestAuthTokenNotInErrors(t *testing.T) {
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, Authorization: "s3cret-token"}
	ns := runServer(t, opts)
	cfg := uniqueConfig(ns.ClientURL())
	cfg.Setup = false
	cfg.Auth.Token = "wrong-token"
	_, err := natsjs.Open(t.Context(), cfg, nil)
	if err == nil {
		t.Fatal("connected with a wrong token")
	}
	if strings.Contains(err.Error(), "wrong-token") {
		t.Errorf("error shows the token: %v", err)
	}
	if s := fmt.Sprintf("%v %+v %#v", cfg.Auth, cfg, cfg.Auth); strings.Contains(s, "wrong-token") {
		t.Errorf("formatting shows the token: %s", s)
	}
	cfg.Auth.Token = "s3cret-token"
	// The server has no JetStream, so binding fails after connecting.
	_, err = natsjs.Open(t.Context(), cfg, nil)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "consumer") {
		t.Errorf("Open with the right token: %v", err)
	}
}

func TestValidate(t *testing.T) {
	good := natsjs.Config{}
	if err := good.Validate(); err != nil {
		t.Fatalf("zero config: %v", err)
	}
	for _, c := range []struct {
		cfg   natsjs.Config
		field string
	}{
		{natsjs.Config{URL: "embeded"}, "url"},
		{natsjs.Config{Embedded: natsjs.EmbeddedConfig{Port: 70000}}, "embedded.port"},
		{natsjs.Config{Stream: "a.b"}, "stream"},
		{natsjs.Config{Consumer: "a b"}, "consumer"},
		{natsjs.Config{Subjects: []string{"a..b"}}, "subjects[0]"},
		{natsjs.Config{PublishSubject: "a.*"}, "publish_subject"},
		{natsjs.Config{Subjects: []string{"jobs.>"}, PublishSubject: "jobs.new"}, "dead_letter_subject"},
		{natsjs.Config{AckWait: time.Millisecond}, "ack_wait"},
		{natsjs.Config{MaxDeliver: -2}, "max_deliver"},
		{natsjs.Config{Backoff: []time.Duration{time.Second, 2 * time.Second}, MaxDeliver: 1}, "max_deliver"},
		{natsjs.Config{Backoff: []time.Duration{0}}, "backoff[0]"},
		{natsjs.Config{FetchWait: time.Microsecond}, "fetch_wait"},
		{natsjs.Config{Auth: natsjs.Auth{Token: "t", User: "u"}}, "auth"},
		{natsjs.Config{TLS: natsjs.TLS{CertFile: "c"}}, "tls"},
		{natsjs.Config{DeadLetterStream: "SLUICE"}, "dead_letter_stream"},
		{natsjs.Config{PublishSubject: "other.jobs"}, "publish_subject"},
	} {
		err := c.cfg.Validate()
		if !slices.ContainsFunc(field.Flatten(err), func(fe *field.Error) bool { return fe.Field == c.field }) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", c.cfg, err, c.field)
		}
	}
	if got := natsjs.DeadLetterSubjectFor("sluice.jobs"); got != "sluice.dead" {
		t.Errorf("DeadLetterSubjectFor(sluice.jobs) = %q", got)
	}
	if got := natsjs.DeadLetterSubjectFor("jobs"); got != "jobs.dead" {
		t.Errorf("DeadLetterSubjectFor(jobs) = %q", got)
	}
}

// The kill test (sourcetest.StartHolder). The helper process opens the
// source from the environment and holds count messages until killed.
const helperEnv = "SLUICE_JETSTREAM_HELPER"

func TestHelperProcess(t *testing.T) {
	spec := os.Getenv(helperEnv)
	if spec == "" {
		t.Skip("helper process for TestKilledConsumer")
	}
	// spec: url stream subject ackwait count
	f := strings.Fields(spec)
	ackWait, _ := time.ParseDuration(f[3])
	n, _ := strconv.Atoi(f[4])
	cfg := natsjs.Config{URL: f[0], Stream: f[1], Subjects: []string{f[2]}, Consumer: "w", Setup: true, AckWait: ackWait, FetchWait: 250 * time.Millisecond}
	sourcetest.HoldUntilKilled(func() (sources.Source, error) {
		return natsjs.Open(context.Background(), cfg, nil)
	}, n)
}

func TestKilledConsumer(t *testing.T) {
	srv := startServer(t)
	cfg := uniqueConfig(srv.ClientURL())
	cfg.AckWait = 2 * time.Second
	const n = 50
	pub := open(t, cfg)
	defer pub.Close()
	for i := range n {
		if err := pub.Publish(t.Context(), sources.Outgoing{ID: fmt.Sprintf("k-%02d", i), Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}

	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %s %s %s %d", helperEnv, cfg.URL, cfg.Stream, cfg.Subjects[0], cfg.AckWait, n))
	kill := sourcetest.StartHolder(t, cmd, n)
	if st, err := pub.Stats(t.Context()); err != nil || st.AckPending != n {
		t.Errorf("before the kill: %+v, %v; want %d ack pending", st, err, n)
	}
	kill()
	sourcetest.ReceiveRedelivered(t, pub, n, cfg.AckWait+60*time.Second)
}

// TestServerRestart: a consumer keeps working across a restart of the
// server: messages acked before it are not redelivered, messages held
// across it can still be acked, and the rest arrive once each.
func TestServerRestart(t *testing.T) {
	dir := t.TempDir()
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: dir, Port: natsjs.RandomPort}, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(srv.ClientURL(), "nats://"))
	port, _ := strconv.Atoi(portStr)
	cfg := uniqueConfig(srv.ClientURL())
	cfg.AckWait = time.Minute
	s := open(t, cfg)
	defer s.Close()
	ctx := t.Context()
	const n = 100
	for i := range n {
		if err := s.Publish(ctx, sources.Outgoing{ID: fmt.Sprintf("r-%03d", i), Data: []byte("x")}); err != nil {
			t.Fatal(err)
		}
	}
	acked := map[string]int{}
	receive := func(max int) []sources.Message {
		t.Helper()
		var out []sources.Message
		deadline := time.Now().Add(30 * time.Second)
		for len(out) < max && time.Now().Before(deadline) {
			msgs, err := s.Receive(ctx, max-len(out))
			if err != nil {
				t.Fatalf("Receive: %v", err)
			}
			out = append(out, msgs...)
		}
		return out
	}
	for _, m := range receive(30) {
		if err := m.Ack(ctx); err != nil {
			t.Fatal(err)
		}
		acked[m.ID()]++
	}
	held := receive(10)
	// Wait until the server has recorded the 30 acks.
	deadline := time.Now().Add(30 * time.Second)
	recorded := func(st sources.Stats) bool { return st.AckPending == 10 && st.Pending == 60 }
	if st := settleStats(t, s, deadline, recorded); !recorded(st) {
		t.Fatalf("stats before restart: %+v", st)
	}

	srv.Shutdown()
	// While the server is down, Receive returns nothing and no error.
	for range 3 {
		msgs, err := s.Receive(ctx, 5)
		if err != nil || len(msgs) != 0 {
			t.Fatalf("Receive with the server down: %d messages, %v", len(msgs), err)
		}
	}
	srv, err = natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: dir, Port: port}, nil)
	if err != nil {
		t.Fatalf("restart on port %d: %v", port, err)
	}
	defer srv.Shutdown()

	for _, m := range held {
		if err := m.Ack(ctx); err != nil {
			t.Fatalf("ack across the restart: %v", err)
		}
		acked[m.ID()]++
	}
	deadline = time.Now().Add(60 * time.Second)
	for len(acked) < n && time.Now().Before(deadline) {
		msgs, err := s.Receive(ctx, 16)
		if err != nil {
			t.Fatalf("Receive after restart: %v", err)
		}
		for _, m := range msgs {
			if err := m.Ack(ctx); err != nil {
				t.Fatal(err)
			}
			acked[m.ID()]++
		}
	}
	if len(acked) != n {
		t.Fatalf("acked %d of %d messages after the restart", len(acked), n)
	}
	for id, c := range acked {
		if c > 1 {
			t.Errorf("%s delivered and acked %d times", id, c)
		}
	}
}

// expiredCtx is a context whose deadline has passed but that does not say
// so yet: the instant between a deadline and its timer firing.
type expiredCtx struct{ context.Context }

func (expiredCtx) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

// TestReceiveAtDeadline: a Receive whose ctx deadline has just passed,
// before ctx.Err() reports it, returns no messages and no error, as an
// empty poll; it used to fail with "jetstream: fetch from …: nats: invalid
// jetstream option: context deadline already exceeded" (seen once in the
// conformance suite).
func TestReceiveAtDeadline(t *testing.T) {
	srv := startServer(t)
	s := open(t, uniqueConfig(srv.ClientURL()))
	msgs, err := s.Receive(expiredCtx{t.Context()}, 1)
	if err != nil || len(msgs) != 0 {
		t.Fatalf("Receive at the deadline: %d messages, %v; want none and no error", len(msgs), err)
	}
}
