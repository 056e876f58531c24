package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// A base_url from the environment is a secret like a header value, and
// the path of a URL (where webhook and bot URLs carry their tokens) is
// shown in no log line and no dead-letter record unless
// target.log_url_path says it is not secret (#15).
func TestRunBaseURLNotLogged(t *testing.T) {
	const token = "hook-tok-7c1e55a09b"
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/bad") {
			// A target that echoes the URL into its error body.
			http.Error(w, "no such hook: "+r.URL.Path, http.StatusBadRequest)
			return
		}
		w.Write([]byte(`{"ok":true}`))
	}))
	defer target.Close()
	t.Setenv("SLUICE_TEST_TARGET", target.URL+"/hooks/"+token)
	for _, tc := range []struct{ name, baseURL string }{
		{"from the environment", "${SLUICE_TEST_TARGET}"},
		{"written in the file", target.URL + "/hooks/" + token},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fmt.Sprintf(`
source:
  jetstream:
    url: embedded
    embedded: {port: -1}
    fetch_wait: 200ms
target:
  base_url: %q
worker:
  max_attempts: 1
  backoff: {base: 10ms, cap: 20ms}
metrics: {listen: "off"}
log: {level: debug, format: json}
`, tc.baseURL)
			dir := t.TempDir()
			src = strings.Replace(src, "    embedded: {port: -1}\n", fmt.Sprintf("    embedded: {port: -1, store_dir: %q}\n", filepath.Join(dir, "data")), 1)
			cfg, log, logs := loadWithLogs(t, filepath.Join(dir, "sluice.yaml"), src)
			q := client(t, cfg)
			enqueueJob(t, q, "ok", nil)
			enqueueJob(t, q, "bad", map[string]any{"path": "/bad"})
			r := startRun(t, cfg, log)
			testkit.Eventually(t, "the queue to drain", func() bool { return drained(t, q) })
			r.stop(t)
			dl := deadLetters(t, cfg)
			if len(dl) != 1 || dl["bad"].Reason != "client_error" {
				t.Fatalf("dead letters: %+v", dl)
			}
			records, _ := json.Marshal(dl)
			for name, out := range map[string]string{"logs": logs.String(), "dead letters": string(records)} {
				if strings.Contains(out, token) {
					t.Errorf("%s show the token of base_url's path:\n%s", name, out)
				}
			}
			if !strings.Contains(logs.String(), "sluice running") || !strings.Contains(logs.String(), `"level":"DEBUG"`) {
				t.Errorf("the logs were not captured: %.500s", logs.String())
			}
		})
	}
}
