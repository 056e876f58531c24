package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/sim"
)

func TestTestserverFlags(t *testing.T) {
	f := testserverFlags{quota: 100, window: 30e9, defaultCost: 2, typeCosts: []string{"export=5", " sync = 0.5 "}}
	cfg, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Quota != 100 || cfg.DefaultCost != 2 || cfg.TypeCosts["export"] != 5 || cfg.TypeCosts["sync"] != 0.5 || cfg.Headers.Format != call.RateLimitNone {
		t.Fatalf("config %+v", cfg)
	}
	f.headers = headersFlags{format: "x-ratelimit", reset: "unix"}
	if cfg, err = f.config(); err != nil || cfg.Headers != (call.RateLimitHeaders{Format: call.RateLimitX, Reset: call.UnitUnixTime}) {
		t.Fatalf("--headers x-ratelimit --headers-reset unix: %+v, %v", cfg.Headers, err)
	}
	f = testserverFlags{api: "leaky", burst: 3, quota: 1200, window: 60e9}
	if cfg, err = f.config(); err != nil || cfg.API != sim.APILeaky || cfg.BurstUnits != 3 {
		t.Fatalf("--api leaky --burst-units 3: %+v, %v", cfg, err)
	}
	f = testserverFlags{api: "fixed", quota: 5000, window: 3600e9, refused: true, headers: headersFlags{format: "x-ratelimit"}}
	if cfg, err = f.config(); err != nil || cfg.API != sim.APIFixed || !cfg.CountRefused || cfg.Window != time.Hour {
		t.Fatalf("--api fixed --window 1h --count-refused: %+v, %v", cfg, err)
	}
	f = testserverFlags{api: "bucket", quota: 1200, window: 60e9, fill: 2e9}
	if cfg, err = f.config(); err != nil || cfg.API != sim.APIBucket || cfg.BurstUnits != 40 || cfg.FillInterval != 2*time.Second {
		t.Fatalf("--api bucket --fill-interval 2s: %+v, %v", cfg, err)
	}
	f.burst, f.burstSet = 100, true
	if cfg, err = f.config(); err != nil || cfg.BurstUnits != 100 {
		t.Fatalf("--api bucket --burst-units 100: %+v, %v", cfg, err)
	}
	for _, c := range []struct {
		f    testserverFlags
		want string
	}{
		{testserverFlags{api: "token", quota: 1, window: 1}, "--api"},
		{testserverFlags{api: "bucket", quota: 600, window: 60e9, fill: 1e9, burst: 9, burstSet: true}, "--burst-units: must be at least one fill's tokens (--quota × --fill-interval / --window = 10)"},
		{testserverFlags{api: "bucket", quota: 600, window: 60e9}, "--fill-interval"},
		{testserverFlags{api: "bucket", quota: 600, window: 60e9, fill: 1e9, headers: headersFlags{format: "ietf"}}, "--headers: --api bucket"},
		{testserverFlags{api: "leaky", quota: 600, window: 60e9, refused: true}, "--count-refused"},
		{testserverFlags{api: "leaky", burst: -1, quota: 1, window: 1}, "--burst-units"},
		{testserverFlags{api: "leaky", quota: 1, window: 1, headers: headersFlags{format: "ietf"}}, "--headers"},
		{testserverFlags{quota: 0, window: 1}, "--quota"},
		{testserverFlags{quota: 1, window: 0}, "--window"},
		{testserverFlags{quota: 1, window: 1, defaultCost: -1}, "--default-cost"},
		{testserverFlags{quota: 1, window: 1, typeCosts: []string{"export"}}, "--type-cost"},
		{testserverFlags{quota: 1, window: 1, typeCosts: []string{"=3"}}, "--type-cost"},
		{testserverFlags{quota: 1, window: 1, typeCosts: []string{"x=-3"}}, "--type-cost"},
		{testserverFlags{quota: 1, window: 1, headers: headersFlags{format: "github"}}, "--headers"},
		{testserverFlags{quota: 1, window: 1, headers: headersFlags{format: "ietf", reset: "unix"}}, "--headers-reset"},
		{testserverFlags{quota: 1, window: 1, headers: headersFlags{format: "x-ratelimit", reset: "epoch"}}, "--headers-reset"},
	} {
		if _, err := c.f.config(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", c.f, err, c.want)
		}
	}
	if _, err := testkit.RunCLI(t.Context(), newRootCmd, "testserver", "--listen", "256.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("bad --listen: %v", err)
	}
}

// TestTestserverServe runs the server on a loopback port, makes calls,
// stops it, and reads the final stats and the job log.
func TestTestserverServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(t.TempDir(), "ids")
	lf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	cfg := sim.DefaultServerConfig()
	cfg.Quota = 6
	cfg.TypeCosts = map[string]float64{"export": 5}
	cfg.Log = lf
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- serveTestserver(ctx, ln, cfg, &out, &errOut) }()

	base := "http://" + ln.Addr().String()
	send := func(typ, id string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, base+"/v1/items", strings.NewReader("{}"))
		req.Header.Set("Sluice-Type", typ)
		req.Header.Set("Sluice-Job-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := send("export", "a"); r.StatusCode != 200 {
		t.Fatalf("first call: %d", r.StatusCode)
	}
	if r := send("export", "b"); r.StatusCode != 429 || r.Header.Get("Retry-After") == "" {
		t.Fatalf("second call: %d, Retry-After %q", r.StatusCode, r.Header.Get("Retry-After"))
	}
	if r := send("other", "a"); r.StatusCode != 200 {
		t.Fatalf("third call: %d", r.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var st sim.Stats
	if err := json.Unmarshal(out.Bytes(), &st); err != nil {
		t.Fatalf("final stats %q: %v", out.String(), err)
	}
	if st.AcceptedUnits != 6 || st.AcceptedRequests != 2 || st.Throttled != 1 || st.Jobs.Duplicates != 1 {
		t.Fatalf("final stats %+v", st)
	}
	if ids, _ := os.ReadFile(logPath); string(ids) != "a\na\n" {
		t.Fatalf("job log %q", ids)
	}
	if !strings.Contains(errOut.String(), "listening on http://127.0.0.1:") {
		t.Errorf("stderr %q", errOut.String())
	}
}
