package natsjs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// openEmbedded opens a source on an embedded server of its own.
func openEmbedded(t *testing.T) (*natsjs.Source, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := uniqueConfig(natsjs.Embedded)
	cfg.Embedded = natsjs.EmbeddedConfig{StoreDir: dir, Port: natsjs.RandomPort}
	s := open(t, cfg)
	t.Cleanup(func() { s.Close() })
	return s, dir
}

// A removed store directory makes the source unhealthy, and its stats fail
// (so sluice_source_up is 0) (#15).
func TestRemovedStoreIsUnhealthy(t *testing.T) {
	s, dir := openEmbedded(t)
	ctx := t.Context()
	if err := s.Publish(ctx, sources.Outgoing{ID: "a", Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Healthy(ctx); err != nil {
		t.Fatalf("Healthy before: %v", err)
	}
	if _, err := s.Stats(ctx); err != nil {
		t.Fatalf("Stats before: %v", err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.Healthy(ctx); err == nil || !strings.Contains(err.Error(), "embedded store") {
		t.Fatalf("Healthy with the store removed = %v, want the store named", err)
	}
	if _, err := s.Stats(ctx); err == nil {
		t.Fatal("Stats with the store removed succeeded")
	}
}

// A job stream deleted under the worker makes the source unhealthy (#15).
func TestDeletedStreamIsUnhealthy(t *testing.T) {
	s, _ := openEmbedded(t)
	ctx := t.Context()
	if err := s.JetStream().DeleteStream(ctx, s.Config().Stream); err != nil {
		t.Fatal(err)
	}
	if err := s.Healthy(ctx); err == nil || !strings.Contains(err.Error(), "is gone") {
		t.Fatalf("Healthy with the stream deleted = %v, want it gone", err)
	}
}

// A publish the server refuses makes the source unhealthy until one is
// stored again (#15).
func TestRefusedPublishIsUnhealthy(t *testing.T) {
	s, _ := openEmbedded(t)
	ctx := t.Context()
	js := s.JetStream()
	st, err := js.Stream(ctx, s.Config().Stream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	cfg.MaxMsgs, cfg.Discard = 1, jetstream.DiscardNew
	if _, err := js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ctx, sources.Outgoing{ID: "a", Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ctx, sources.Outgoing{ID: "b", Data: []byte("{}")}); err == nil {
		t.Fatal("a publish beyond max_msgs with discard new was stored")
	}
	if err := s.Healthy(ctx); err == nil || !strings.Contains(err.Error(), "not stored") {
		t.Fatalf("Healthy after a refused publish = %v, want it named", err)
	}
	if err := st.Purge(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Publish(ctx, sources.Outgoing{ID: "c", Data: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Healthy(ctx); err != nil {
		t.Fatalf("Healthy after a stored publish = %v", err)
	}
}

// A source that joined another directory's embedded server through its
// port is healthy while that server's store is, whatever its own
// directory holds, and unhealthy once that store is removed (#15).
func TestJoinedByPortHealthFollowsItsStore(t *testing.T) {
	first, firstDir, port := startFirstStore(t)
	second := first
	second.Embedded = natsjs.EmbeddedConfig{StoreDir: filepath.Join(t.TempDir(), "second-store"), Port: port}
	b := open(t, second)
	defer b.Close()
	if b.Server() != nil {
		t.Fatal("the second source started its own server")
	}
	if err := b.Healthy(t.Context()); err != nil {
		t.Fatalf("joined by port: %v", err)
	}
	if err := os.RemoveAll(firstDir); err != nil {
		t.Fatal(err)
	}
	if err := b.Healthy(t.Context()); err == nil || !strings.Contains(err.Error(), "first-store") {
		t.Fatalf("with the first store removed: %v, want it named", err)
	}
}
