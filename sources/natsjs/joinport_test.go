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
	first := uniqueConfig(natsjs.Embedded)
	firstDir := filepath.Join(t.TempDir(), "first-store")
	first.Embedded = natsjs.EmbeddedConfig{StoreDir: firstDir, Port: natsjs.RandomPort}
	a := open(t, first)
	defer a.Close()
	_, portStr, _ := net.SplitHostPort(strings.TrimPrefix(a.EmbeddedURL(), "nats://"))
	port, _ := strconv.Atoi(portStr)

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
