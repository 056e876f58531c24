package faults

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// Mode is what the Proxy does with a call.
type Mode int32

const (
	// Pass forwards every call to the target.
	Pass Mode = iota
	// Fail answers 500 without forwarding.
	Fail
	// Hang accepts the call and never answers: the handler holds it until
	// the caller gives up.
	Hang
)

// Proxy stands in front of the target (`sluice testserver`) and injects
// the target's faults: it forwards calls in Pass mode, answers 500 in Fail
// mode, and holds calls without an answer in Hang mode. The target's own
// log stays the record of accepted calls: a failed or hung call never
// reaches it.
type Proxy struct {
	mode    atomic.Int32
	delay   atomic.Int64 // added before forwarding, in ns
	rp      *httputil.ReverseProxy
	srv     *http.Server
	ln      net.Listener
	closing chan struct{}

	Forwarded atomic.Int64 // calls forwarded
	Failed    atomic.Int64 // calls answered 500
	Hung      atomic.Int64 // calls held without an answer
	GaveUp    atomic.Int64 // held calls the caller gave up on (its timeout)
}

// NewProxy listens on a free loopback port and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("faults: proxy target: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faults: proxy: %w", err)
	}
	p := &Proxy{ln: ln, closing: make(chan struct{})}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) { r.SetURL(u) },
		Transport: &http.Transport{
			MaxIdleConns:        512,
			MaxIdleConnsPerHost: 512,
			IdleConnTimeout:     30 * time.Second,
		},
		// A slow target: the call is made (the target has accepted it)
		// and the answer held back.
		ModifyResponse: func(resp *http.Response) error {
			d := time.Duration(p.delay.Load())
			if d <= 0 {
				return nil
			}
			t := time.NewTimer(d)
			defer t.Stop()
			select {
			case <-t.C:
				return nil
			case <-resp.Request.Context().Done():
				return resp.Request.Context().Err()
			}
		},
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, _ error) { w.WriteHeader(http.StatusBadGateway) },
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's base URL.
func (p *Proxy) URL() string { return "http://" + p.ln.Addr().String() }

// SetMode switches the fault mode for calls that arrive from now on.
func (p *Proxy) SetMode(m Mode) { p.mode.Store(int32(m)) }

// SetDelay holds the answer to every forwarded call for d, after the
// target has accepted it (a slow target).
func (p *Proxy) SetDelay(d time.Duration) { p.delay.Store(int64(d)) }

// ServeHTTP implements http.Handler.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch Mode(p.mode.Load()) {
	case Fail:
		p.Failed.Add(1)
		http.Error(w, "injected failure", http.StatusInternalServerError)
		return
	case Hang:
		// Read the call whole, so that the server notices when the
		// caller gives up and closes the connection.
		_, _ = io.Copy(io.Discard, r.Body)
		p.Hung.Add(1)
		select {
		case <-r.Context().Done():
			p.GaveUp.Add(1)
		case <-p.closing:
		}
		return
	}
	p.Forwarded.Add(1)
	p.rp.ServeHTTP(w, r)
}

// Close stops the proxy and releases hung calls.
func (p *Proxy) Close() {
	close(p.closing)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = p.srv.Shutdown(ctx)
}
