// Package jsclient gives tests a JetStream client of a NATS server: one
// connection of its own, closed when the test ends. It imports nats.go
// and nothing of sluice, so that the tests of every package, the NATS
// source's own included, can use it.
package jsclient

import (
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
