package sim

import (
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestLeakyMatchesNginx drives a real nginx, the binary NGINX names, with
// limit_req at 20 requests/s and burst 5 in its default mode (no nodelay:
// a request ahead of the rate waits for its turn), through a burst, a
// pause and loads above and below the rate, and decides each request by
// Leaky's rule at the instant it was sent, from nginx's history. Leaky must
// decide as nginx did for at least 98% of them, and hold at least 95% of
// the accepted ones within 40 ms of how long nginx took; answered at once
// (nodelay), at least a fifth must miss that, and a sliding window must
// decide a tenth otherwise, or the schedule no longer tells them apart.
// Skipped when NGINX is not set (make e2e-zoo installs nginx).
func TestLeakyMatchesNginx(t *testing.T) {
	bin, upstream := gatewayUnderTest(t, "NGINX", "an nginx")
	const (
		rate  = 20
		burst = 5
		near  = 40 * time.Millisecond
	)
	addr := nginx(t, bin, fmt.Sprintf(`limit_req_zone $binary_remote_addr zone=api:1m rate=%dr/s;
    server {
        listen %%s;
        location / {
            limit_req zone=api burst=%d;
            limit_req_status 429;
            proxy_pass %s;
        }
    }`, rate, burst, upstream.URL))

	// Requests per second, each for 400 ms: one request every 400 ms (the
	// zone's entry exists, its excess leaked to 0), a burst of 40, the
	// same pause, 1.5 times the rate for 4 s, then below and just under
	// it.
	var phases []float64
	phases = append(phases, 2.5, 2.5, 2.5)
	phases = append(phases, 100)
	phases = append(phases, slices.Repeat([]float64{2.5}, 4)...)
	phases = append(phases, slices.Repeat([]float64{30}, 10)...)
	phases = append(phases, slices.Repeat([]float64{15}, 5)...)
	phases = append(phases, slices.Repeat([]float64{19.5}, 10)...)
	out := sendPhases(t, "http://"+addr+"/", phases, 400*time.Millisecond)
	if t.Failed() {
		return
	}

	// Each request is decided by Leaky's rule from nginx's own history
	// (the excess after the requests nginx accepted): near the edge a
	// millisecond of timing decides, so a decision within edge of the
	// burst counts as either.
	const edge = 0.1 // units: 5 ms at the rate
	l := &Leaky{Span: time.Second, Quota: rate, Burst: burst, Delay: true}
	var wrong, far, farNow, accepted int
	for _, s := range out {
		now := epoch.Add(s.at)
		probe := *l
		next := l.ahead(now) + 1
		if ok, _ := probe.Take(now, 1); ok != s.ok && math.Abs(next-burst) > edge {
			wrong++
		}
		if !s.ok {
			continue
		}
		l.excess, l.last = math.Max(0, next), now
		accepted++
		if d := s.took - l.Held(); d < -near || d > near {
			far++
		}
		if s.took > near {
			farNow++ // answered at once (nodelay) it would be near 0
		}
	}
	window, _ := countOtherwise(&Window{Span: time.Second, Quota: rate}, out)
	t.Logf("%d requests, nginx accepted %d; Leaky decides %d otherwise (beyond %v units of the edge), answers %d accepted ones more than %v from nginx with Delay, %d without; a sliding window decides %d otherwise",
		len(out), accepted, wrong, edge, far, near, farNow, window)
	if wrong*50 > len(out) {
		t.Errorf("Leaky decided %d of %d requests otherwise than nginx, want at most 2%%", wrong, len(out))
	}
	if far*20 > accepted {
		t.Errorf("Leaky with Delay answered %d of %d accepted requests more than %v from nginx, want at most 5%%", far, accepted, near)
	}
	if farNow*5 < accepted {
		t.Errorf("answered at once, only %d of %d accepted requests would be more than %v from nginx: the schedule no longer tells a delay from none", farNow, accepted, near)
	}
	if window*10 < len(out) {
		t.Errorf("a sliding window decided only %d of %d requests otherwise than nginx: the schedule no longer tells it from a leaky bucket", window, len(out))
	}
}

// nginx starts bin with an http block of directives whose one %s is the
// address to listen on, its files in a temporary prefix, and returns that
// address once it accepts connections.
func nginx(t *testing.T, bin, directives string) string {
	t.Helper()
	addr := testkit.FreeAddr(t)
	dir := t.TempDir()
	user := ""
	if os.Getuid() == 0 {
		user = "user root;"
	}
	conf := fmt.Sprintf(`%s
worker_processes 1;
pid %[2]s/nginx.pid;
error_log %[2]s/error.log crit;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %[2]s/body;
    proxy_temp_path %[2]s/proxy;
    fastcgi_temp_path %[2]s/fastcgi;
    uwsgi_temp_path %[2]s/uwsgi;
    scgi_temp_path %[2]s/scgi;
    %[3]s
}
`, user, dir, fmt.Sprintf(directives, addr))
	path := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(path, []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-p", dir, "-c", path, "-g", "daemon off;")
	// nginx reads NGINX as sockets inherited from a parent nginx.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "NGINX=") })
	t.Cleanup(func() {
		if b, _ := os.ReadFile(filepath.Join(dir, "error.log")); len(b) > 0 {
			t.Logf("nginx error log:\n%s", b)
		}
	})
	startGateway(t, cmd, addr)
	return addr
}
