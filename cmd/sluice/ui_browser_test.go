//go:build browser

package main

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/browsertest"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
	"github.com/sluicehq/sluice/sim"
)

// TestBrowserLivePage: `sluice run --ui` on an embedded JetStream server,
// draining jobs into the model API; the page at /ui/ shows a rate above
// zero, every job succeeded and an empty backlog. The model API takes 500
// calls in 10 s, so the burst is throttled and the limiter pauses.
func TestBrowserLivePage(t *testing.T) {
	const jobs = 600
	api, err := sim.NewServer(sim.ServerConfig{Quota: 500, Window: 10 * time.Second, DefaultCost: 1})
	if err != nil {
		t.Fatal(err)
	}
	target := httptest.NewServer(api)
	t.Cleanup(target.Close)
	cfg := e2eConfig(t, backends.StartNATS(t), target.URL)
	cfg.Limiter.Disabled = false
	cfg.Limiter.InitialUnitsPerMinute = 6000
	cfg.Metrics.Listen = testkit.FreeAddr(t)
	cfg = mustValid(t, cfg)
	src := client(t, cfg)
	startRunWith(t, cfg, true, nil, prometheus.NewRegistry())

	ctx := browsertest.New(t, browsertest.Desktop, 2*time.Minute)
	browsertest.Do(t, ctx, "loading the live page", chromedp.Navigate("http://"+cfg.Metrics.Listen+"/ui/"))
	browsertest.Until(t, ctx, "the first frames", `window.sluice && window.sluice.frames >= 2`)
	for i := range jobs {
		enqueueJob(t, src, fmt.Sprintf("ui-%03d", i), nil)
	}
	num := func(id string) string {
		return `parseFloat(document.getElementById('` + id + `').textContent.replace(/,/g, ''))`
	}
	browsertest.Until(t, ctx, "every job to succeed on the page",
		num("fig-succeeded")+` >= `+fmt.Sprint(jobs)+` && `+num("fig-backlog")+` === 0 && `+num("fig-rate")+` > 0`)
	if !drained(t, src) {
		t.Error("the page shows every job succeeded, the queue still holds some")
	}
	got := browsertest.Eval[map[string]string](t, ctx, `({
  rate: document.getElementById('fig-rate').textContent,
  accepted: document.getElementById('fig-accepted').textContent,
  estimate: document.getElementById('fig-estimate').textContent,
  burst: document.getElementById('fig-burst').textContent,
  succeeded: document.getElementById('fig-succeeded').textContent,
  jobs: document.getElementById('jobs-rows').textContent,
  chart: document.getElementById('rate-text').textContent,
})`)
	t.Logf("live page: %v", got)
	// The rate it sends at beside the rate the API accepted (the jobs'
	// units, in the last minute), and the burst in units and seconds.
	acc, err := strconv.ParseFloat(strings.ReplaceAll(strings.TrimSuffix(got["accepted"], " units/min"), ",", ""), 64)
	if err != nil || acc <= 0 || acc > jobs {
		t.Errorf("API accepted %q, want between 1 and %d units/min", got["accepted"], jobs)
	}
	// The limiter's estimate of what the API accepts: a rate, or none
	// yet (no 429 or quota header in this drain), never a bare 0.
	if e := got["estimate"]; !strings.HasPrefix(e, "none yet") && (!strings.HasSuffix(e, " units/min") || strings.HasPrefix(e, "0 ")) {
		t.Errorf("estimate %q, want a rate in units/min or none yet", e)
	}
	if !strings.Contains(got["burst"], " units") || strings.Contains(got["burst"], " of ") {
		t.Errorf("burst available %q, want units (and seconds of the rate), not tokens of a capacity", got["burst"])
	}
	if painted := browsertest.Eval[int](t, ctx, `(() => {
  const c = document.getElementById('rate');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return n;
})()`); painted < 500 {
		t.Errorf("the rate chart has %d painted pixels", painted)
	}
	if hidden := browsertest.Eval[bool](t, ctx, `document.getElementById('members').hidden`); !hidden {
		t.Error("the members section shows with membership off")
	}
	browsertest.Screenshot(t, ctx, "live-desktop")

	phone := browsertest.New(t, browsertest.Phone, time.Minute)
	browsertest.Do(t, phone, "loading the live page on a phone", chromedp.Navigate("http://"+cfg.Metrics.Listen+"/ui/"))
	browsertest.Until(t, phone, "the first frames", `window.sluice && window.sluice.frames >= 3`)
	if w := browsertest.Eval[int](t, phone, `document.documentElement.scrollWidth`); w > browsertest.Phone.Width {
		t.Errorf("the live page is %d px wide on a %d px screen", w, browsertest.Phone.Width)
	}
	browsertest.Screenshot(t, phone, "live-phone")
}
