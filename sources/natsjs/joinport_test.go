package natsjs_test

import (
	"bytes"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/sources/natsjs"
)

// A worker whose own store directory has no server, and that finds another
// directory's embedded server on the configured port, says so at warn
// level and names that server's store (#15).
func TestEmbeddedJoinByPortNamesTheStore(t *testing.T) {
	_, firstDir, port := startFirstStore(t)
	second := uniqueConfig(natsjs.Embedded)
	second.Embedded = natsjs.EmbeddedConfig{StoreDir: filepath.Join(t.TempDir(), "second-store"), Port: port}
	var logs bytes.Buffer
	b, err := natsjs.Open(t.Context(), second, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Server() != nil {
		t.Fatal("the second source started its own server")
	}
	out := logs.String()
	if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "another store directory") ||
		!strings.Contains(out, "its_store_dir="+firstDir) {
		t.Errorf("want a warning naming the first store %s, got:\n%s", firstDir, out)
	}
}

// startFirstStore opens a source that starts its embedded server on a
// free port with a store of its own ("first-store"), closed at the end of
// the test, and returns its config, its store directory and the port.
func startFirstStore(t *testing.T) (natsjs.Config, string, int) {
	t.Helper()
	first := uniqueConfig(natsjs.Embedded)
	dir := filepath.Join(t.TempDir(), "first-store")
	first.Embedded = natsjs.EmbeddedConfig{StoreDir: dir, Port: natsjs.RandomPort}
	a := open(t, first)
	t.Cleanup(func() { a.Close() })
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(a.EmbeddedURL(), "nats://"))
	port, err := strconv.Atoi(portStr)
	if err != nil {
		t.Fatal(err)
	}
	return first, dir, port
}
