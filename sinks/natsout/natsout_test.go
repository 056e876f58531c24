package natsout_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/testkit/jsclient"
	"github.com/sluicehq/sluice/sinks"
	"github.com/sluicehq/sluice/sinks/natsout"
)

// startJetStream runs an embedded server on a random loopback port with
// its store in a temporary directory, and returns a JetStream handle.
func startJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host:      "127.0.0.1",
		Port:      -1,
		JetStream: true,
		StoreDir:  t.TempDir(),
		NoLog:     true,
		NoSigs:    true,
	})
	if err != nil {
		t.Fatal(err)
	}
	go ns.Start()
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats-server did not start")
	}
	t.Cleanup(func() {
		ns.Shutdown()
		ns.WaitForShutdown()
	})
	return jsclient.Connect(t, ns.ClientURL())
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// streamSubjects returns the subjects the stream is configured with.
func streamSubjects(t *testing.T, js jetstream.JetStream, stream string) []string {
	t.Helper()
	s, err := js.Stream(ctxT(t), stream)
	if err != nil {
		t.Fatal(err)
	}
	return s.CachedInfo().Config.Subjects
}

// streamMsgs returns every message stored in the stream, in order.
func streamMsgs(t *testing.T, js jetstream.JetStream, stream string) []*jetstream.RawStreamMsg {
	t.Helper()
	ctx := ctxT(t)
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

func TestPublishCreatesStreamAndDedupes(t *testing.T) {
	js := startJetStream(t)
	ctx := ctxT(t)
	o, err := natsout.New(ctx, js, natsout.Config{Subject: "sluice.results", Stream: "RESULTS", CreateStream: true})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			if err := o.Publish(ctx, fmt.Sprintf("job-%d", i), []byte(fmt.Sprintf(`{"id":"job-%d"}`, i))); err != nil {
				t.Errorf("Publish: %v", err)
			}
		})
	}
	wg.Wait()
	// A second publish of a key (a worker that died before acking) is
	// stored once.
	if err := o.Publish(ctx, "job-3", []byte(`{"id":"job-3"}`)); err != nil {
		t.Fatal(err)
	}
	msgs := streamMsgs(t, js, "RESULTS")
	if len(msgs) != 20 {
		t.Fatalf("%d messages in the stream; want 20", len(msgs))
	}
	keys := map[string]bool{}
	for _, m := range msgs {
		key := m.Header.Get(natsout.KeyHeader)
		if string(m.Data) != fmt.Sprintf(`{"id":%q}`, key) || m.Subject != "sluice.results" {
			t.Errorf("message %s %q with key %q", m.Subject, m.Data, key)
		}
		if id := m.Header.Get(jetstream.MsgIDHeader); id != "sluice.results:"+key {
			t.Errorf("Nats-Msg-Id %q; want sluice.results:%s", id, key)
		}
		keys[key] = true
	}
	if len(keys) != 20 {
		t.Errorf("%d distinct keys; want 20", len(keys))
	}
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	if err := o.Publish(ctx, "x", nil); !errors.Is(err, sinks.ErrClosed) {
		t.Errorf("Publish after Close = %v; want sinks.ErrClosed", err)
	}
}

func TestStreamUpdate(t *testing.T) {
	js := startJetStream(t)
	ctx := ctxT(t)
	// The jobs stream exists; dead letters are added next to the jobs.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "JOBS", Subjects: []string{"sluice.jobs"}}); err != nil {
		t.Fatal(err)
	}
	// A job published with its own id, as the queue does.
	if _, err := js.Publish(ctx, "sluice.jobs", []byte(`{"id":"j1"}`), jetstream.WithMsgID("j1")); err != nil {
		t.Fatal(err)
	}
	o, err := natsout.New(ctx, js, natsout.Config{Subject: "sluice.dead", Stream: "JOBS", CreateStream: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := streamSubjects(t, js, "JOBS"); !slices.Equal(got, []string{"sluice.jobs", "sluice.dead"}) {
		t.Fatalf("stream subjects %q; want the jobs and the dead letters", got)
	}
	// The dead letter of j1, keyed by the job id, is stored: it does not
	// collide with the job's own message id.
	if err := o.Publish(ctx, "j1", []byte(`{"id":"j1","reason":"client_error"}`)); err != nil {
		t.Fatal(err)
	}
	if msgs := streamMsgs(t, js, "JOBS"); len(msgs) != 2 || msgs[1].Subject != "sluice.dead" {
		t.Fatalf("stream holds %d messages; want the job and its dead letter", len(msgs))
	}

	// A stream that already captures the subject with a wildcard is left
	// as it is.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "ALL", Subjects: []string{"out.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := natsout.New(ctx, js, natsout.Config{Subject: "out.results.a", Stream: "ALL", CreateStream: true}); err != nil {
		t.Fatal(err)
	}
	if got := streamSubjects(t, js, "ALL"); !slices.Equal(got, []string{"out.>"}) {
		t.Errorf("subjects %q; want unchanged", got)
	}

	// A subject another stream captures cannot be added.
	if _, err := natsout.New(ctx, js, natsout.Config{Subject: "sluice.jobs", Stream: "OTHER", CreateStream: true}); err == nil {
		t.Error("creating a stream on a subject of another stream: no error")
	}
}

func TestPublishErrors(t *testing.T) {
	js := startJetStream(t)
	ctx := ctxT(t)
	o, err := natsout.New(ctx, js, natsout.Config{Subject: "nowhere.results"})
	if err != nil {
		t.Fatal(err)
	}
	err = o.Publish(ctx, "k", []byte(`{}`))
	if err == nil || !strings.Contains(err.Error(), "no stream captures the subject") {
		t.Errorf("publish to a subject in no stream: %v", err)
	}

	// The subject is in stream A, but the config expects B.
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "A", Subjects: []string{"a.results"}}); err != nil {
		t.Fatal(err)
	}
	o, err = natsout.New(ctx, js, natsout.Config{Subject: "a.results", Stream: "B"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Publish(ctx, "k", []byte(`{}`)); err == nil {
		t.Error("publish landing in another stream: no error")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (natsout.Config{Subject: "a.b", Stream: "S", CreateStream: true, Replicas: 3}).Validate(); err != nil {
		t.Errorf("good config: %v", err)
	}
	tests := []struct {
		c    natsout.Config
		want string
	}{
		{natsout.Config{}, "subject: required"},
		{natsout.Config{Subject: "a.*"}, "subject: must be a subject without wildcards"},
		{natsout.Config{Subject: "a.>"}, "subject: must be"},
		{natsout.Config{Subject: "a..b"}, "subject: must be"},
		{natsout.Config{Subject: "a b"}, "subject: must be"},
		{natsout.Config{Subject: "a", Stream: "x.y"}, "stream: must be a name"},
		{natsout.Config{Subject: "a", CreateStream: true}, "stream: required when create_stream is set"},
		{natsout.Config{Subject: "a", Replicas: 7}, "replicas: must be in [1, 5]"},
		{natsout.Config{Subject: "a", MaxAge: -1}, "max_age: must be >= 0"},
		{natsout.Config{Subject: "a", Duplicates: -1}, "duplicates: must be >= 0"},
	}
	for _, tt := range tests {
		if err := tt.c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Validate(%+v) = %v; want %q", tt.c, err, tt.want)
		}
	}
}

// TestRealNATS runs against the server at NATS_URL when it is set, with a
// stream of its own that it deletes at the end.
func TestRealNATS(t *testing.T) {
	url := os.Getenv("NATS_URL")
	if url == "" {
		t.Skip("NATS_URL not set")
	}
	js := jsclient.Connect(t, url)
	ctx := ctxT(t)
	suffix := fmt.Sprintf("%d", time.Now().UnixNano())
	stream, subject := "SLUICE_NATSOUT_TEST_"+suffix, "sluice_natsout_test."+suffix
	t.Cleanup(func() { _ = js.DeleteStream(context.Background(), stream) })
	o, err := natsout.New(ctx, js, natsout.Config{Subject: subject, Stream: stream, CreateStream: true, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := o.Publish(ctx, "k1", []byte(`{"id":"k1"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if msgs := streamMsgs(t, js, stream); len(msgs) != 1 {
		t.Fatalf("%d messages; want 1", len(msgs))
	}
}

// A stream that another worker created, with another config, between the
// lookup and the create is looked up again and given the subject: the
// worker starts instead of failing on "stream name already in use".
func TestStreamCreatedMeanwhile(t *testing.T) {
	js := startJetStream(t)
	ctx := ctxT(t)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "DEAD", Subjects: []string{"other.dead"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := natsout.New(ctx, &jsclient.StaleLookup{JetStream: js, Stale: true}, natsout.Config{Subject: "sluice.dead", Stream: "DEAD", CreateStream: true}); err != nil {
		t.Fatal(err)
	}
	if got := streamSubjects(t, js, "DEAD"); !slices.Equal(got, []string{"other.dead", "sluice.dead"}) {
		t.Fatalf("subjects %v, want both workers' subjects", got)
	}
}
