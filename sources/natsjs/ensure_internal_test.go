package natsjs

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/testkit/jsclient"
)

// A stream that is as wanted is only looked up, never updated (an update
// while another worker creates its consumer races inside nats-server);
// one that differs in what is wanted is updated, and a missing one
// created. The server's count of JetStream API calls tells.
func TestEnsureStreamLeavesAWantedStream(t *testing.T) {
	js := embeddedJetStream(t)
	calls := func() uint64 {
		t.Helper()
		ai, err := js.AccountInfo(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		return ai.API.Total
	}
	want := jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: time.Minute}
	for _, c := range []struct {
		name  string
		edit  func(*jetstream.StreamConfig)
		calls uint64 // API calls of ensureStream, the account info's own included
	}{
		{"missing: looked up, then created", nil, 3},
		{"as wanted: looked up only", nil, 2},
		{"another subject: updated", func(s *jetstream.StreamConfig) { s.Subjects = []string{"s.>", "t.>"} }, 3},
		{"another duplicate window: updated", func(s *jetstream.StreamConfig) { s.Duplicates = 2 * time.Minute }, 3},
		{"as wanted again", func(s *jetstream.StreamConfig) { s.Duplicates = 2 * time.Minute }, 2},
	} {
		if c.edit != nil {
			c.edit(&want)
		}
		before := calls()
		st, err := ensureStream(t.Context(), js, want)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := calls() - before; got != c.calls {
			t.Errorf("%s: %d API calls, want %d", c.name, got, c.calls)
		}
		if cfg := st.CachedInfo().Config; len(cfg.Subjects) != len(want.Subjects) || cfg.Duplicates != want.Duplicates {
			t.Errorf("%s: stream config %v %v, want %v %v", c.name, cfg.Subjects, cfg.Duplicates, want.Subjects, want.Duplicates)
		}
	}
}

// A stream that another worker created between the lookup and the create
// is looked up again: left alone when it is as wanted, updated when it
// differs in what is wanted.
func TestEnsureStreamCreatedMeanwhile(t *testing.T) {
	js := embeddedJetStream(t)
	other := jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: time.Minute}
	if _, err := js.CreateStream(t.Context(), other); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		dups time.Duration
	}{
		{"as wanted", time.Minute},
		{"another duplicate window", 2 * time.Minute},
	} {
		want := other
		want.Duplicates = c.dups
		st, err := ensureStream(t.Context(), &jsclient.StaleLookup{JetStream: js, Stale: true}, want)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := st.CachedInfo().Config.Duplicates; got != c.dups {
			t.Errorf("%s: duplicate window %v, want %v", c.name, got, c.dups)
		}
	}
}

// embeddedJetStream starts an embedded server for the test and returns a
// JetStream client of it.
func embeddedJetStream(t *testing.T) jetstream.JetStream {
	t.Helper()
	srv, err := StartServer(EmbeddedConfig{StoreDir: t.TempDir(), Port: RandomPort}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return jsclient.Connect(t, srv.ClientURL())
}
