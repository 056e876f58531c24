package natsjs

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
)

// startEmbedded starts the embedded server, or finds the one another
// process runs on the same store directory, and returns its URL.
func (s *Source) startEmbedded(ctx context.Context) (string, error) {
	s.storeDir = s.cfg.Embedded.StoreDir
	srv, err := StartServer(s.cfg.Embedded, s.log)
	if err == nil {
		s.srv = srv
		return srv.ClientURL(), nil
	}
	var inUse *PortInUseError
	if errors.As(err, &inUse) {
		// Another sluice process may run its embedded server there, on
		// another store directory: use it, but no other NATS server.
		u := "nats://" + inUse.Addr
		if s.isEmbeddedServer(u) {
			// Found through the port, not through this store: the jobs go
			// to the other directory's store. Say so, and name it.
			its := s.embeddedStoreOf(u)
			s.log.Warn("using the embedded nats server of another store directory, found on its port; jobs go to its store, not to this one",
				"url", u, "its_store_dir", its, "store_dir", s.cfg.Embedded.StoreDir)
			s.storeDir = its
			if its == unknownStore {
				s.storeDir = ""
			}
			return u, nil
		}
		return "", err
	}
	if !errors.Is(err, ErrStoreLocked) {
		return "", err
	}
	// The other process writes its URL once its server is up.
	deadline := time.Now().Add(s.cfg.ConnectTimeout)
	for {
		if u, ok := runningURL(s.cfg.Embedded.StoreDir); ok {
			s.log.Info("using the embedded nats server of another process", "url", u, "store_dir", s.cfg.Embedded.StoreDir)
			return u, nil
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("%w (%s), but it published no server URL within %s", ErrStoreLocked, s.cfg.Embedded.StoreDir, s.cfg.ConnectTimeout)
		}
		select {
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// isEmbeddedServer reports whether a sluice embedded server answers at
// url.
func (s *Source) isEmbeddedServer(url string) bool {
	nc, err := nats.Connect(url, nats.Name(s.cfg.Name), nats.Timeout(2*time.Second), nats.NoReconnect())
	if err != nil {
		return false
	}
	defer nc.Close()
	return nc.ConnectedServerName() == serverName
}

// storeSubject is where the process that runs an embedded server answers
// with the server's store directory.
const storeSubject = "_SLUICE.EMBEDDED.STORE_DIR"

// answerStoreDir serves the store directory of the embedded server this
// source started, on storeSubject, for the processes that find the server
// through its port.
func (s *Source) answerStoreDir() {
	if s.srv == nil {
		return
	}
	dir, err := filepath.Abs(s.cfg.Embedded.StoreDir)
	if err != nil {
		dir = s.cfg.Embedded.StoreDir
	}
	if _, err := s.nc.Subscribe(storeSubject, func(m *nats.Msg) { m.Respond([]byte(dir)) }); err != nil {
		s.log.Debug("serving the embedded store directory", "err", err)
	}
}

// unknownStore is embeddedStoreOf's answer when no process answers.
const unknownStore = "unknown"

// embeddedStoreOf asks the embedded server at url for its store directory;
// unknownStore if no process answers.
func (s *Source) embeddedStoreOf(url string) string {
	nc, err := nats.Connect(url, nats.Name(s.cfg.Name), nats.Timeout(2*time.Second), nats.NoReconnect())
	if err != nil {
		return unknownStore
	}
	defer nc.Close()
	m, err := nc.Request(storeSubject, nil, 2*time.Second)
	if err != nil {
		return unknownStore
	}
	return string(m.Data)
}

func (s *Source) shutdownServer() {
	if s.srv != nil {
		s.srv.Shutdown()
	}
}
