package simulate

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
	"github.com/sluicehq/sluice/sim"
)

func TestServerOptionsConfig(t *testing.T) {
	f := ServerOptions{Quota: 100, Window: 30e9, DefaultCost: 2, TypeCosts: []string{"export=5", " sync = 0.5 "}}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Quota != 100 || cfg.DefaultCost != 2 || cfg.TypeCosts["export"] != 5 || cfg.TypeCosts["sync"] != 0.5 || cfg.Headers.Format != call.RateLimitNone {
		t.Fatalf("config %+v", cfg)
	}
	f.Headers = Headers{Format: "x-ratelimit", Reset: "unix"}
	if cfg, err = f.Config(); err != nil || cfg.Headers != (call.RateLimitHeaders{Format: call.RateLimitX, Reset: call.UnitUnixTime}) {
		t.Fatalf("--headers x-ratelimit --headers-reset unix: %+v, %v", cfg.Headers, err)
	}
	f = ServerOptions{API: "leaky", Burst: 3, Quota: 1200, Window: 60e9}
	if cfg, err = f.Config(); err != nil || cfg.API != sim.APILeaky || cfg.BurstUnits != 3 {
		t.Fatalf("--api leaky --burst-units 3: %+v, %v", cfg, err)
	}
	f = ServerOptions{API: "fixed", Quota: 5000, Window: 3600e9, CountRefused: true, Headers: Headers{Format: "x-ratelimit"}}
	if cfg, err = f.Config(); err != nil || cfg.API != sim.APIFixed || !cfg.CountRefused || cfg.Window != time.Hour {
		t.Fatalf("--api fixed --window 1h --count-CountRefused: %+v, %v", cfg, err)
	}
	f = ServerOptions{API: "bucket", Quota: 1200, Window: 60e9, FillInterval: 2e9}
	if cfg, err = f.Config(); err != nil || cfg.API != sim.APIBucket || cfg.BurstUnits != 40 || cfg.FillInterval != 2*time.Second {
		t.Fatalf("--api bucket --fill-interval 2s: %+v, %v", cfg, err)
	}
	f.Burst, f.BurstSet = 100, true
	if cfg, err = f.Config(); err != nil || cfg.BurstUnits != 100 {
		t.Fatalf("--api bucket --burst-units 100: %+v, %v", cfg, err)
	}
	for _, api := range sim.APIs {
		f = ServerOptions{API: string(api), Quota: 600, Window: 60e9, FillInterval: 1e9, CountRefused: true}
		cfg, err = f.Config()
		if api.CountsRefused() != (err == nil) || err == nil && !cfg.CountRefused {
			t.Errorf("--api %s --count-refused: %+v, %v", api, cfg, err)
		}
	}
	for _, c := range []struct {
		f    ServerOptions
		want string
	}{
		{ServerOptions{API: "token", Quota: 1, Window: 1}, "--api"},
		{ServerOptions{API: "bucket", Quota: 600, Window: 60e9, FillInterval: 1e9, Burst: 9, BurstSet: true}, "--burst-units: must be at least one fill's tokens (--quota × --fill-interval / --window = 10)"},
		{ServerOptions{API: "bucket", Quota: 600, Window: 60e9}, "--fill-interval"},
		{ServerOptions{API: "bucket", Quota: 600, Window: 60e9, FillInterval: 1e9, Headers: Headers{Format: "ietf"}}, "--headers: --api bucket"},
		{ServerOptions{API: "leaky", Quota: 600, Window: 60e9, CountRefused: true}, "--count-refused"},
		{ServerOptions{API: "weighted", Quota: 600, Window: 60e9, Headers: Headers{Format: "ietf"}}, "--headers: --api weighted"},
		{ServerOptions{API: "fixed", Quota: 600, Window: 60e9, Delay: true}, "--delay"},
		{ServerOptions{API: "leaky", Burst: -1, Quota: 1, Window: 1}, "--burst-units"},
		{ServerOptions{API: "leaky", Quota: 1, Window: 1, Headers: Headers{Format: "ietf"}}, "--headers"},
		{ServerOptions{Quota: 0, Window: 1}, "--quota"},
		{ServerOptions{Quota: 1, Window: 0}, "--window"},
		{ServerOptions{Quota: 1, Window: 1, DefaultCost: -1}, "--default-cost"},
		{ServerOptions{Quota: 1, Window: 1, TypeCosts: []string{"export"}}, "--type-cost"},
		{ServerOptions{Quota: 1, Window: 1, TypeCosts: []string{"=3"}}, "--type-cost"},
		{ServerOptions{Quota: 1, Window: 1, TypeCosts: []string{"x=-3"}}, "--type-cost"},
		{ServerOptions{Quota: 1, Window: 1, Headers: Headers{Format: "github"}}, "--headers"},
		{ServerOptions{Quota: 1, Window: 1, Headers: Headers{Format: "ietf", Reset: "unix"}}, "--headers-reset"},
		{ServerOptions{Quota: 1, Window: 1, Headers: Headers{Format: "x-ratelimit", Reset: "epoch"}}, "--headers-reset"},
	} {
		if _, err := c.f.Config(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %s", c.f, err, c.want)
		}
	}
}

// TestServeAPI runs the server on a loopback port, makes calls,
// stops it, and reads the final stats and the job log.
func TestServeAPI(t *testing.T) {
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
	go func() { done <- ServeAPI(ctx, ln, cfg, &out, &errOut) }()

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

// TestStampedLog: --log-time begins each accepted id's line with the time
// of its acceptance, and the id stays whole after it.
func TestStampedLog(t *testing.T) {
	var buf bytes.Buffer
	at := time.Unix(1733270400, 125_400_000)
	l := stampedLog{w: &buf, now: func() time.Time { return at }}
	if n, err := io.WriteString(l, "job-1\n"); err != nil || n != len("job-1\n") {
		t.Fatalf("write: %d, %v", n, err)
	}
	at = at.Add(time.Second)
	io.WriteString(l, "job-2\n")
	if got, want := buf.String(), "1733270400.125 job-1\n1733270401.125 job-2\n"; got != want {
		t.Fatalf("log %q, want %q", got, want)
	}
}

func TestLogTimeNeedsLog(t *testing.T) {
	err := RunServer(context.Background(), ServerOptions{Quota: 1, Window: time.Minute, DefaultCost: 1, LogTime: true}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "--log-time") {
		t.Fatalf("--log-time without --log: %v", err)
	}
}
