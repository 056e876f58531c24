package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluicehq/sluice/internal/app/queue"
	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/internal/testkit/backends"
)

// secretForms are the spellings of secret a target or a message may show:
// as is, query- and path-escaped, and JSON-escaped as Go and PHP write it.
func secretForms(secret string) map[string]string {
	goJSON, _ := json.Marshal(secret)
	forms := map[string]string{
		"raw":          secret,
		"query":        url.QueryEscape(secret),
		"path":         url.PathEscape(secret),
		"Go JSON":      string(goJSON[1 : len(goJSON)-1]),
		"PHP JSON":     strings.ReplaceAll(string(goJSON[1:len(goJSON)-1]), "/", `\/`),
		"JSON \\u002f": strings.ReplaceAll(secret, "/", `\u002f`),
	}
	return forms
}

// A target that echoes the request (path, query and headers) into its
// 404 and 400 bodies, as they are and escaped as PHP's JSON encoder does,
// never gets a secret of the config (from the environment: in a job path,
// a query, base_url's path or a header) into the logs, the metrics, the
// dead letters, `sluice status`, the live page or `config validate`.
func TestRunNoSecretsEchoed(t *testing.T) {
	secrets := map[string]string{
		"SLUICE_TEST_QUERY_KEY": "qk_live/Abc+def=ghi9",
		"SLUICE_TEST_HOOK":      "T0001/B0002/hookSecret77",
		"SLUICE_TEST_BASE":      "base-Secret-0c4e",
		"SLUICE_TEST_TOKEN":     "tok/Bearer+9f8e7d6c",
	}
	for k, v := range secrets {
		t.Setenv(k, v)
	}
	natsURL := backends.StartNATS(t)
	target := httptest.NewServer(http.HandlerFunc(echoSecrets))
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
  base_url: %s/${SLUICE_TEST_BASE}
  log_url_path: true
  headers:
    Authorization: Bearer ${SLUICE_TEST_TOKEN}
jobs:
  types:
    query: {path: "/v1/items?api_key=${SLUICE_TEST_QUERY_KEY}"}
    hook: {method: POST, path: "/hooks/${SLUICE_TEST_HOOK}"}
worker:
  max_attempts: 1
  max_deliveries: 1
dead_letters: {kind: jsonl, path: %s}
metrics: {listen: %q}
log: {level: debug, format: json}
`, natsURL, target.URL, dlPath, testkit.FreeAddr(t))
	cfg, log, logs := loadWithLogs(t, file, src)
	q := client(t, cfg)
	enqueueJob(t, q, "q1", map[string]any{"type": "query"})
	enqueueJob(t, q, "h1", map[string]any{"type": "hook"})
	reg := prometheus.NewRegistry()
	r := startRunWith(t, cfg, true, log, reg)
	testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
	live := liveFrame(t, "http://"+cfg.Metrics.Listen+"/ui/events")
	r.stop(t)

	dead, err := os.ReadFile(dlPath)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(dead), `"reason":"client_error"`) != 2 || !strings.Contains(string(dead), "[redacted]") {
		t.Fatalf("dead letters: want two client errors with the echo redacted: %s", dead)
	}
	var status strings.Builder
	if err := queue.Status(t.Context(), cfg, queue.StatusOptions{Interval: time.Millisecond}, &status, &status); err != nil {
		t.Fatalf("status: %v", err)
	}
	var statusJSON strings.Builder
	if err := queue.Status(t.Context(), cfg, queue.StatusOptions{JSON: true, Interval: time.Millisecond}, &statusJSON, &statusJSON); err != nil {
		t.Fatalf("status --json: %v", err)
	}

	// config validate on a file with the secrets where they do not belong.
	bad := strings.Replace(src, "worker:\n", "worker:\n  max_in_flight: \"${SLUICE_TEST_QUERY_KEY}\"\n  id: \"${SLUICE_TEST_HOOK}\"\n", 1)
	bad = strings.Replace(bad, "fetch_wait: 200ms", "fetch_wait: \"${SLUICE_TEST_TOKEN}\"", 1)
	badFile := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(badFile, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	validateOut := validateFails(t, badFile)

	outputs := map[string]string{
		"logs": logs.String(), "metrics": metricsText(t, reg), "dead letters": string(dead),
		"status": status.String(), "status --json": statusJSON.String(), "live page": live, "config validate": validateOut,
		// The JSON outputs once decoded: a body's "\/" is "\\/" in them.
		"logs, decoded": decodeJSONLines(logs.String()), "dead letters, decoded": decodeJSONLines(string(dead)),
		"live page, decoded": decodeJSONLines(strings.TrimPrefix(live, "data: ")),
	}
	for name, out := range outputs {
		if out == "" {
			t.Errorf("%s: empty", name)
		}
		for env, secret := range secrets {
			for form, spelled := range secretForms(secret) {
				if strings.Contains(out, spelled) {
					t.Errorf("%s hold %s %s (%q):\n%s", name, env, form, spelled, out)
				}
			}
		}
	}
}

// decodeJSONLines returns the strings of each JSON line of s, decoded, one
// a line.
func decodeJSONLines(s string) string {
	var b strings.Builder
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, e := range v {
				b.WriteString(k + "\n")
				walk(e)
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		default:
			fmt.Fprintf(&b, "%v\n", v)
		}
	}
	for _, line := range strings.Split(s, "\n") {
		var v any
		if json.Unmarshal([]byte(line), &v) == nil {
			walk(v)
		}
	}
	return b.String()
}

// liveFrame returns the first frame of the live page's event stream.
func liveFrame(t *testing.T, u string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("live page: %v", err)
		}
		if strings.HasPrefix(line, "data: ") {
			return line
		}
	}
}

// echoSecrets answers every call with what it received (path, query and
// headers) in a 404 body (a 400 for a webhook path), as it is, as JSON
// and as PHP's JSON encoder escapes it.
func echoSecrets(w http.ResponseWriter, r *http.Request) {
	var hs []string
	for k, v := range r.Header {
		hs = append(hs, k+": "+strings.Join(v, ","))
	}
	seen := r.URL.RequestURI() + " " + r.URL.Path + " " + r.URL.RawQuery + " " + strings.Join(hs, "; ")
	j, _ := json.Marshal(seen)
	status := http.StatusNotFound
	if strings.Contains(r.URL.Path, "hooks") {
		status = http.StatusBadRequest
	}
	w.WriteHeader(status)
	// As is, JSON as Go writes it, and JSON as PHP writes it.
	fmt.Fprintf(w, "%s\n%s\n%s\n", seen, j, strings.ReplaceAll(string(j), "/", `\/`))
}
