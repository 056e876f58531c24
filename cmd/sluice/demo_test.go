package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/testkit"
)

// checkDemoSVG checks that path holds a well-formed SVG chart of the demo.
func checkDemoSVG(t *testing.T, path string, wants ...string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	d := xml.NewDecoder(bytes.NewReader(b))
	root, paths := "", 0
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			if se.Name.Local == "path" {
				paths++
			}
		}
	}
	if root != "svg" || paths < 5 {
		t.Fatalf("%s: root <%s> with %d paths, want <svg> with the chart's lines", path, root, paths)
	}
	for _, want := range append([]string{"hidden quota", "sum of rates", "units used, trailing window", "time (min:s)"}, wants...) {
		if !bytes.Contains(b, []byte(want)) {
			t.Errorf("%s lacks %q", path, want)
		}
	}
}

// emptyDir fails unless dir holds nothing: the demo removed its
// temporary store.
func emptyDir(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Errorf("the demo left %s in %s", entries[0].Name(), dir)
	}
}

// TestDemoShortRun runs a short demo through the command: every job is
// done once, the summary says so, the chart is written, and nothing is
// left behind.
func TestDemoShortRun(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	svg := filepath.Join(t.TempDir(), "demo.svg")
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "demo", "--workers", "3", "--jobs", "30", "--quota", "60000", "--rate", "30000", "--svg", svg)
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Log(out)
	for _, want := range []string{
		"sluice demo: 30 jobs → 3 workers",
		"embedded NATS JetStream at nats://127.0.0.1:",
		"drained 30/30",
		"Drained 30 jobs in",
		"30 done, 0 dead-lettered, 0 calls repeated",
		"0 throttled (0.0%)",
		"chart         " + svg,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the output lacks %q", want)
		}
	}
	// Every unit enqueued was accepted, once.
	m := regexp.MustCompile(`units +(\d+) accepted of (\d+) enqueued`).FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Errorf("units accepted and enqueued differ: %q", m)
	}
	checkDemoSVG(t, svg, "sluice demo · 3 workers · 30 jobs", "instance 3 rate", "30 of 30 jobs done")
	emptyDir(t, tmp)
}

// cancelWriter cancels a context when a progress line is written to it.
type cancelWriter struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	cancel context.CancelFunc
}

func (w *cancelWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if bytes.Contains(p, []byte("drained ")) {
		w.cancel()
	}
	return w.buf.Write(p)
}

func (w *cancelWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestDemoInterrupt: a demo stopped while it drains (Ctrl-C) stops its
// workers and servers, reports how far it got, writes the chart of what
// it saw, removes its store, and exits with status 130.
func TestDemoInterrupt(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	svg := filepath.Join(t.TempDir(), "demo.svg")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &cancelWriter{cancel: cancel}
	root := newRootCmd()
	// A slow drain: it cannot be over when the first progress line is out.
	root.SetArgs([]string{"demo", "--jobs", "2000", "--quota", "30", "--rate", "60", "--svg", svg})
	root.SetOut(w)
	root.SetErr(w)
	err := root.ExecuteContext(ctx)
	out := w.String()
	t.Log(out)
	var ee *cli.ExitError
	if !errors.As(err, &ee) || ee.Code != 130 {
		t.Fatalf("got %v, want exit status 130", err)
	}
	if !strings.Contains(out, "Interrupted after") || !strings.Contains(out, "of 2000 jobs done") {
		t.Errorf("the summary does not say the demo was interrupted:\n%s", out)
	}
	checkDemoSVG(t, svg, "interrupted at")
	emptyDir(t, tmp)
}

// TestDemoFlags: a bad flag is refused before anything starts, naming the
// flag.
func TestDemoFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--workers", "0"}, "--workers"},
		{[]string{"--jobs", "0"}, "--jobs"},
		{[]string{"--quota", "20"}, "--quota"},
		{[]string{"--quota", "NaN"}, "--quota"},
		{[]string{"--rate", "10"}, "--rate"},
		{[]string{"--rate", "20000000"}, "--rate"},
		{[]string{"--nats-port", "70000"}, "--nats-port"},
		{[]string{"--api-port", "70000"}, "--api-port"},
		{[]string{"--svg", "/nonexistent/dir/demo.svg"}, "--svg"},
	} {
		_, err := testkit.RunCLI(t.Context(), newRootCmd, append([]string{"demo"}, tc.args...)...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: got %v, want an error naming %s", tc.args, err, tc.want)
		}
	}
}

// TestDemoNATSPortTaken: a --nats-port or --api-port that is taken is an
// error naming the flag (without it the demo picks a free port, so a NATS server on
// 4222 does not stop it).
func TestDemoNATSPortTaken(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	t.Setenv("TMPDIR", t.TempDir())
	dir := t.TempDir()
	fresh, old := filepath.Join(dir, "new.svg"), filepath.Join(dir, "old.svg")
	if err := os.WriteFile(old, []byte("<svg/>"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, flag := range []string{"--nats-port", "--api-port"} {
		for _, svg := range []string{fresh, old} {
			_, err = testkit.RunCLI(t.Context(), newRootCmd, "demo", flag, port, "--svg", svg)
			if err == nil || !strings.Contains(err.Error(), flag) || !strings.Contains(err.Error(), port) {
				t.Fatalf("got %v, want an error naming %s and %s", err, flag, port)
			}
		}
	}
	// A demo that fails leaves no chart behind, and an older one intact.
	if _, err := os.Stat(fresh); !os.IsNotExist(err) {
		t.Errorf("a failed demo left %s (%v)", fresh, err)
	}
	if b, err := os.ReadFile(old); err != nil || string(b) != "<svg/>" {
		t.Errorf("a failed demo changed the existing chart: %q, %v", b, err)
	}
}
