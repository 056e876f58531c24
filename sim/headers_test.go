package sim

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

func TestWindowState(t *testing.T) {
	w := Window{Span: time.Minute, Quota: 100}
	if s := w.State(epoch); s != (QuotaState{Limit: 100, Window: time.Minute, Remaining: 100}) {
		t.Errorf("empty window: %+v", s)
	}
	w.Take(epoch.Add(10*time.Second), 30)
	w.Take(epoch.Add(20*time.Second), 50)
	want := QuotaState{Limit: 100, Window: time.Minute, Remaining: 20, Reset: 45 * time.Second}
	if s := w.State(epoch.Add(25 * time.Second)); s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
	// The first 30 units leave at 70 s: 50 remain in the window until 80 s.
	want = QuotaState{Limit: 100, Window: time.Minute, Remaining: 50, Reset: 9 * time.Second}
	if s := w.State(epoch.Add(71 * time.Second)); s != want {
		t.Errorf("got %+v, want %+v", s, want)
	}
}

// The headers the model API writes read back, through the limiter's
// parser, as the state they came from (whole units down, whole seconds up).
func TestQuotaHeadersRoundTrip(t *testing.T) {
	now := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	st := QuotaState{Limit: 3000, Window: time.Minute, Remaining: 41.5, Reset: 2300 * time.Millisecond}
	want := call.Quota{Limit: 3000, Window: time.Minute, Remaining: 41, HasRemaining: true, Reset: 3 * time.Second}
	for _, rl := range []call.RateLimitHeaders{
		{Format: call.RateLimitIETF},
		{Format: call.RateLimitX},
		{Format: call.RateLimitX, Reset: call.UnitUnixTime},
	} {
		t.Run(fmt.Sprint(rl), func(t *testing.T) {
			h := http.Header{}
			SetQuotaHeaders(h, rl, st, now)
			got := rl.Parse(h, now)
			w := want
			if rl.Format == call.RateLimitX {
				w.Window = 0 // X-RateLimit-* announce no window
			}
			if got != w {
				t.Errorf("headers %v read as %+v, want %+v", h, got, w)
			}
		})
	}
	h := http.Header{}
	SetQuotaHeaders(h, call.RateLimitHeaders{}, st, now)
	if len(h) != 0 {
		t.Errorf("format none wrote %v", h)
	}
}

func TestServerSendsQuotaHeaders(t *testing.T) {
	s, clk := newTestServer(t, func(c *ServerConfig) {
		c.Quota = 10
		c.Headers = call.RateLimitHeaders{Format: call.RateLimitIETF}
	})
	clk.Set(time.Second)
	post := func(cost string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodPost, "/items/1", nil)
		req.Header.Set(CostHeader, cost)
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, req)
		return rec
	}
	rec := post("4")
	if rec.Code != http.StatusOK || rec.Header().Get("RateLimit") != `"window";r=6;t=60` ||
		rec.Header().Get("RateLimit-Policy") != `"window";q=10;w=60` {
		t.Fatalf("200: %d %v", rec.Code, rec.Header())
	}
	clk.Set(31 * time.Second)
	rec = post("7")
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("RateLimit") != `"window";r=6;t=30` {
		t.Fatalf("429: %d %v", rec.Code, rec.Header())
	}
}

// With quota headers the limiters find the quota at once and drain without
// a throttle, in every mode that adapts, for either family of headers, over
// the 15 minutes of the ramp and several seeds: the two instances' budgets
// must not overlap (each counts the other's units in flight).
func TestHeadersDrainWithoutThrottles(t *testing.T) {
	for _, rl := range []call.RateLimitHeaders{{Format: call.RateLimitIETF}, {Format: call.RateLimitX, Reset: call.UnitUnixTime}} {
		for _, mode := range []Mode{ModeAIMD, ModeCUBIC} {
			for _, seed := range []uint64{1, 7, 23} {
				t.Run(fmt.Sprint(rl.Format, mode, seed), func(t *testing.T) {
					cfg, err := Scenario(ScenarioRamp)
					if err != nil {
						t.Fatal(err)
					}
					cfg.Quota, cfg.Demand, cfg.Mode, cfg.Headers, cfg.Seed = 3000, 2000, mode, rl, seed
					res, err := Run(cfg)
					if err != nil {
						t.Fatal(err)
					}
					s := res.Summary
					if s.Throttled > 0 || s.UtilizationSteady < 0.97 || s.TimeTo90Seconds == nil || *s.TimeTo90Seconds > 75 {
						t.Errorf("throttled %d, utilization_steady %v, time_to_90_s %v", s.Throttled, s.UtilizationSteady, s.TimeTo90Seconds)
					}
				})
			}
		}
	}
}
