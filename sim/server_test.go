package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(d time.Duration) {
	c.mu.Lock()
	c.t = epoch.Add(d)
	c.mu.Unlock()
}

func newTestServer(t *testing.T, f func(*ServerConfig)) (*Server, *fakeClock) {
	t.Helper()
	clk := &fakeClock{t: epoch}
	cfg := DefaultServerConfig()
	cfg.Now = clk.Now
	if f != nil {
		f(&cfg)
	}
	s, err := NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, clk
}

func serve(t *testing.T, h http.Handler, header map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/items/1", strings.NewReader(`{"x":1}`))
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

func TestServerRetryAfterAndCosts(t *testing.T) {
	var log bytes.Buffer
	s, clk := newTestServer(t, func(c *ServerConfig) {
		c.Quota = 10
		c.TypeCosts = map[string]float64{"export": 5}
		c.Log = &log
	})
	if rec := serve(t, s, map[string]string{"Sluice-Type": "export", "Sluice-Job-Id": "a"}); rec.Code != 200 {
		t.Fatalf("export: %d %s", rec.Code, rec.Body)
	}
	clk.Set(10 * time.Second)
	if rec := serve(t, s, map[string]string{"X-Cost": "4", "X-Job-Id": "b"}); rec.Code != 200 {
		t.Fatalf("X-Cost 4: %d", rec.Code)
	}
	clk.Set(20*time.Second + 300*time.Millisecond)
	// 9 units in the window; 2 more fit only once the 5 taken at 0 s leave
	// at 60 s: an exact wait of 39.7 s, sent as 40.
	rec := serve(t, s, map[string]string{"X-Job-Type": "other", "X-Cost": "2"})
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "40" {
		t.Fatalf("want 429 with Retry-After 40, got %d %q", rec.Code, rec.Header().Get("Retry-After"))
	}
	if rec := serve(t, s, map[string]string{"Sluice-Job-Id": "c"}); rec.Code != 200 { // default cost 1 fits
		t.Fatalf("default cost: %d", rec.Code)
	}
	clk.Set(60 * time.Second)
	if rec := serve(t, s, map[string]string{"X-Cost": "2", "Sluice-Job-Id": "a"}); rec.Code != 200 {
		t.Fatalf("after Retry-After: %d", rec.Code)
	}
	if rec := serve(t, s, map[string]string{"X-Cost": "-1"}); rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), "X-Cost") {
		t.Fatalf("bad cost: %d %s", rec.Code, rec.Body)
	}
	if rec := serve(t, s, map[string]string{"X-Cost": "11"}); rec.Code != http.StatusRequestEntityTooLarge {
		t.Fatalf("cost over the quota: %d", rec.Code)
	}
	st := s.Stats()
	want := Stats{AcceptedUnits: 12, AcceptedRequests: 4, Throttled: 1, WindowUnits: 7, Quota: 10, WindowSeconds: 60,
		TooLarge: 1, BadRequests: 1, Jobs: JobStats{Distinct: 3, Duplicates: 1}}
	if st != want {
		t.Fatalf("stats %+v\nwant  %+v", st, want)
	}
	if log.String() != "a\nb\nc\na\n" {
		t.Fatalf("log %q", log.String())
	}
	rec = httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/jobs", nil))
	if strings.TrimSpace(rec.Body.String()) != `{"a":2,"b":1,"c":1}` {
		t.Fatalf("/jobs: %s", rec.Body)
	}
}

// The leaky bucket over HTTP: quota/window leaks out at a steady rate, a
// call may go ahead of it by the burst, and a refused call's Retry-After is
// the exact wait rounded up to whole seconds, at least 1.
func TestServerLeaky(t *testing.T) {
	s, clk := newTestServer(t, func(c *ServerConfig) {
		c.API, c.Quota, c.BurstUnits = APILeaky, 60, 2 // 1 unit/s
	})
	steps := []struct {
		at   time.Duration
		cost string
		code int
		ra   string
	}{
		{0, "1", 200, ""},
		{0, "1", 200, ""},
		{0, "1", 429, "1"},                      // exactly 1 s early
		{500 * time.Millisecond, "1", 429, "1"}, // 0.5 s early: rounded up
		{time.Second, "1", 200, ""},
		{time.Second, "3", 429, "3"},     // 3 units ahead of the burst: 3 s
		{10 * time.Second, "3", 200, ""}, // 9 s idle leaked it all
		{10 * time.Second, "2", 200, ""},
		{10 * time.Second, "1", 429, "1"},
		{10 * time.Second, "61", 413, ""}, // above the quota: never fits
	}
	for i, st := range steps {
		clk.Set(st.at)
		rec := serve(t, s, map[string]string{"X-Cost": st.cost})
		if rec.Code != st.code || rec.Header().Get("Retry-After") != st.ra {
			t.Fatalf("step %d (cost %s at %v): %d Retry-After %q, want %d %q", i, st.cost, st.at, rec.Code, rec.Header().Get("Retry-After"), st.code, st.ra)
		}
	}
	if st := s.Stats(); st.AcceptedUnits != 8 || st.Throttled != 4 || st.TooLarge != 1 || st.WindowUnits != 8 {
		t.Fatalf("stats %+v", st)
	}
	if _, err := NewServer(ServerConfig{API: APILeaky, Quota: 1, Window: time.Minute, BurstUnits: -1}); err == nil || !strings.Contains(err.Error(), "burst_units") {
		t.Fatalf("negative burst: %v", err)
	}
}

// A gateway's refusal with NoRetryAfter: a 429 that names no wait, in its
// header or its body.
func TestServerNoRetryAfter(t *testing.T) {
	s, _ := newTestServer(t, func(c *ServerConfig) {
		c.API, c.Quota, c.BurstUnits, c.NoRetryAfter = APILeaky, 60, 1, true
	})
	if rec := serve(t, s, map[string]string{"X-Cost": "1"}); rec.Code != http.StatusOK {
		t.Fatalf("first call: %d", rec.Code)
	}
	rec := serve(t, s, map[string]string{"X-Cost": "1"})
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "" || strings.Contains(rec.Body.String(), "retry_after") {
		t.Fatalf("refusal: %d Retry-After %q body %s, want 429 with no wait named", rec.Code, rec.Header().Get("Retry-After"), rec.Body)
	}
}

// The fixed window, with refused calls counted, and Envoy's bucket over
// HTTP: Retry-After to the reset and to the fill that makes room, rounded
// up; the fixed window's quota headers count down to the reset.
func TestServerFixedAndBucket(t *testing.T) {
	type step struct {
		at   time.Duration
		cost string
		code int
		ra   string
	}
	check := func(name string, s *Server, clk *fakeClock, steps []step) {
		t.Helper()
		for i, st := range steps {
			clk.Set(st.at)
			rec := serve(t, s, map[string]string{"X-Cost": st.cost})
			if rec.Code != st.code || rec.Header().Get("Retry-After") != st.ra {
				t.Fatalf("%s, step %d (cost %s at %v): %d Retry-After %q, want %d %q", name, i, st.cost, st.at, rec.Code, rec.Header().Get("Retry-After"), st.code, st.ra)
			}
		}
	}
	fixed, clk := newTestServer(t, func(c *ServerConfig) {
		c.API, c.Quota, c.Window, c.CountRefused = APIFixed, 5, 10*time.Second, true
		c.Headers = call.RateLimitHeaders{Format: call.RateLimitX}
	})
	check("fixed", fixed, clk, []step{
		{time.Second, "4", 200, ""},              // the window [1s, 11s)
		{2 * time.Second, "2", 429, "9"},         // refused, and counted
		{2500 * time.Millisecond, "1", 429, "9"}, // 8.5 s: rounded up
		{11 * time.Second, "5", 200, ""},
		{11 * time.Second, "6", 413, ""},
	})
	clk.Set(14 * time.Second)
	rec := serve(t, fixed, map[string]string{"X-Cost": "0"})
	if h := rec.Header(); h.Get("X-RateLimit-Remaining") != "0" || h.Get("X-RateLimit-Reset") != "7" || h.Get("X-RateLimit-Limit") != "5" {
		t.Fatalf("fixed window's headers at 14s: %v", h)
	}
	if st := fixed.Stats(); st.AcceptedUnits != 9 || st.Throttled != 2 || st.TooLarge != 1 || st.WindowUnits != 5 {
		t.Fatalf("fixed stats %+v", st)
	}

	bucket, clk := newTestServer(t, func(c *ServerConfig) {
		c.API, c.Quota, c.BurstUnits, c.FillInterval = APIBucket, 120, 4, 2*time.Second // 4 tokens every 2 s
	})
	check("bucket", bucket, clk, []step{
		{0, "4", 200, ""},
		{500 * time.Millisecond, "1", 429, "2"}, // 1.5 s to the fill at 2s
		{2 * time.Second, "3", 200, ""},
		{2 * time.Second, "4", 429, "2"}, // 1 token: one more fill
		{4 * time.Second, "5", 413, ""},  // above the bucket
		{4 * time.Second, "4", 200, ""},
	})
	if _, err := NewServer(ServerConfig{API: APIBucket, Quota: 600, Window: time.Minute, BurstUnits: 5, FillInterval: time.Second}); err == nil || !strings.Contains(err.Error(), "burst_units") {
		t.Fatalf("a bucket below one fill: %v", err)
	}
	if _, err := NewServer(ServerConfig{API: APIBucket, Quota: 600, Window: time.Minute, BurstUnits: 10, Headers: call.RateLimitHeaders{Format: call.RateLimitIETF}, FillInterval: time.Second}); err == nil || !strings.Contains(err.Error(), "headers") {
		t.Fatalf("headers from a bucket: %v", err)
	}
}

// TestServerConcurrent sends calls from many goroutines over a real
// loopback connection and checks that the server's accounting matches the
// clients' tally exactly and never passes the quota.
func TestServerConcurrent(t *testing.T) {
	s, clk := newTestServer(t, func(c *ServerConfig) { c.Quota = 700 })
	ts := httptest.NewServer(s)
	defer ts.Close()
	const workers, calls = 16, 40
	var (
		mu                        sync.Mutex
		units                     float64
		accepted, throttled, dups int
		seen                      = map[string]bool{}
	)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 1))
			for i := range calls {
				cost := 1 + rng.IntN(5)
				id := fmt.Sprintf("job-%d", rng.IntN(workers*calls))
				req, _ := http.NewRequest(http.MethodPut, ts.URL+"/x", nil)
				req.Header.Set("X-Cost", strconv.Itoa(cost))
				req.Header.Set("Sluice-Job-Id", id)
				resp, err := ts.Client().Do(req)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				mu.Lock()
				switch resp.StatusCode {
				case 200:
					accepted++
					units += float64(cost)
					if seen[id] {
						dups++
					}
					seen[id] = true
				case 429:
					throttled++
				default:
					t.Errorf("status %d", resp.StatusCode)
				}
				mu.Unlock()
				if i == calls/2 && g == 0 {
					clk.Set(30 * time.Second)
				}
			}
		}()
	}
	wg.Wait()
	resp, err := ts.Client().Get(ts.URL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if st.AcceptedUnits != units || st.AcceptedRequests != int64(accepted) || st.Throttled != int64(throttled) ||
		st.Jobs.Duplicates != int64(dups) || st.Jobs.Distinct != int64(len(seen)) {
		t.Fatalf("server %+v; clients: %v units, %d accepted, %d throttled, %d distinct, %d duplicates",
			st, units, accepted, throttled, len(seen), dups)
	}
	if units > 700 || st.WindowUnits != units || throttled == 0 {
		t.Fatalf("%v units accepted in one window of quota 700 (window %v), %d throttled", units, st.WindowUnits, throttled)
	}
}

func TestServerConfigValidate(t *testing.T) {
	_, err := NewServer(ServerConfig{Quota: -1, TypeCosts: map[string]float64{"x": -2}})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"quota", "window", "type_costs[x]"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}

// With Delay the server answers an accepted call that went ahead of the
// rate at its turn, and a refused one at once. A held call reaches the API
// at its turn: one whose client gives up before is never counted.
func TestServerLeakyDelay(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var log bytes.Buffer
		s, _ := newTestServer(t, func(c *ServerConfig) {
			c.API, c.Quota, c.BurstUnits, c.Delay, c.Log = APILeaky, 60, 2, true, &log // 1 unit/s
		})
		for i, want := range []struct {
			code int
			held time.Duration
		}{{200, time.Second}, {200, 2 * time.Second}, {429, 0}} {
			start := time.Now()
			rec := serve(t, s, map[string]string{"X-Cost": "1", JobIDHeader: fmt.Sprint("j", i)})
			if rec.Code != want.code || time.Since(start) != want.held {
				t.Fatalf("call %d: %d after %v, want %d after %v", i, rec.Code, time.Since(start), want.code, want.held)
			}
		}

		s, _ = newTestServer(t, func(c *ServerConfig) {
			c.API, c.Quota, c.BurstUnits, c.Delay, c.Log = APILeaky, 60, 2, true, &log
		})
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/", nil)
		req.Header.Set(JobIDHeader, "gave-up")
		s.ServeHTTP(httptest.NewRecorder(), req) // held 1 s
		if st := s.Stats(); st.AcceptedRequests != 0 || log.String() != "j0\nj1\n" {
			t.Fatalf("a call given up while held: stats %+v, log %q", st, log.String())
		}
	})
	if _, err := NewServer(ServerConfig{API: APIWindow, Quota: 1, Window: time.Minute, Delay: true}); err == nil || !strings.Contains(err.Error(), "delay") {
		t.Fatalf("delay with the window api: %v", err)
	}
}
