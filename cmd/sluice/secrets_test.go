package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/run"
	"github.com/sluicehq/sluice/internal/testutil"
)

// startAuthNATS starts a JetStream server that requires the credentials
// set by auth.
func startAuthNATS(t *testing.T, auth func(*server.Options)) (host string, port int) {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, NoSigs: true, NoLog: true, JetStream: true, StoreDir: t.TempDir()}
	auth(opts)
	ns, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	ns.Start()
	t.Cleanup(ns.Shutdown)
	if !ns.ReadyForConnections(10 * time.Second) {
		t.Fatal("nats server not ready")
	}
	addr := ns.Addr().String()
	h, p, _ := strings.Cut(addr, ":")
	fmt.Sscan(p, &port)
	return h, port
}

// NATS credentials (a password or token from the environment or a file,
// or user information in the URL) never appear in the logs at debug
// level, the metrics, the dead-letter records, or the output of `sluice
// config validate`, nor in the error of a worker that is refused.
func TestRunNoNATSCredentialsInOutput(t *testing.T) {
	const password = "nats-pw-5e1d9c07b2"
	const token = "nats-tok-83ac4f6e1d"
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	users := func(o *server.Options) { o.Users = []*server.User{{Username: "sluice", Password: password}} }
	tokens := func(o *server.Options) { o.Authorization = token }
	cases := []struct {
		name   string
		secret string
		auth   func(*server.Options)
		url    string // %s is host:port
		// section is the auth section; bad is the same section with the
		// secret also where it does not belong.
		section, bad string
	}{
		{"user and password", password, users, "nats://%s",
			"    auth: {user: sluice, password: \"${SLUICE_TEST_NATS_SECRET}\"}\n",
			"    auth: {user: sluice, password: \"${SLUICE_TEST_NATS_SECRET}\", password_file: \"/nonexistent/${SLUICE_TEST_NATS_SECRET}\"}\n"},
		{"token", token, tokens, "nats://%s",
			"    auth: {token: \"${SLUICE_TEST_NATS_SECRET}\"}\n",
			"    auth: {token: \"${SLUICE_TEST_NATS_SECRET}\", token_file: \"/nonexistent\", user: \"${SLUICE_TEST_NATS_SECRET}\"}\n"},
		{"token file", token, tokens, "nats://%s",
			"    auth: {token_file: \"" + tokenFile + "\"}\n",
			"    auth: {token_file: \"" + tokenFile + "\", user: someone, connect_timeout: 1s}\n"},
		{"user information in the URL", password, users, "nats://sluice:${SLUICE_TEST_NATS_SECRET}@%s",
			"", "    connect_timeout: \"${SLUICE_TEST_NATS_SECRET}\"\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("SLUICE_TEST_NATS_SECRET", tc.secret)
			host, port := startAuthNATS(t, tc.auth)
			target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "bad") {
					http.Error(w, "no such record", http.StatusBadRequest)
					return
				}
				w.Write([]byte(`{"ok":true}`))
			}))
			defer target.Close()

			dir := t.TempDir()
			natsURL := fmt.Sprintf(tc.url, fmt.Sprintf("%s:%d", host, port))
			src := fmt.Sprintf(`
source:
  jetstream:
    url: %q
    fetch_wait: 200ms
%starget:
  base_url: %s
worker:
  max_attempts: 1
  backoff: {base: 10ms, cap: 20ms}
metrics: {listen: "off"}
log: {level: debug, format: json}
`, natsURL, tc.section, target.URL)
			file := filepath.Join(dir, "sluice.yaml")
			cfg, log, logs := loadWithLogs(t, file, src)
			q := client(t, cfg)
			enqueueJob(t, q, "ok", nil)
			enqueueJob(t, q, "bad", map[string]any{"path": "/bad"})
			enqueueRawJob(t, q, "junk", []byte(`{"id":`))
			reg := prometheus.NewRegistry()
			r := startRunReg(t, cfg, log, reg)
			testutil.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
			r.stop(t)

			dl := deadLetters(t, cfg)
			if len(dl) != 2 || dl["bad"].Reason != "client_error" || dl["junk"].Reason != "bad_json" {
				t.Fatalf("dead letters: %+v", dl)
			}
			records, err := json.Marshal(dl)
			if err != nil {
				t.Fatal(err)
			}
			var metrics bytes.Buffer
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			for _, mf := range mfs {
				expfmt.MetricFamilyToText(&metrics, mf)
			}

			// config validate on a file with the secret in wrong places.
			badFile := filepath.Join(dir, "bad.yaml")
			bad := strings.Replace(src, "    fetch_wait: 200ms\n", "    fetch_wait: 200ms\n"+tc.bad, 1)
			if tc.section != "" {
				bad = strings.Replace(bad, tc.section, "", 1)
			}
			if err := os.WriteFile(badFile, []byte(bad), 0o600); err != nil {
				t.Fatal(err)
			}
			var validateOut bytes.Buffer
			root := newRootCmd()
			root.SetArgs([]string{"config", "validate", "-c", badFile})
			root.SetOut(&validateOut)
			root.SetErr(&validateOut)
			if err := root.Execute(); err == nil {
				t.Fatalf("config validate passed a bad file: %s", validateOut.String())
			}

			// A worker the server refuses (the secret is one character
			// off) fails with an error that does not show it either.
			t.Setenv("SLUICE_TEST_NATS_SECRET", tc.secret+"x")
			if tc.name == "token file" {
				if err := os.WriteFile(tokenFile, []byte(tc.secret+"x"), 0o600); err != nil {
					t.Fatal(err)
				}
				defer os.WriteFile(tokenFile, []byte(token), 0o600)
			}
			refused := ""
			if wrong, err := config.Load(file, config.Options{}); err != nil {
				refused = err.Error()
			} else {
				wrong.Source.JetStream.ConnectTimeout = time.Duration(2 * time.Second)
				var out bytes.Buffer
				wlog, _ := run.NewLogger(&syncWriter{w: &out}, "json", "debug")
				err := run.Worker(t.Context(), wrong, run.Options{Registry: prometheus.NewRegistry(), Log: wlog})
				if err == nil {
					t.Fatal("a worker with a wrong secret ran")
				}
				refused = err.Error() + "\n" + out.String()
			}

			for name, out := range map[string]string{
				"logs": logs.String(), "metrics": metrics.String(), "dead letters": string(records),
				"config validate": validateOut.String(), "refused worker": refused,
			} {
				if strings.Contains(out, tc.secret) {
					t.Errorf("%s contain the NATS secret:\n%s", name, out)
				}
			}
			if !strings.Contains(logs.String(), `"level":"DEBUG"`) || !strings.Contains(logs.String(), "nats connected") {
				t.Errorf("the debug logs were not captured: %.500s", logs.String())
			}
			if !strings.Contains(validateOut.String(), "source.jetstream") {
				t.Errorf("validate output does not name the bad section: %s", validateOut.String())
			}
		})
	}
}
