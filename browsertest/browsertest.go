// Package browsertest drives a headless Chromium for the tests of sluice's
// pages (package web): the simulator page and the live page of a running
// worker.
//
// The browser is Debian's chromium package (/usr/bin/chromium), or the one
// named by SLUICE_CHROMIUM; nothing here downloads a browser. `make
// test-browser` installs the package when it is missing and runs the tests,
// which are built only with the tag "browser":
//
//	go test -tags browser ./browsertest/ ./cmd/sluice/ -run Browser
//
// A test calls New: without a browser it skips, with a message, unless
// SLUICE_BROWSER_REQUIRED=1 (set by the Makefile target), when it fails.
// Each browser gets a fresh profile in a temporary folder, and talks to
// loopback only. Screenshots go to Artifacts(): artifacts/browser at the
// module's root (ignored by git), or SLUICE_ARTIFACTS.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium returns the path of the browser to drive: SLUICE_CHROMIUM, or
// chromium (Debian's package) or chromium-browser on PATH.
func Chromium() (string, bool) {
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		return p, true
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, true
		}
	}
	return "", false
}

// Size is a viewport.
type Size struct {
	Width, Height int
	Mobile        bool // emulate a phone: touch, device scale factor 2
}

// Viewports used by the tests and their screenshots.
var (
	Desktop = Size{Width: 1366, Height: 900}
	Phone   = Size{Width: 390, Height: 844, Mobile: true}
)

// New starts a headless Chromium for t and returns a context for one tab,
// sized to size. The browser stops when the test ends. Every chromedp
// action on the context is bounded by timeout.
func New(t testing.TB, size Size, timeout time.Duration) context.Context {
	t.Helper()
	path, ok := Chromium()
	if !ok {
		msg := "browsertest: no Chromium found (apt-get install chromium, or set SLUICE_CHROMIUM); `make test-browser` installs it"
		if os.Getenv("SLUICE_BROWSER_REQUIRED") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(size.Width, size.Height),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
	})
	// The first action starts the browser, which lives as long as the
	// context of that call: no timeout on it.
	if err := chromedp.Do(ctx, viewport(size)); err != nil {
		t.Fatalf("browsertest: starting %s: %v", path, err)
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	t.Cleanup(cancel)
	return tctx
}

func viewport(s Size) chromedp.Action[chromedp.Void] {
	if s.Mobile {
		return chromedp.EmulateViewport(int64(s.Width), int64(s.Height), chromedp.EmulateScale(2), chromedp.EmulateMobile, chromedp.EmulateTouch, chromedp.EmulatePortrait)
	}
	return chromedp.EmulateViewport(int64(s.Width), int64(s.Height))
}

// Artifacts returns the folder for screenshots, creating it:
// SLUICE_ARTIFACTS, or artifacts/browser at the module's root.
func Artifacts(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("SLUICE_ARTIFACTS")
	if dir == "" {
		root, err := moduleRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "artifacts", "browser")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("browsertest: no go.mod above the working directory")
		}
		dir = parent
	}
}

// ScreenshotViewport saves a PNG of what the viewport shows as name (".png"
// added) under Artifacts and returns its path.
func ScreenshotViewport(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("browsertest: screenshot %s: %v", name, err)
	}
	return save(t, name, png)
}

// Screenshot saves a PNG of the whole page as name (".png" added) under
// Artifacts and returns its path.
func Screenshot(t testing.TB, ctx context.Context, name string) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("browsertest: screenshot %s: %v", name, err)
	}
	return save(t, name, png)
}

func save(t testing.TB, name string, png []byte) string {
	t.Helper()
	if !strings.HasSuffix(name, ".png") {
		name += ".png"
	}
	path := filepath.Join(Artifacts(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// Eval evaluates a JavaScript expression in the page and returns its value.
func Eval[T any](t testing.TB, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	if err != nil {
		t.Fatalf("browsertest: evaluating %s: %v", expr, err)
	}
	return v
}

// Do runs chromedp actions on the page and fails t on an error.
func Do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("browsertest: %s: %v", what, err)
	}
}

// Until evaluates a JavaScript condition every 50ms of real time until it
// is true, and fails t when the context ends first. The condition, not the
// wall clock, decides: the tests' bounds are in the page's own (virtual)
// time, and the context's deadline only stops a page that hangs.
func Until(t testing.TB, ctx context.Context, what, cond string) {
	t.Helper()
	deadline, ok := ctx.Deadline()
	limit := time.Minute
	if ok {
		limit = time.Until(deadline)
	}
	poll := chromedp.Poll[chromedp.Void](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(limit))
	if _, err := chromedp.Run(ctx, poll); err != nil {
		t.Fatalf("browsertest: waiting for %s (%s): %v", what, cond, err)
	}
}
