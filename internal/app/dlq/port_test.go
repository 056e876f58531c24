package dlq

import (
	"net"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
)

// dlq replay on an embedded port in use names the setting to change and
// does not offer a flag of its own that it does not have (#15).
func TestOpenPortInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	cfg := config.Default()
	cfg.Source.JetStream.Embedded.StoreDir = t.TempDir()
	cfg.Source.JetStream.Embedded.Port = l.Addr().(*net.TCPAddr).Port
	_, err = Open(t.Context(), cfg, nil)
	if err == nil {
		t.Fatal("Open started a server on a port in use")
	}
	msg := err.Error()
	if !strings.Contains(msg, "source.jetstream.embedded.port") || !strings.Contains(msg, strconv.Itoa(cfg.Source.JetStream.Embedded.Port)) {
		t.Errorf("error %q does not name the setting and the port", msg)
	}
	if strings.Contains(msg, "choose a free port with --nats-port") || !strings.Contains(msg, "run, enqueue and status take it as --nats-port") {
		t.Errorf("error %q offers --nats-port as if dlq replay had it", msg)
	}
}
