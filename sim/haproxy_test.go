package sim

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestWeightedMatchesHAProxy drives a real HAProxy, the binary HAPROXY
// names, running the usual stick-table recipe (http_req_rate, refused
// requests counted, 200 requests per 4 s), with a burst, a pause and
// steady loads above and below its rate, and replays the same requests,
// at the instants they were sent, through Weighted and Window. Weighted
// must decide as HAProxy did for at least 98% of them; Window, which
// frees the burst all at once one window later, must not, or the schedule
// no longer tells the two apart. Skipped when HAPROXY is not set
// (make e2e-zoo installs haproxy).
func TestWeightedMatchesHAProxy(t *testing.T) {
	bin, upstream := gatewayUnderTest(t, "HAPROXY", "a haproxy")
	const (
		span  = 4 * time.Second
		quota = 200
	)
	addr := haproxy(t, bin, fmt.Sprintf(`global
    maxconn 1024
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
frontend api
    bind %%s
    stick-table type ip size 100k expire 30s store http_req_rate(%ds)
    http-request track-sc0 src
    http-request deny deny_status 429 if { sc_http_req_rate(0) gt %d }
    default_backend upstream
backend upstream
    server api %s
`, int(span.Seconds()), quota, upstream.Listener.Addr()))

	// Requests per second, each for 400 ms: a burst of 80, a pause of
	// 3.2 s, twice the rate for 4 s, then below and just under it.
	var phases []float64
	phases = append(phases, 200, 200)
	phases = append(phases, slices.Repeat([]float64{2.5}, 8)...)
	phases = append(phases, slices.Repeat([]float64{100}, 10)...)
	phases = append(phases, slices.Repeat([]float64{30}, 10)...)
	phases = append(phases, slices.Repeat([]float64{45}, 10)...)
	out := sendPhases(t, "http://"+addr+"/", phases, 400*time.Millisecond)
	if t.Failed() {
		return
	}

	var took int
	for _, s := range out {
		if s.ok {
			took++
		}
	}
	weighted, wAcc := countOtherwise(&Weighted{Span: span, Quota: quota, CountRefused: true}, out)
	window, sAcc := countOtherwise(&Window{Span: span, Quota: quota, CountRefused: true}, out)
	t.Logf("%d requests, haproxy accepted %d; Weighted accepts %d and decides %d otherwise; Window accepts %d and decides %d otherwise",
		len(out), took, wAcc, weighted, sAcc, window)
	if weighted*50 > len(out) {
		t.Errorf("Weighted decided %d of %d requests otherwise than haproxy, want at most 2%%", weighted, len(out))
	}
	if window*10 < len(out) {
		t.Errorf("Window decided only %d of %d requests otherwise than haproxy: the schedule no longer tells a sliding window from haproxy's counter", window, len(out))
	}
}

// countOtherwise replays the requests of out through m, one unit each at
// the instant it was sent, and returns how many m decided otherwise than
// the gateway did and how many it accepted.
func countOtherwise(m quotaModel, out []answered) (n, accepted int) {
	for _, s := range out {
		ok, _ := m.Take(epoch.Add(s.at), 1)
		if ok != s.ok {
			n++
		}
		if ok {
			accepted++
		}
	}
	return n, accepted
}

// answered is a request sent at an offset from the start, whether it was
// accepted, and how long its answer took.
type answered struct {
	at, took time.Duration
	ok       bool
}

// sendPhases sends GET url at each phase's rate, per second, for each
// phase of length phase, and returns every answer in the order sent.
func sendPhases(t *testing.T, url string, phases []float64, phase time.Duration) []answered {
	t.Helper()
	var (
		mu  sync.Mutex
		out []answered
		wg  sync.WaitGroup
	)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 10 * time.Second}
	start := time.Now()
	next := time.Duration(0)
	for i, rate := range phases {
		for end := time.Duration(i+1) * phase; next < end; next += time.Duration(float64(time.Second) / rate) {
			time.Sleep(time.Until(start.Add(next)))
			wg.Go(func() {
				at := time.Since(start)
				resp, err := client.Get(url)
				if err != nil {
					t.Error(err)
					return
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusTooManyRequests {
					t.Errorf("%s answered %s", url, resp.Status)
				}
				took := time.Since(start) - at
				mu.Lock()
				out = append(out, answered{at, took, resp.StatusCode == http.StatusOK})
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b answered) int { return int(a.at - b.at) })
	return out
}

// gatewayUnderTest returns the gateway binary that the environment
// variable env names (what: "a haproxy"), skipping the test when it is not
// set, and an upstream for the gateway that answers every request 200.
func gatewayUnderTest(t *testing.T, env, what string) (bin string, upstream *httptest.Server) {
	t.Helper()
	bin = os.Getenv(env)
	if bin == "" {
		t.Skipf("%s not set: the path of %s binary", env, what)
	}
	upstream = httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(upstream.Close)
	return bin, upstream
}

// haproxy starts bin with the configuration cfg, whose one %s is the
// address to bind, and returns that address once it accepts connections.
func haproxy(t *testing.T, bin, cfg string) string {
	t.Helper()
	addr := testkit.FreeAddr(t)
	path := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(path, []byte(fmt.Sprintf(cfg, addr)), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-db", "-f", path)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	startGateway(t, cmd, addr)
	return addr
}

// startGateway starts cmd, a gateway that listens on addr, stops it with
// SIGTERM (an nginx master stops its worker too) when the test ends, and
// waits until addr accepts connections.
func startGateway(t *testing.T, cmd *exec.Cmd, addr string) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	testkit.Eventually(t, filepath.Base(cmd.Path)+" listening on "+addr, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
}
