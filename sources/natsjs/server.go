package natsjs

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// lockName is the file in the store directory that the process running
// the embedded server holds locked; it contains the server's client URL.
const lockName = "sluice.lock"

// serverName is the name of every embedded server, by which a client tells
// one from another NATS server on the same address.
const serverName = "sluice-embedded"

// Server is an in-process nats-server with JetStream, storing its data in
// a directory that it holds locked while it runs.
type Server struct {
	ns   *server.Server
	lock *os.File
	url  string
	once sync.Once
	slog *serverLog
}

// ErrStoreLocked is returned by StartServer when another process runs an
// embedded server on the same store directory.
var ErrStoreLocked = errors.New("jetstream: store directory in use by another process")

// StartServer starts an embedded server as configured. It installs no
// signal handlers; Shutdown stops it. A port in use fails with an error
// wrapping ErrPortInUse, a store directory locked by another process with
// one wrapping ErrStoreLocked.
func StartServer(cfg EmbeddedConfig, log *slog.Logger) (*Server, error) {
	if log == nil {
		log = discard
	}
	c := Config{URL: Embedded, Embedded: cfg}.withDefaults().Embedded
	_, statErr := os.Stat(c.StoreDir)
	if err := os.MkdirAll(c.StoreDir, 0o750); err != nil {
		return nil, fmt.Errorf("jetstream: embedded.store_dir: %w", err)
	}
	lock, err := lockStore(c.StoreDir)
	if err != nil {
		return nil, err
	}
	s, err := startLocked(c, lock, log)
	if err != nil {
		_ = unlockStore(lock)
		if os.IsNotExist(statErr) {
			// Leave no trace of a server that never ran.
			_ = os.Remove(filepath.Join(c.StoreDir, lockName))
			_ = os.Remove(c.StoreDir)
		}
		return nil, err
	}
	return s, nil
}

func startLocked(c EmbeddedConfig, lock *os.File, log *slog.Logger) (*Server, error) {
	addr := net.JoinHostPort(c.Host, strconv.Itoa(max(c.Port, 0)))
	if c.Port != RandomPort {
		// nats-server reports a listen failure only in its log; find it
		// first, to say which setting to change.
		l, err := net.Listen("tcp", addr)
		if err != nil {
			return nil, &PortInUseError{Addr: addr, Err: errors.Unwrap(err)}
		}
		_ = l.Close()
	}
	dir, err := filepath.Abs(c.StoreDir)
	if err != nil {
		return nil, fmt.Errorf("jetstream: embedded.store_dir: %w", err)
	}
	opts := &server.Options{
		ServerName: serverName,
		Host:       c.Host,
		Port:       c.Port,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("jetstream: embedded server: %w", err)
	}
	sl := &serverLog{log: log.With("component", "nats-server")}
	ns.SetLoggerV2(sl, false, false, false)
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		ns.WaitForShutdown()
		if f := sl.fatal(); f != "" {
			if strings.Contains(f, "listen") {
				return nil, &PortInUseError{Addr: addr, Err: errors.New(f)}
			}
			return nil, fmt.Errorf("jetstream: embedded server: %s", f)
		}
		return nil, errors.New("jetstream: embedded server not ready after 30s")
	}
	s := &Server{ns: ns, lock: lock, url: ns.ClientURL(), slog: sl}
	if err := writeLockURL(lock, s.url); err != nil {
		s.Shutdown()
		return nil, err
	}
	log.Info("embedded nats server started", "url", s.url, "store_dir", dir)
	return s, nil
}

// ClientURL is the URL clients connect to (nats://host:port).
func (s *Server) ClientURL() string { return s.url }

// NATS returns the underlying server.
func (s *Server) NATS() *server.Server { return s.ns }

// Shutdown stops the server, waits until it has stopped and releases the
// store directory. It is safe to call more than once.
func (s *Server) Shutdown() {
	s.once.Do(func() {
		s.ns.Shutdown()
		s.ns.WaitForShutdown()
		_ = unlockStore(s.lock)
	})
}

// runningURL returns the client URL of the embedded server another process
// runs on dir, if one does.
func runningURL(dir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dir, lockName))
	if err != nil {
		return "", false
	}
	u := strings.TrimSpace(string(b))
	return u, strings.HasPrefix(u, "nats://")
}

func writeLockURL(f *os.File, url string) error {
	if err := f.Truncate(0); err != nil {
		return fmt.Errorf("jetstream: lock file: %w", err)
	}
	if _, err := f.WriteAt([]byte(url+"\n"), 0); err != nil {
		return fmt.Errorf("jetstream: lock file: %w", err)
	}
	return nil
}

// serverLog adapts nats-server's logger to slog; notices are debug-level,
// the first fatal message is kept to explain a failed start, and the first
// store write failure is kept for StoreFault.
type serverLog struct {
	log   *slog.Logger
	mu    sync.Mutex
	msg   string
	fault string
}

// storeFaultText marks the error line of a store write failure: the file
// store then refuses every later write of that stream.
const storeFaultText = "Critical write error"

func (l *serverLog) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.msg
}

func (l *serverLog) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *serverLog) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *serverLog) Errorf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	if strings.Contains(msg, storeFaultText) {
		l.mu.Lock()
		if l.fault == "" {
			l.fault = msg
		}
		l.mu.Unlock()
	}
	l.log.Error(msg)
}

// StoreFault returns an error describing the first store write failure the
// server reported, or nil if there was none. A stream that failed to write
// stores nothing more until the server restarts.
func (s *Server) StoreFault() error {
	s.slog.mu.Lock()
	defer s.slog.mu.Unlock()
	if s.slog.fault == "" {
		return nil
	}
	return fmt.Errorf("jetstream: the embedded server's store failed: %s", s.slog.fault)
}
func (l *serverLog) Debugf(format string, v ...any) {}
func (l *serverLog) Tracef(format string, v ...any) {}
func (l *serverLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	if l.msg == "" {
		l.msg = msg
	}
	l.mu.Unlock()
	l.log.Error(msg)
}
