package main

import (
	"bytes"
	"context"
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

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
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
	cases := []natsSecretCase{
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
		t.Run(tc.name, func(t *testing.T) { checkNATSSecretHidden(t, tc, tokenFile) })
	}
}

// No secret (the API token from the environment) appears in the logs at
// debug level, in dead-letter records, in the metrics, or in the output of
// `sluice config validate`.
func TestRunNoSecretsInOutput(t *testing.T) {
	const token = "sk-live-7c1f4e2a9b3d8e6f"
	t.Setenv("SLUICE_TEST_API_TOKEN", token)
	natsURL := backends.StartNATS(t)
	api := newAPILog()
	echo := func(_ int, w http.ResponseWriter, r *http.Request) {
		// A careless API that echoes the credentials in its error.
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, "bad credentials: %s", r.Header.Get("Authorization"))
	}
	api.answers["echo"] = echo
	api.answers["dup"] = func(_ int, w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprintf(w, "busy, token %s", r.Header.Get("Authorization"))
	}
	target := httptest.NewServer(api)
	defer target.Close()

	dir := t.TempDir()
	file := filepath.Join(dir, "sluice.yaml")
	dlPath := filepath.Join(dir, "dead.jsonl")
	src := fmt.Sprintf(`
source:
  jetstream:
    url: %s
    fetch_wait: 200ms
target:
  base_url: %s
  headers:
    Authorization: Bearer ${SLUICE_TEST_API_TOKEN}
jobs:
  types:
    secret: {path: "/x"}
worker:
  max_attempts: 2
  max_deliveries: 1
  backoff: {base: 10ms, cap: 20ms}
dead_letters: {kind: jsonl, path: %s}
metrics: {listen: "off"}
log: {level: debug, format: json}
`, natsURL, target.URL, dlPath)
	cfg, log, logs := loadWithLogs(t, file, src)
	q := client(t, cfg)
	enqueueJob(t, q, "echo", map[string]any{"headers": map[string]string{"X-Job": "echo"}})
	enqueueJob(t, q, "dup", map[string]any{"headers": map[string]string{"X-Job": "dup"}})
	enqueueJob(t, q, "ok", map[string]any{"type": "secret", "headers": map[string]string{"X-Job": "ok"}})
	reg := prometheus.NewRegistry()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run.Worker(ctx, cfg, run.Options{Registry: reg, Log: log}) }()
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if api.count("echo") != 1 || api.count("dup") != 2 || api.count("ok") != 1 {
		t.Fatalf("target traffic: %v", api.hits)
	}

	metrics := metricsText(t, reg)
	dead, err := os.ReadFile(dlPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(dead, []byte(`"reason":"client_error"`)) || !bytes.Contains(dead, []byte(`"reason":"max_deliveries"`)) {
		t.Fatalf("dead letters: %s", dead)
	}

	// `sluice config validate` on a file that is wrong in the places the
	// secret goes.
	bad := strings.Replace(src, "base_url: "+target.URL, "base_url: "+target.URL+"/?t=${SLUICE_TEST_API_TOKEN}", 1)
	bad = strings.Replace(bad, "worker:\n", "worker:\n  id: \"${SLUICE_TEST_API_TOKEN}\"\n  max_in_flight: ${SLUICE_TEST_API_TOKEN}\n", 1)
	badFile := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badFile, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	validateOut := validateFails(t, badFile)
	if !strings.Contains(validateOut, "worker.max_in_flight") {
		t.Errorf("validate output: %s", validateOut)
	}

	for name, out := range map[string]string{
		"logs": logs.String(), "metrics": metrics, "dead letters": string(dead), "config validate": validateOut,
	} {
		if strings.Contains(out, token) || strings.Contains(out, token[8:]) {
			t.Errorf("%s contain the API token:\n%s", name, out)
		}
	}
	if !strings.Contains(logs.String(), `"level":"DEBUG"`) {
		t.Errorf("no debug logs captured")
	}
}

// natsSecretCase is a way to give sluice a NATS secret.
type natsSecretCase struct {
	name   string
	secret string
	auth   func(*server.Options)
	url    string // %s is host:port
	// section is the auth section; bad is the same section with the
	// secret also where it does not belong.
	section, bad string
}

// checkNATSSecretHidden runs a worker with tc's secret, then `config
// validate` on a bad file and a worker the server refuses, and checks that
// none of their outputs shows the secret.
func checkNATSSecretHidden(t *testing.T, tc natsSecretCase, tokenFile string) {
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
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
	r.stop(t)

	dl := deadLetters(t, cfg)
	if len(dl) != 2 || dl["bad"].Reason != "client_error" || dl["junk"].Reason != "bad_json" {
		t.Fatalf("dead letters: %+v", dl)
	}
	records, err := json.Marshal(dl)
	if err != nil {
		t.Fatal(err)
	}
	metrics := metricsText(t, reg)
	// config validate on a file with the secret in wrong places.
	badFile := filepath.Join(dir, "bad.yaml")
	bad := strings.Replace(src, "    fetch_wait: 200ms\n", "    fetch_wait: 200ms\n"+tc.bad, 1)
	if tc.section != "" {
		bad = strings.Replace(bad, tc.section, "", 1)
	}
	if err := os.WriteFile(badFile, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	validateOut := validateFails(t, badFile)
	refused := refusedWorker(t, file, tc, tokenFile)
	for name, out := range map[string]string{
		"logs": logs.String(), "metrics": metrics, "dead letters": string(records),
		"config validate": validateOut, "refused worker": refused,
	} {
		if strings.Contains(out, tc.secret) {
			t.Errorf("%s contain the NATS secret:\n%s", name, out)
		}
	}
	if !strings.Contains(logs.String(), `"level":"DEBUG"`) || !strings.Contains(logs.String(), "nats connected") {
		t.Errorf("the debug logs were not captured: %.500s", logs.String())
	}
	if !strings.Contains(validateOut, "source.jetstream") {
		t.Errorf("validate output does not name the bad section: %s", validateOut)
	}
}

// refusedWorker runs a worker whose secret is one character off and
// returns its error and logs: the server refuses it.
func refusedWorker(t *testing.T, file string, tc natsSecretCase, tokenFile string) string {
	t.Helper()
	// A worker the server refuses (the secret is one character
	// off) fails with an error that does not show it either.
	t.Setenv("SLUICE_TEST_NATS_SECRET", tc.secret+"x")
	if tc.name == "token file" {
		if err := os.WriteFile(tokenFile, []byte(tc.secret+"x"), 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.WriteFile(tokenFile, []byte(tc.secret), 0o600)
	}
	refused := ""
	if wrong, err := config.Load(file, config.Options{}); err != nil {
		refused = err.Error()
	} else {
		wrong.Source.JetStream.ConnectTimeout = 2 * time.Second
		var out testkit.SyncBuffer
		wlog, _ := run.NewLogger(&out, "json", "debug")
		err := run.Worker(t.Context(), wrong, run.Options{Registry: prometheus.NewRegistry(), Log: wlog})
		if err == nil {
			t.Fatal("a worker with a wrong secret ran")
		}
		refused = err.Error() + "\n" + out.String()
	}
	return refused
}

// metricsText is everything reg holds, in the text format.
func metricsText(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	var out bytes.Buffer
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		expfmt.MetricFamilyToText(&out, mf)
	}
	return out.String()
}

// validateFails runs `sluice config validate -c file`, which must fail,
// and returns what it printed.
func validateFails(t *testing.T, file string) string {
	t.Helper()
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "config", "validate", "-c", file)
	if err == nil {
		t.Fatalf("config validate passed a bad file: %s", out)
	}
	return out
}
