package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/internal/testkit/jsclient"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// startServer runs an embedded nats-server with JetStream on a random
// port, storing in a temporary directory.
func startServer(t *testing.T) *natsjs.Server {
	t.Helper()
	srv, err := natsjs.StartServer(natsjs.EmbeddedConfig{StoreDir: t.TempDir(), Host: "127.0.0.1", Port: natsjs.RandomPort}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Shutdown)
	return srv
}

// connect opens a separate connection to url, as a worker process would.
func connect(t *testing.T, url string) jetstream.JetStream {
	t.Helper()
	return jsclient.Connect(t, url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond),
		nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {}))
}

// helperSpec is what a member process runs.
type helperSpec struct {
	URL        string        `json:"url"`
	Bucket     string        `json:"bucket"`
	ID         string        `json:"id"`
	TTL        time.Duration `json:"ttl"`
	Mode       string        `json:"mode"` // members or leases
	Partitions int           `json:"partitions"`
	Budget     float64       `json:"budget"` // whole budget, units per minute
	Writes     bool          `json:"writes"` // print an event for every heartbeat written
}

// event is one line a member process prints: its count or its leases
// changed, or (Write) it wrote its heartbeat, at wall-clock time T (Unix
// ns; all processes share the clock).
type event struct {
	T     int64   `json:"t"`
	Write bool    `json:"write,omitempty"`
	N     int     `json:"n,omitempty"`
	Held  []int   `json:"held"`
	Share float64 `json:"share,omitempty"` // the limiter's share after the change
	Rate  float64 `json:"rate,omitempty"`  // the limiter's rate after the change
	Exit  bool    `json:"exit,omitempty"`
	Error string  `json:"error,omitempty"`
}

const helperEnv = "SLUICE_CLUSTER_HELPER"

// TestHelperMember is a member process: it joins as the spec in the
// environment says, with a real limiter, prints an event on every change,
// and leaves cleanly on SIGTERM.
func TestHelperMember(t *testing.T) {
	raw := os.Getenv(helperEnv)
	if raw == "" {
		t.Skip("helper process for the process tests")
	}
	var spec helperSpec
	if err := json.Unmarshal([]byte(raw), &spec); err != nil {
		fmt.Println(`{"error":"bad spec"}`)
		os.Exit(2)
	}
	var mu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	emit := func(e event) {
		mu.Lock()
		defer mu.Unlock()
		if e.T == 0 {
			e.T = time.Now().UnixNano()
		}
		_ = enc.Encode(e)
	}
	fail := func(err error) {
		emit(event{Error: err.Error()})
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	nc, err := nats.Connect(spec.URL, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		fail(err)
	}
	js, _ := jetstream.New(nc)
	lcfg := limiter.DefaultConfig()
	lcfg.InitialUnitsPerMinute, lcfg.MinUnitsPerMinute, lcfg.MaxUnitsPerMinute = spec.Budget, spec.Budget/100, spec.Budget*10
	lim, err := limiter.New(lcfg)
	if err != nil {
		fail(err)
	}
	cfg := Config{Bucket: spec.Bucket, ID: spec.ID, TTL: spec.TTL, Partitions: spec.Partitions}
	var opts []Option
	if spec.Writes {
		opts = append(opts, func(s *settings) {
			s.onWrite = func(at time.Time) { emit(event{T: at.UnixNano(), Write: true}) }
		})
	}
	if spec.Mode == "members" {
		opts = append(opts, WithInstanceCount(func(n int) {
			_ = lim.SetInstanceCount(n)
			st := lim.Stats()
			emit(event{N: n, Share: st.Share, Rate: st.Rate})
		}))
	}
	m, err := Join(ctx, js, cfg, opts...)
	if err != nil {
		fail(err)
	}
	if err := m.Drive(ctx, lim, false); err != nil { // its rate in the heartbeats
		fail(err)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return m.Run(gctx) })
	if spec.Mode == "leases" {
		// The time of a change is taken before the limiter grows and after
		// it shrinks, so that each interval in the log covers the time the
		// limiter ran on the leases.
		prev, at := 0.0, time.Now()
		l, err := NewLeases(ctx, m,
			WithShare(func(s float64) {
				if s > prev {
					at = time.Now()
				}
				_ = lim.SetShare(s)
				if s <= prev {
					at = time.Now()
				}
				prev = s
			}),
			func(s *settings) {
				s.onHeld = func(ps []int) {
					st := lim.Stats()
					emit(event{T: at.UnixNano(), Held: ps, Share: st.Share, Rate: st.Rate})
				}
			})
		if err != nil {
			fail(err)
		}
		g.Go(func() error { return l.Run(gctx) })
	}
	if err := g.Wait(); err != nil {
		fail(err)
	}
	emit(event{Exit: true})
	os.Exit(0)
}

// proc is a running member process and the events it printed.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{} // closed when its output ends

	mu      sync.Mutex
	events  []event
	changed chan struct{} // closed and replaced on every event
}

func startMember(t *testing.T, name string, spec helperSpec) *proc {
	t.Helper()
	spec.ID = name
	raw, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperMember$")
	cmd.Env = append(os.Environ(), helperEnv+"="+string(raw))
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), changed: make(chan struct{})}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e event
			if json.Unmarshal(sc.Bytes(), &e) != nil {
				continue // the test framework's own lines
			}
			p.mu.Lock()
			p.events = append(p.events, e)
			close(p.changed)
			p.changed = make(chan struct{})
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			_ = p.cmd.Process.Kill()
			_ = p.cmd.Wait()
		}
	})
	return p
}

// waitFor waits until one of p's events from index from on satisfies ok,
// or fails the test after a generous deadline. It returns the event and
// its index.
func (p *proc) waitFor(t *testing.T, from int, what string, ok func(event) bool) (event, int) {
	t.Helper()
	scan := func() (event, int, chan struct{}) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for i := from; i < len(p.events); i++ {
			if e := p.events[i]; e.Error != "" {
				t.Fatalf("%s: %s", p.name, e.Error)
			} else if ok(e) {
				return e, i, nil
			}
		}
		return event{}, -1, p.changed
	}
	deadline := time.After(60 * time.Second)
	for {
		e, i, ch := scan()
		if i >= 0 {
			return e, i
		}
		select {
		case <-ch:
		case <-p.done:
			if e, i, _ := scan(); i >= 0 {
				return e, i
			}
			t.Fatalf("%s exited before %s", p.name, what)
		case <-deadline:
			t.Fatalf("%s: no %s after 60s", p.name, what)
		}
	}
}

// last returns p's last event other than a heartbeat written.
func (p *proc) last() event {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i := len(p.events) - 1; i >= 0; i-- {
		if !p.events[i].Write {
			return p.events[i]
		}
	}
	return event{}
}

// writesBetween counts the heartbeats p wrote after wall-clock time after
// (Unix ns) among its events before index before.
func (p *proc) writesBetween(after int64, before int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.events[:before] {
		if e.Write && e.T > after {
			n++
		}
	}
	return n
}

func (p *proc) len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.events)
}

// kill SIGKILLs p and returns a time by which it is surely dead.
func (p *proc) kill(t *testing.T) time.Time {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
	<-p.done
	return time.Now()
}

// stop SIGTERMs p and waits until it has left and exited.
func (p *proc) stop(t *testing.T) time.Time {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Errorf("%s: %v", p.name, err)
	}
	return time.Now()
}
