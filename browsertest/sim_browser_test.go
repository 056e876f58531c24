//go:build browser

package browsertest

import (
	"context"
	"net"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/sluicehq/sluice/web"
)

// timeout bounds each test's browser; the conditions are checked in the
// page's virtual time, and the deadline only stops a page that hangs.
const timeout = 2 * time.Minute

// simServer serves the simulator page on loopback at speed (virtual seconds
// per real second) and returns its URL. Its streams end with the test.
func simServer(t *testing.T, speed float64) (string, *web.SimServer) {
	t.Helper()
	cfg := web.DefaultSimConfig()
	cfg.Speed = speed
	srv, err := web.NewSimServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts := httptest.NewUnstartedServer(srv)
	ts.Config.BaseContext = func(net.Listener) context.Context { return ctx }
	ts.Start()
	t.Cleanup(func() {
		cancel() // ends the streams, so Close does not wait for them
		ts.Close()
	})
	return ts.URL + "/", srv
}

// state reads what the page shows: its virtual clock and its figures, as
// a person reads them, and the frame count.
type state struct {
	T         float64 `json:"t"`
	Frames    int     `json:"frames"`
	Used      float64 `json:"used"`
	Sum       float64 `json:"sum"`
	Throttled float64 `json:"throttled"`
	Queue     float64 `json:"queue"`
	Rejected  float64 `json:"rejected"`
	Mode      string  `json:"mode"`
	Instances int     `json:"instances"`
}

const readState = `(() => {
  const n = (id) => { const v = parseFloat(document.getElementById(id).textContent.replace(/,/g, '')); return isNaN(v) ? -1 : v; };
  return {
    t: parseFloat(document.getElementById('clock').dataset.t),
    frames: window.sluice.frames,
    used: n('fig-used'), sum: n('fig-sum'), throttled: n('fig-throttled'),
    queue: n('fig-queue'), rejected: n('fig-rejected'),
    mode: document.getElementById('mode').value,
    instances: parseInt(document.getElementById('count').textContent, 10),
  };
})()`

func read(t *testing.T, ctx context.Context) state {
	t.Helper()
	return Eval[state](t, ctx, readState)
}

// untilVirtual waits until the page's virtual clock reaches at seconds.
func untilVirtual(t *testing.T, ctx context.Context, at float64) {
	t.Helper()
	Until(t, ctx, "the virtual clock", `parseFloat(document.getElementById('clock').dataset.t) >= `+ftoa(at))
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// painted counts the canvas's pixels that are not blank.
func painted(t *testing.T, ctx context.Context, id string) int {
	t.Helper()
	return Eval[int](t, ctx, `(() => {
  const c = document.getElementById('`+id+`');
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return n;
})()`)
}

// TestBrowserSimPage: the page loads, streams at 10 frames a second or
// more, draws its charts, and its figures move with the virtual clock;
// every control has a name; screenshots at desktop and phone size.
func TestBrowserSimPage(t *testing.T) {
	url, srv := simServer(t, 20)
	for _, size := range []struct {
		name string
		Size
	}{{"desktop", Desktop}, {"phone", Phone}} {
		t.Run(size.name, func(t *testing.T) {
			ctx := New(t, size.Size, timeout)
			Do(t, ctx, "loading the page", chromedp.Navigate(url))
			Until(t, ctx, "the first frames", `window.sluice && window.sluice.frames >= 3`)
			first := read(t, ctx)
			// Frames stream: 40 virtual seconds at speed 20 are 2 s of real
			// time, 25 frames at 12.5 a second (the frames carry the virtual
			// clock, so count against it).
			untilVirtual(t, ctx, first.T+40)
			later := read(t, ctx)
			if got := later.Frames - first.Frames; got < 16 {
				t.Errorf("%d frames in 40 virtual seconds at speed 20 (2 s), want 16 or more (12.5 a second less the slack of a loaded machine; web's TestSimStream checks the exact rate)", got)
			}
			if later.Used <= first.Used || later.T <= first.T {
				t.Errorf("figures did not move: units used %v → %v at %v → %v s", first.Used, later.Used, first.T, later.T)
			}
			if later.Sum <= 0 || later.Instances != 2 || later.Mode != "aimd" {
				t.Errorf("page state %+v, want a sum of rates > 0, 2 instances, mode aimd", later)
			}
			for _, id := range []string{"rates", "lanes", "queue"} {
				if n := painted(t, ctx, id); n < 500 {
					t.Errorf("canvas %s: %d painted pixels, want a drawn chart", id, n)
				}
			}
			unnamed := Eval[[]string](t, ctx, `[...document.querySelectorAll('button, select, input')].filter((el) => {
  const byLabel = el.labels && el.labels.length > 0 && el.labels[0].textContent.trim() !== '';
  return !byLabel && !el.getAttribute('aria-label') && el.textContent.trim() === '';
}).map((el) => el.id || el.outerHTML)`)
			if len(unnamed) > 0 {
				t.Errorf("controls with no accessible name: %v", unnamed)
			}
			desc := Eval[string](t, ctx, `document.getElementById('rates-text').textContent`)
			if len(desc) < 40 {
				t.Errorf("the chart's text equivalent is %q", desc)
			}
			if size.Mobile {
				// One column: nothing wider than the screen.
				if w := Eval[int](t, ctx, `document.documentElement.scrollWidth`); w > size.Width {
					t.Errorf("the page is %d px wide on a %d px screen", w, size.Width)
				}
			}
			if !size.Mobile {
				keyboard(t, ctx)
			}
			untilVirtual(t, ctx, 150)
			Screenshot(t, ctx, "simulator-"+size.name)
		})
	}
	if n := srv.Sessions(); n > 2 {
		t.Errorf("%d sessions still open", n)
	}
}

// keyboard drives the controls with the keyboard alone: Tab from the top
// reaches the skip link, then Pause; Enter pauses the run and Enter again
// resumes it; the arrow keys move the quota slider, and the run follows.
func keyboard(t *testing.T, ctx context.Context) {
	t.Helper()
	focused := func() string {
		return Eval[string](t, ctx, `document.activeElement ? document.activeElement.id || document.activeElement.className : ''`)
	}
	Eval[bool](t, ctx, `document.activeElement && document.activeElement.blur(), window.scrollTo(0, 0), true`)
	Do(t, ctx, "pressing Tab", chromedp.KeyEvent(kb.Tab))
	if f := focused(); f != "skip" {
		t.Errorf("first Tab focuses %q, want the skip link", f)
	}
	Do(t, ctx, "pressing Tab", chromedp.KeyEvent(kb.Tab))
	if f := focused(); f != "pause" {
		t.Fatalf("second Tab focuses %q, want Pause", f)
	}
	Do(t, ctx, "pressing Enter on Pause", chromedp.KeyEvent(kb.Enter))
	Until(t, ctx, "the run to pause", `window.sluice.frame.paused && document.getElementById('pause').getAttribute('aria-pressed') === 'true'`)
	Do(t, ctx, "pressing Enter on Resume", chromedp.KeyEvent(kb.Enter))
	Until(t, ctx, "the run to resume", `!window.sluice.frame.paused`)
	Do(t, ctx, "focusing the quota slider", chromedp.Focus(chromedp.ID("quota")))
	Do(t, ctx, "pressing the right arrow twice", chromedp.KeyEvent(kb.ArrowRight), chromedp.KeyEvent(kb.ArrowRight))
	Until(t, ctx, "the quota to follow the slider", `window.sluice.frame.base_quota === 3200`)
}

// TestBrowserDropQuota: "Drop the quota" makes the throttled count rise,
// and then the sum of rates fall, within bounded virtual time.
func TestBrowserDropQuota(t *testing.T) {
	url, _ := simServer(t, 50)
	ctx := New(t, Desktop, timeout)
	Do(t, ctx, "loading the page", chromedp.Navigate(url))
	untilVirtual(t, ctx, 150)
	before := read(t, ctx)
	Do(t, ctx, "clicking Drop the quota", chromedp.Click(chromedp.ID("try-noisy")))
	// The drop starts when the simulation takes the click, which on a
	// loaded machine can be many virtual seconds after the page showed
	// before.T: count from the drop's start that the frames carry.
	Until(t, ctx, "the drop to reach the page", `window.sluice.frame && window.sluice.frame.drop_ends != null`)
	dropAt := Eval[float64](t, ctx, `window.sluice.frame.drop_ends`) - web.DropFor.Seconds()
	Until(t, ctx, "the throttled count to rise", `parseFloat(document.getElementById('fig-throttled').textContent.replace(/,/g, '')) > `+ftoa(before.Throttled))
	rose := read(t, ctx)
	if rose.T-dropAt > 20 {
		t.Errorf("the first 429 after the drop came %.1f virtual seconds later, want within 20", rose.T-dropAt)
	}
	Until(t, ctx, "the sum of rates to fall", `parseFloat(document.getElementById('fig-sum').textContent.replace(/,/g, '')) < `+ftoa(0.8*before.Sum))
	fell := read(t, ctx)
	if fell.T-dropAt > 30 {
		t.Errorf("the sum of rates fell below 80%% of %v %.1f virtual seconds after the drop, want within 30", before.Sum, fell.T-dropAt)
	}
	t.Logf("shown at %.1f s, drop at %.1f s: throttled %v → %v at %.1f s; sum of rates %v → %v at %.1f s",
		before.T, dropAt, before.Throttled, rose.Throttled, rose.T, before.Sum, fell.Sum, fell.T)
	Until(t, ctx, "an announcement for screen readers", `document.getElementById('announce').textContent.length > 0`)
	if dropped := Eval[bool](t, ctx, `document.getElementById('drop').disabled`); !dropped {
		t.Error("the Drop the quota button is enabled while the quota is dropped")
	}
	Screenshot(t, ctx, "simulator-drop")
	// The picture of the README (docs/simulator-page.png): the cut, the
	// quota's return and the climb after it.
	untilVirtual(t, ctx, before.T+80)
	Eval[bool](t, ctx, `window.scrollTo(0, 0), true`)
	ScreenshotViewport(t, ctx, "simulator-page")
}

// TestBrowserRemoveLimiter: "Remove the limiter" restarts the same load
// with retries only, and the throttled count climbs steeply: many more
// 429s in the first 90 virtual seconds than with the limiter.
func TestBrowserRemoveLimiter(t *testing.T) {
	url, _ := simServer(t, 50)
	ctx := New(t, Desktop, timeout)
	Do(t, ctx, "loading the page", chromedp.Navigate(url))
	untilVirtual(t, ctx, 90)
	limited := read(t, ctx)
	Do(t, ctx, "clicking Remove the limiter", chromedp.Click(chromedp.ID("try-none")))
	Until(t, ctx, "the restart in mode none", `document.getElementById('mode').value === 'none' && parseFloat(document.getElementById('clock').dataset.t) < 30`)
	untilVirtual(t, ctx, 90)
	none := read(t, ctx)
	t.Logf("throttled in the first %.0f s: %v with the limiter, %v without", limited.T, limited.Throttled, none.Throttled)
	if none.Throttled < 500 || none.Throttled < 10*(limited.Throttled+1) {
		t.Errorf("without the limiter %v 429s in %.0f virtual seconds, with it %v in %.0f: want a steep climb (500 or more, 10 times as many)",
			none.Throttled, none.T, limited.Throttled, limited.T)
	}
	if none.Sum != -1 {
		t.Errorf("sum of rates shows %v with no limiter, want a dash", none.Sum)
	}
	Screenshot(t, ctx, "simulator-no-limiter")
}
