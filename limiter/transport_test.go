package limiter

import (
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

func TestTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, func(c *Config) { c.Burst = time.Second; c.QueueLimit = 0 }) // capacity 10
		var sent []string
		status := http.StatusOK
		base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
			sent = append(sent, r.URL.Path)
			if status == 0 {
				return nil, errors.New("connection refused")
			}
			h := http.Header{}
			if status == http.StatusServiceUnavailable {
				h.Set("Retry-After", "3")
			}
			return &http.Response{StatusCode: status, Header: h, Body: http.NoBody}, nil
		})
		tr := &Transport{
			Limiter: l,
			Base:    base,
			Cost:    CostByKey{Costs: map[string]float64{"big": 8}},
			Key: func(r *http.Request) string {
				if strings.HasPrefix(r.URL.Path, "/big") {
					return "big"
				}
				return "small"
			},
		}
		do := func(path string) (*http.Response, error) {
			req, _ := http.NewRequestWithContext(t.Context(), "POST", "http://api.test"+path, nil)
			body := &closeRecorder{Reader: strings.NewReader("x")}
			req.Body = body
			resp, err := tr.RoundTrip(req)
			if errors.Is(err, ErrRejected) && !body.closed {
				t.Errorf("%s: body not closed on error", path)
			}
			return resp, err
		}
		if _, err := do("/big/1"); err != nil {
			t.Fatal(err)
		}
		if st := l.Stats(); st.Tokens != 2 {
			t.Fatalf("tokens %v after 8 units, want 2", st.Tokens)
		}
		// 8 more units are not there and the queue takes none: rejected,
		// not sent.
		if _, err := do("/big/2"); !errors.Is(err, ErrRejected) {
			t.Fatalf("err = %v, want ErrRejected", err)
		}
		if len(sent) != 1 {
			t.Fatalf("sent %v, want only the first", sent)
		}
		// A network error changes nothing; a 503 with Retry-After is a
		// throttle: cut and pause.
		status = 0
		if _, err := do("/small"); err == nil {
			t.Fatal("network error not returned")
		}
		if r := l.Rate(); r != 600 {
			t.Fatalf("rate %v after a network error, want 600", r)
		}
		status = http.StatusServiceUnavailable
		if _, err := do("/small"); err != nil {
			t.Fatal(err)
		}
		st := l.Stats()
		if st.Rate != 420 || !st.Paused || time.Until(st.PausedUntil) != 3*time.Second {
			t.Fatalf("after 503 with Retry-After: %+v", st)
		}
		if _, err := (&Transport{}).RoundTrip(&http.Request{}); err == nil {
			t.Error("Transport without a Limiter did not fail")
		}
	})
}
