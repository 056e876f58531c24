// Package testkit holds the helpers that tests of several packages share:
// polling for an event of the real network, a free loopback address, a
// buffer for concurrent
// writers, an HTTP GET, the in-process command-line runner, the metric
// tables of the docs and the check of a docs' example against the type the
// code writes it with. It imports only the standard library, so the tests of
// the lowest packages can use it; the backends a test starts (an embedded
// JetStream server, the Pub/Sub fake) are in testkit/backends.
package testkit

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// Eventually polls cond every 20 ms for up to a minute and fails the test
// with what when it never holds. It is for events of real processes and
// networks; code under a fake clock is tested in testing/synctest instead.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	EventuallyState(t, what, func() (bool, string) { return cond(), "" })
}

// EventuallyState is Eventually for a condition that also describes the
// state it saw: the failure shows the last one.
func EventuallyState(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			if state != "" {
				t.Fatalf("timed out waiting for %s; last: %s", what, state)
			}
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// FreeAddr returns a loopback address whose port was free a moment ago,
// for a process that must be told where to listen.
func FreeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Command is what RunCLI needs of a command tree: the methods of a
// *cobra.Command that set its arguments and streams and execute it.
type Command interface {
	SetArgs(args []string)
	SetOut(w io.Writer)
	SetErr(w io.Writer)
	SetIn(r io.Reader)
	ExecuteContext(ctx context.Context) error
}

// RunCLI runs the command tree that root builds with args, in process,
// under ctx, and returns what it wrote on stdout and stderr together.
func RunCLI[C Command](ctx context.Context, root func() C, args ...string) (string, error) {
	cmd := root()
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(bytes.NewReader(nil))
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// DocumentedMetrics reads the metric tables of docs/operations.md at path:
// every `sluice_…` name in the first column of a table row, true when the
// metric is always there, false when its section says "Only with".
func DocumentedMetrics(t testing.TB, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	row := regexp.MustCompile("(?m)^\\| `(sluice_[a-z_]+)(?:\\{[a-z_,]*\\})?` \\|")
	for _, section := range strings.Split(string(b), "\n### ") {
		required := !strings.Contains(section, "Only with")
		for _, m := range row.FindAllStringSubmatch(section, -1) {
			names[m[1]] = required
		}
	}
	if len(names) < 15 {
		t.Fatalf("%s documents only %d metrics", path, len(names))
	}
	return names
}

// Get GETs url and returns the status and the body; a failed request fails
// the test.
func Get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// SyncBuffer is a bytes.Buffer that concurrent writers can share, such as
// the loggers of a worker's goroutines or a child process's output.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
