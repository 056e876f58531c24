package natsjs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// storeHealth keeps the last failure of a publish that reached a connected
// server: the server took the message and could not store it (a publish
// that times out while connected, a JetStream API error). A later
// successful publish clears it.
type storeHealth struct {
	mu  sync.Mutex
	err error
}

func (h *storeHealth) set(err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.err = err
}

func (h *storeHealth) get() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.err
}

// publishFailed records the failure of a publish, unless it says nothing
// about the store: the caller's context ended, the connection is down,
// the message was too large.
func (s *Source) publishFailed(ctx context.Context, err error) {
	if ctx.Err() != nil || !s.nc.IsConnected() || s.isClosed() {
		return
	}
	s.store.set(err)
}

// Healthy returns nil while the queue can store and hand out jobs, else an
// error that says why not: the connection is down; the embedded store
// directory was removed, or the embedded server reported a store write
// failure; the job stream or the consumer is gone, or the JetStream API
// fails; or the last publish that reached the server was not stored.
// A readiness check calls it; Stats fails the same way.
func (s *Source) Healthy(ctx context.Context) error {
	if s.isClosed() {
		return ErrClosed
	}
	if !s.nc.IsConnected() {
		return errors.New("jetstream: not connected")
	}
	if err := s.storeFault(); err != nil {
		return err
	}
	if _, err := s.js.Stream(ctx, s.cfg.Stream); err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("jetstream: stream %s is gone", s.cfg.Stream)
		}
		return fmt.Errorf("jetstream: stream info %s: %w", s.cfg.Stream, err)
	}
	if _, err := s.cons.Info(ctx); err != nil {
		return fmt.Errorf("jetstream: consumer info %s/%s: %w", s.cfg.Stream, s.cfg.Consumer, err)
	}
	if err := s.store.get(); err != nil {
		return fmt.Errorf("jetstream: the last publish was not stored: %w", err)
	}
	return nil
}

// storeFault reports a failure of the embedded store in use (this
// Source's, or the one of the server found on the port) that the JetStream
// API does not show: its directory is gone (the server keeps answering
// from memory, and stores nothing more), or the server reported a write
// failure.
func (s *Source) storeFault() error {
	if s.storeDir == "" {
		return nil
	}
	dir := filepath.Join(s.storeDir, "jetstream")
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("jetstream: the embedded store %s is not readable: %w", dir, err)
	}
	if s.srv != nil {
		return s.srv.StoreFault()
	}
	return nil
}
