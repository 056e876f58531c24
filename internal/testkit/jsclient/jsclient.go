// Package jsclient gives tests a JetStream client of a NATS server: one
// connection of its own, closed when the test ends. It imports nats.go
// and nothing of sluice, so that the tests of every package, the NATS
// source's own included, can use it.
package jsclient

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Connect opens a connection to url with opts, as a worker process would,
// and returns its JetStream client. It fails the test when either fails.
func Connect(t testing.TB, url string, opts ...nats.Option) jetstream.JetStream {
	t.Helper()
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// StaleLookup is a JetStream client whose first stream lookup answers
// "not found" while Stale is set, as a lookup does when another worker
// creates the stream right after it.
type StaleLookup struct {
	jetstream.JetStream
	Stale bool
}

// Stream looks the stream up, or answers "not found" once while Stale.
func (s *StaleLookup) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	if s.Stale {
		s.Stale = false
		return nil, jetstream.ErrStreamNotFound
	}
	return s.JetStream.Stream(ctx, name)
}
