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
		"nats://u:pw@h:4222":               "nats://[REDACTED]@h:4222",
		"nats://tok@h:1,nats://h2:2":       "nats://[REDACTED]@h:1,nats://h2:2",
		"nats://127.0.0.1:4222":            "nats://127.0.0.1:4222",
		"u:p@host:4222,nats://a:b@c:1234":  "[REDACTED]@host:4222,nats://[REDACTED]@c:1234",
		"nats://admin:pw_SECRET%zz@h:4222": "nats://[REDACTED]@h:4222",
		"nats://admin:pa/ss?#@h:4222":      "nats://[REDACTED]@h:4222",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestURLParseErrorsHidden: a URL that does not parse is reported without
// a byte of it, by Validate and by Open (the report's NATS_URL printed the
// password in url.Parse's error).
func TestURLParseErrorsHidden(t *testing.T) {
	const secret = "pw_SECRET"
	for _, u := range []string{
		"nats://admin:" + secret + "%zz@127.0.0.1:4222",
		"admin:" + secret + "%zz@127.0.0.1:4222",
		"nats://127.0.0.1:4222, nats://admin:" + secret + "%zz@127.0.0.1:4223",
		"nats://admin:" + secret + "@ho st:4222",
		"nats://admin:" + secret + "\x7f@h:4222",
	} {
		err := Config{URL: u, Stream: "S", Subjects: []string{"s"}, Consumer: "c"}.Validate()
		if err == nil || !strings.Contains(err.Error(), "does not parse") {
			t.Errorf("Validate(%q) = %v; want a parse error", u, err)
		}
		if err != nil && (strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "zz")) {
			t.Errorf("Validate(%q) = %v: holds the password", u, err)
		}
		_, err = Open(t.Context(), Config{URL: u, Stream: "S", Subjects: []string{"s"}, Consumer: "c"}, nil)
		if err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "zz") {
			t.Errorf("Open(%q) = %v; want an error without the password", u, err)
		}
		// And connect, past Validate: nats.Connect's own parse error.
		s := &Source{log: discard, reconnect: make(chan struct{}), closed: make(chan struct{})}
		if err := s.connect(u); err == nil || strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "zz") {
			t.Errorf("connect(%q) = %v; want an error without the password", u, err)
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
