package natsjs

import (
	"strings"
	"testing"
)

func TestTermReasonSupported(t *testing.T) {
	for v, want := range map[string]bool{
		"2.9.10": false, "2.10.3": false, "2.10.4": true, "2.10.22": true, "2.11.0": true,
		"2.15.2-beta.1": true, "3.0.0": true, "1.9.9": false, "": false,
	} {
		if got := termReasonSupported(v); got != want {
			t.Errorf("termReasonSupported(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"nats://u:pw@h:4222":              "nats://[REDACTED]@h:4222",
		"nats://tok@h:1,nats://h2:2":      "nats://[REDACTED]@h:1,nats://h2:2",
		"nats://127.0.0.1:4222":           "nats://127.0.0.1:4222",
		"u:p@host:4222,nats://a:b@c:1234": "[REDACTED]@host:4222,nats://[REDACTED]@c:1234",
	} {
		if got := redact(in); got != want {
			t.Errorf("redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// The embedded server's store write failure is kept for StoreFault; other
// error lines are not (#15).
func TestServerStoreFault(t *testing.T) {
	sl := &serverLog{log: discard}
	s := &Server{slog: sl}
	sl.Errorf("JetStream cluster %s", "not ready")
	if err := s.StoreFault(); err != nil {
		t.Fatalf("StoreFault after an unrelated error = %v", err)
	}
	sl.Errorf("Filestore [%s] Critical write error: %v", "JOBS", "open /data/jetstream/msgs/1.blk: no such file or directory")
	sl.Errorf("Filestore [%s] Critical write error: %v", "DLQ", "later")
	err := s.StoreFault()
	if err == nil || !strings.Contains(err.Error(), "JOBS") {
		t.Fatalf("StoreFault = %v, want the first write failure", err)
	}
}
