package main

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
)

func TestHealthcheckCommand(t *testing.T) {
	var ready error = errors.New("target host \"api\" does not resolve")
	srv := httptest.NewServer(run.OpsHandler(config.Default().Metrics, prometheus.NewRegistry(),
		func(context.Context) error { return ready }, nil))
	defer srv.Close()
	redirect := httptest.NewServer(http.RedirectHandler(srv.URL+"/healthz", http.StatusFound))
	defer redirect.Close()

	// A port nothing listens on: bind one, note it, close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String() + "/healthz"
	ln.Close()

	cases := []struct {
		args []string
		want int
	}{
		{[]string{"healthcheck", "--url", srv.URL + "/healthz"}, 0},
		{[]string{"healthcheck", "--url", srv.URL + "/readyz"}, 1},
		{[]string{"healthcheck", "--url", srv.URL + "/missing"}, 1},
		{[]string{"healthcheck", "--url", redirect.URL}, 1},
		{[]string{"healthcheck", "--url", closed}, 1},
		{[]string{"healthcheck", "--url", "ftp://127.0.0.1/healthz"}, 2},
		{[]string{"healthcheck", "--url", "127.0.0.1:9464"}, 2},
		{[]string{"healthcheck", "--url", srv.URL, "--timeout", "0s"}, 2},
		{[]string{"healthcheck", "extra"}, 2},
	}
	for _, c := range cases {
		if got := execute(t.Context(), c.args); got != c.want {
			t.Errorf("sluice %s: exit %d, want %d", strings.Join(c.args, " "), got, c.want)
		}
	}
}

func TestHealthcheckReportsWhy(t *testing.T) {
	srv := httptest.NewServer(run.OpsHandler(config.Default().Metrics, prometheus.NewRegistry(),
		func(context.Context) error { return errors.New("source not connected") }, nil))
	defer srv.Close()
	err := run.Healthcheck(t.Context(), srv.URL+"/readyz", 5*time.Second)
	if err == nil || !strings.HasSuffix(err.Error(), "answered 503: not ready: source not connected") {
		t.Fatalf("err = %v", err)
	}
	if err := run.Healthcheck(t.Context(), srv.URL+"/healthz", 5*time.Second); err != nil {
		t.Fatal(err)
	}
}
