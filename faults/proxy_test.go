package faults

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The proxy forwards in Pass mode, answers 500 without forwarding in Fail
// mode, and in Hang mode holds the call until the caller gives up. It runs
// over real sockets, so it waits with bounded polling.
func TestProxy(t *testing.T) {
	var reached atomic.Int64
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		io.WriteString(w, "ok "+r.URL.Path)
	}))
	defer target.Close()
	p, err := NewProxy(target.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	call := func(ctx context.Context) (int, string, error) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, p.URL()+"/jobs", strings.NewReader(`{"n":1}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}

	if code, body, err := call(t.Context()); err != nil || code != 200 || body != "ok /jobs" {
		t.Fatalf("pass: %d %q %v", code, body, err)
	}
	p.SetMode(Fail)
	if code, _, err := call(t.Context()); err != nil || code != 500 {
		t.Fatalf("fail: %d %v", code, err)
	}
	if reached.Load() != 1 || p.Forwarded.Load() != 1 || p.Failed.Load() != 1 {
		t.Fatalf("reached %d, forwarded %d, failed %d; want 1, 1, 1", reached.Load(), p.Forwarded.Load(), p.Failed.Load())
	}

	p.SetMode(Hang)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { _, _, err := call(ctx); done <- err }()
	if err := WaitFor(t.Context(), "the call held", 10*time.Second, 10*time.Millisecond, func() bool { return p.Hung.Load() == 1 }); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("a held call was answered: %v", err)
	default:
	}
	cancel() // the caller's timeout
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("held call: %v, want context canceled", err)
	}
	if err := WaitFor(t.Context(), "the proxy to see the caller give up", 10*time.Second, 10*time.Millisecond, func() bool { return p.GaveUp.Load() == 1 }); err != nil {
		t.Fatal(err)
	}
	if reached.Load() != 1 {
		t.Errorf("a held call reached the target")
	}

	// A slow target: the call reaches it, the answer comes later.
	p.SetMode(Pass)
	p.SetDelay(50 * time.Millisecond)
	if code, _, err := call(t.Context()); err != nil || code != 200 || reached.Load() != 2 {
		t.Fatalf("delayed pass: %d %v, reached %d", code, err, reached.Load())
	}
}

func TestNodeConfigArgs(t *testing.T) {
	c := NodeConfig{Name: "n1", Port: 4300, StoreDir: "/s", Cluster: "c", ClusterPort: 6300, Routes: []string{"nats-route://127.0.0.1:6301", "nats-route://127.0.0.1:6302"}}
	got := strings.Join(c.Args(), " ")
	want := "natsd -name n1 -port 4300 -store /s -cluster c -cluster-port 6300 -routes nats-route://127.0.0.1:6301,nats-route://127.0.0.1:6302"
	if got != want {
		t.Errorf("args = %q, want %q", got, want)
	}
	if got := strings.Join(NodeConfig{Name: "n", Port: 1, StoreDir: "/s"}.Args(), " "); got != "natsd -name n -port 1 -store /s" {
		t.Errorf("single node args = %q", got)
	}
}
