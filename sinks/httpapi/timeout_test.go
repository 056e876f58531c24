package httpapi_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/sinks/httpapi"
)

// pipeNet is an in-memory network: an http.Server serves the connections
// that a client transport dials, over net.Pipe, so that a whole HTTP
// exchange runs inside a synctest bubble on the fake clock.
type pipeNet struct {
	conns     chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newPipeNet() *pipeNet {
	return &pipeNet{conns: make(chan net.Conn), done: make(chan struct{})}
}

func (p *pipeNet) Accept() (net.Conn, error) {
	select {
	case c := <-p.conns:
		return c, nil
	case <-p.done:
		return nil, net.ErrClosed
	}
}

func (p *pipeNet) Close() error {
	p.closeOnce.Do(func() { close(p.done) })
	return nil
}

func (p *pipeNet) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 80} }

func (p *pipeNet) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case p.conns <- server:
		return client, nil
	case <-p.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// serveInBubble starts h on a pipe network and returns a sink option that
// routes the sink's requests to it. Everything is stopped at the end of the
// bubble's test.
func serveInBubble(t *testing.T, h http.HandlerFunc) httpapi.Option {
	pn := newPipeNet()
	srv := &http.Server{Handler: h}
	go srv.Serve(pn)
	tr := &http.Transport{DialContext: pn.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
	})
	return httpapi.WithMiddleware(func(http.RoundTripper) http.RoundTripper { return tr })
}

func TestTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		opt := serveInBubble(t, func(w http.ResponseWriter, r *http.Request) {
			switch r.URL.Path {
			case "/slow": // answers after 20s
				select {
				case <-time.After(20 * time.Second):
				case <-r.Context().Done():
				}
				return
			case "/half": // headers, then a body that never ends
				w.Write([]byte("partial"))
				w.(http.Flusher).Flush()
			}
			select {
			case <-release:
			case <-r.Context().Done():
			}
		})
		defer close(release)
		s, err := httpapi.New(httpapi.Config{BaseURL: "http://target.test"}, opt)
		if err != nil {
			t.Fatal(err)
		}

		start := time.Now()
		res, err := s.Send(context.Background(), call.Request{Path: "/hang"})
		if !errors.Is(err, httpapi.ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("hang: err = %v; want ErrTimeout", err)
		}
		if took := time.Since(start); took != httpapi.DefaultTimeout {
			t.Errorf("hang: gave up after %v; want the default timeout %v", took, httpapi.DefaultTimeout)
		}
		if res.Outcome.Kind != call.NetworkError || res.Latency != httpapi.DefaultTimeout {
			t.Errorf("hang: result %+v", res)
		}

		res, err = s.Send(context.Background(), call.Request{Path: "/half"})
		if !errors.Is(err, httpapi.ErrTimeout) || res.Status != 200 || res.Outcome.Kind != call.NetworkError {
			t.Fatalf("half: %+v, %v; want status 200, a network error, ErrTimeout", res, err)
		}

		// Within the timeout: a slow answer is an answer.
		start = time.Now()
		res, err = s.Send(context.Background(), call.Request{Path: "/slow"})
		if err != nil || res.Status != 200 || res.Latency != 20*time.Second || time.Since(start) != 20*time.Second {
			t.Fatalf("slow: %+v, %v", res, err)
		}

		// A shorter timeout from the config.
		short, err := httpapi.New(httpapi.Config{BaseURL: "http://target.test", Timeout: 5 * time.Second}, opt)
		if err != nil {
			t.Fatal(err)
		}
		start = time.Now()
		if _, err := short.Send(context.Background(), call.Request{Path: "/slow"}); !errors.Is(err, httpapi.ErrTimeout) {
			t.Fatalf("short: err = %v; want ErrTimeout", err)
		}
		if took := time.Since(start); took != 5*time.Second {
			t.Errorf("short: gave up after %v; want 5s", took)
		}
	})
}

func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		opt := serveInBubble(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
		s, err := httpapi.New(httpapi.Config{BaseURL: "http://target.test"}, opt)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(3*time.Second, cancel)
		res, err := s.Send(ctx, call.Request{Path: "/hang"})
		if !errors.Is(err, context.Canceled) || errors.Is(err, httpapi.ErrTimeout) {
			t.Fatalf("err = %v; want context.Canceled and no ErrTimeout", err)
		}
		if res.Outcome.Kind != call.NetworkError {
			t.Errorf("outcome %v; want network_error", res.Outcome.Kind)
		}

		// A parent deadline shorter than the timeout is the caller's, not
		// a timeout of the target.
		ctx, cancel = context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := s.Send(ctx, call.Request{Path: "/hang"}); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, httpapi.ErrTimeout) {
			t.Fatalf("err = %v; want the caller's deadline, not ErrTimeout", err)
		}
	})
}
