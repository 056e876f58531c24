package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/worker"
)

func envOf(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const minimalConfig = "target:\n  base_url: http://127.0.0.1:8080\n"

func TestParseConfigMinimal(t *testing.T) {
	cfg, err := parseEnv([]byte(minimalConfig), envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	want := Default()
	if cfg.Worker != want.Worker || cfg.Limiter != want.Limiter || cfg.Jobs.Envelope != "json" ||
		cfg.Jobs.MaxEnvelopeBytes != 1<<20 || cfg.Metrics != want.Metrics || cfg.DeadLetters.Kind != "nats" {
		t.Errorf("defaults not kept: %+v", cfg)
	}
	wc := cfg.WorkerConfig(30 * time.Second)
	if wc.MaxAttempts != 4 || wc.MaxDeliveries != 10 || wc.MaxRedeliveryDelay != 10*time.Minute ||
		wc.BackoffBase != time.Second || wc.BackoffCap != 30*time.Second || wc.ShutdownTimeout != 30*time.Second {
		t.Errorf("worker config = %+v", wc)
	}
}

func TestParseConfigFull(t *testing.T) {
	src := `
target:
  base_url: ${API_URL}
  timeout: 5s
  headers:
    Authorization: Bearer ${API_TOKEN}
  retry_after_headers:
    - name: x-ms-retry-after-ms
      unit: milliseconds
  rate_limit_headers: x-ratelimit
  rate_limit_reset: unix
jobs:
  envelope: json
  strict: true
  trust_job_cost: true
  types:
    export: {method: put, path: /exports, cost: 5}
    ping: {path: /ping}
limiter:
  initial_units_per_minute: ${RATE:-1200}
  burst: 2s
worker:
  max_in_flight: ${CONC:-32}
  backoff: {base: 500ms, cap: 10s}
results:
  kind: jsonl
  path: /tmp/results.jsonl
dead_letters:
  kind: none
log: {format: json, level: debug}
metrics: {listen: "off"}
`
	cfg, err := parseEnv([]byte(src), envOf(map[string]string{"API_URL": "http://127.0.0.1:9000/v1", "API_TOKEN": "s3cr3t-t0ken", "CONC": "8"}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Target.BaseURL != "http://127.0.0.1:9000/v1" || cfg.Target.Headers["Authorization"] != "Bearer s3cr3t-t0ken" {
		t.Errorf("target = %+v", cfg.Target)
	}
	if cfg.Limiter.InitialUnitsPerMinute != 1200 || time.Duration(cfg.Limiter.Burst) != 2*time.Second {
		t.Errorf("limiter = %+v", cfg.Limiter)
	}
	if cfg.Worker.MaxInFlight != 8 || time.Duration(cfg.Worker.Backoff.Base) != 500*time.Millisecond {
		t.Errorf("worker = %+v", cfg.Worker)
	}
	wc := cfg.WorkerConfig(time.Minute)
	if wc.Jobs.Types["export"] != (worker.JobType{Method: "PUT", Path: "/exports", Cost: 5}) ||
		wc.Jobs.Types["ping"] != (worker.JobType{Path: "/ping", Cost: 1}) || !wc.Jobs.Strict || !wc.Jobs.TrustJobCost {
		t.Errorf("jobs = %+v", wc.Jobs)
	}
	hc, err := cfg.HTTPConfig()
	if err != nil {
		t.Fatal(err)
	}
	if len(hc.Classifier.RetryAfterHeaders) != 1 || hc.Classifier.RetryAfterHeaders[0].Name != "x-ms-retry-after-ms" {
		t.Errorf("classifier = %+v", hc.Classifier)
	}
	if want := (call.RateLimitHeaders{Format: call.RateLimitX, Reset: call.UnitUnixTime}); hc.Classifier.RateLimitHeaders != want {
		t.Errorf("rate limit headers = %+v, want %+v", hc.Classifier.RateLimitHeaders, want)
	}
}

// Every bad config gives its own message: the field, the value (unless
// secret), the rule, and the line.
func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want string
	}{
		{"unknown top-level key", minimalConfig + "wokrer:\n  max_in_flight: 3\n",
			nil, `config: wokrer: unknown key (did you mean "worker"?) (line 3)`},
		{"unknown nested key", minimalConfig + "worker:\n  max_inflight: 3\n",
			nil, `config: worker.max_inflight: unknown key (did you mean "max_in_flight"?) (line 4)`},
		{"unknown key in a job type", minimalConfig + "jobs:\n  types:\n    a:\n      pth: /x\n",
			nil, `config: jobs.types.a.pth: unknown key (did you mean "path"?) (line 6)`},
		{"negative burst", minimalConfig + "limiter:\n  burst: -1s\n",
			nil, `config: limiter.burst: must be >= 0, got -1s (line 4)`},
		{"bad duration", minimalConfig + "worker:\n  shutdown_timeout: soon\n",
			nil, `config: worker.shutdown_timeout: must be a duration such as "10s" or "1m30s", got "soon" (line 4)`},
		{"not a number", minimalConfig + "worker:\n  max_in_flight: lots\n",
			nil, `config: worker.max_in_flight: must be an integer, got "lots" (line 4)`},
		{"zero max_attempts", minimalConfig + "worker:\n  max_attempts: 0\n",
			nil, `config: worker.max_attempts: must be > 0, got 0 (line 4)`},
		{"cap below base", minimalConfig + "worker:\n  backoff:\n    base: 10s\n    cap: 1s\n",
			nil, `config: worker.backoff.cap: must be >= backoff.base (10s), got 1s (line 6)`},
		{"bad envelope", minimalConfig + "jobs:\n  envelope: xml\n",
			nil, `config: jobs.envelope: must be "json" or "raw", got "xml" (line 4)`},
		{"negative type cost", minimalConfig + "jobs:\n  types:\n    export:\n      cost: -2\n",
			nil, `config: jobs.types.export.cost: must be a number from 0 to 1e+12, got -2 (line 6)`},
		{"type path leaves the target", minimalConfig + "jobs:\n  types:\n    x:\n      path: //evil.example/\n",
			nil, `config: jobs.types.x.path: must be a path starting with a single "/", got "//evil.example/" (line 6)`},
		{"missing base_url", "worker:\n  max_in_flight: 3\n",
			nil, `config: target.base_url: required`},
		{"base_url not http", "target:\n  base_url: ftp://x/\n",
			nil, `config: target.base_url: must be an absolute http or https URL, got "ftp://x/" (line 2)`},
		{"unset env var", "target:\n  base_url: ${NOPE}\n",
			nil, `config: target.base_url: environment variable NOPE is not set (use ${NOPE:-default} for a default) (line 2)`},
		{"bad output kind", minimalConfig + "results:\n  kind: kafka\n",
			nil, `config: results.kind: must be one of none, nats, pubsub, jsonl, got "kafka" (line 4)`},
		{"jsonl without path", minimalConfig + "dead_letters:\n  kind: jsonl\n",
			nil, `config: dead_letters.path: required (line 3)`},
		{"bad log format", minimalConfig + "log:\n  format: xml\n",
			nil, `config: log.format: must be "auto", "text" or "json", got "xml" (line 4)`},
		{"bad metrics listen", minimalConfig + "metrics:\n  listen: nowhere\n",
			nil, `config: metrics.listen: must be host:port or "off", got "nowhere" (line 4)`},
		{"limiter rate out of range", minimalConfig + "limiter:\n  initial_units_per_minute: 10\n",
			nil, `config: limiter.initial_units_per_minute: must be between min_units_per_minute (60) and max_units_per_minute (10000000), got 10 (line 4)`},
		{"section is a list", minimalConfig + "worker:\n  - 1\n",
			nil, `config: worker: must be a mapping of keys to values (line 4)`},
		{"in-flight over the limiter queue", minimalConfig + "worker:\n  max_in_flight: 600\n",
			nil, `config: worker.max_in_flight: must be <= limiter.queue_limit (500) so that waiting jobs are not rejected, got 600 (line 4)`},
		{"YAML syntax", "target: [\n", nil, `config: line 1: did not find expected node content`},
		{"bad retry header unit", minimalConfig + "  retry_after_headers:\n    - {name: X-Wait, unit: hours}\n",
			nil, `config: target.retry_after_headers[0].unit: must be seconds, milliseconds or unix, got "hours" (line 4)`},
		{"bad quota headers", minimalConfig + "  rate_limit_headers: github\n",
			nil, `config: target.rate_limit_headers: must be none, ietf or x-ratelimit, got "github" (line 3)`},
		{"bad quota reset", minimalConfig + "  rate_limit_headers: x-ratelimit\n  rate_limit_reset: epoch\n",
			nil, `config: target.rate_limit_reset: must be delta or unix, got "epoch" (line 4)`},
		{"unix reset of ietf", minimalConfig + "  rate_limit_headers: ietf\n  rate_limit_reset: unix\n",
			nil, `config: target.rate_limit_reset: unix applies to rate_limit_headers: x-ratelimit only, got rate_limit_headers: ietf (line 4)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseEnv([]byte(tt.src), envOf(tt.env))
			if err == nil {
				t.Fatalf("no error, want %q", tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error:\n%v\nwant it to contain:\n%s", err, tt.want)
			}
		})
	}
}

func TestParseConfigCollectsEveryError(t *testing.T) {
	src := minimalConfig + "worker:\n  max_attempts: 0\n  max_deliveries: -1\nlog:\n  level: loud\n"
	_, err := parseEnv([]byte(src), envOf(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"worker.max_attempts", "worker.max_deliveries", "log.level"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

// Secret values (target headers, anything from the environment) never
// appear in an error, even when they are what is wrong.
func TestParseConfigNeverPrintsSecrets(t *testing.T) {
	const token = "tok-9f8e7d6c5b4a"
	srcs := []string{
		"target:\n  base_url: http://127.0.0.1/\n  headers:\n    Authorization: \"Bearer ${TOKEN}\\r\\n\"\n",
		"target:\n  base_url: http://127.0.0.1/?k=${TOKEN}\n",
		"target:\n  base_url: http://127.0.0.1/\n  user_agent: \"${TOKEN}\\n\"\n",
		"target:\n  base_url: http://127.0.0.1/\nworker:\n  id: ${TOKEN}\n  max_in_flight: ${TOKEN}\n",
	}
	for _, src := range srcs {
		_, err := parseEnv([]byte(src), envOf(map[string]string{"TOKEN": token}))
		if err == nil {
			t.Fatalf("config %q: no error", src)
		}
		if strings.Contains(err.Error(), token) || strings.Contains(err.Error(), "9f8e7d6c") {
			t.Errorf("error shows the secret: %v", err)
		}
	}
}

func TestExpandEnv(t *testing.T) {
	env := envOf(map[string]string{"A": "1", "EMPTY": ""})
	tests := []struct{ in, want string }{
		{"${A}", "1"}, {"x${A}y${A}", "x1y1"}, {"${B:-two}", "two"}, {"${EMPTY:-d}", "d"},
		{"${A:-d}", "1"}, {"$${A}", "${A}"}, {"$A", "$A"}, {"${B:-}", ""},
	}
	for _, tt := range tests {
		got, _, err := expandEnv(tt.in, env)
		if err != nil || got != tt.want {
			t.Errorf("expandEnv(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	for _, bad := range []string{"${B}", "${A", "${1X}", "${}"} {
		if _, _, err := expandEnv(bad, env); err == nil {
			t.Errorf("expandEnv(%q): no error", bad)
		}
	}
}

// The example config decodes strictly, holds every option, and each value
// it shows is the default (except the few it sets on purpose).
func TestExampleConfig(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "config.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseEnv(data, envOf(nil))
	if err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	var missing []string
	walkFields("", reflect.TypeFor[Config](), func(path string) {
		if _, ok := cfg.Lines[path]; !ok {
			missing = append(missing, path)
		}
	})
	if len(missing) > 0 {
		t.Errorf("config.example.yaml does not show: %s", strings.Join(missing, ", "))
	}
	def := Default()
	if cfg.Worker != def.Worker || cfg.Limiter != def.Limiter || cfg.Metrics != def.Metrics || cfg.Log != def.Log {
		t.Errorf("config.example.yaml shows values that are not the defaults:\nworker %+v\nlimiter %+v", cfg.Worker, cfg.Limiter)
	}
	if string(sluice.ExampleConfig) != string(data) {
		t.Errorf("the embedded example differs from config.example.yaml")
	}
}

// walkFields calls fn with the path of every leaf option of t (maps and
// lists are leaves).
func walkFields(prefix string, t reflect.Type, fn func(string)) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		p := field.Join(prefix, tag)
		if f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Duration]() {
			walkFields(p, f.Type, fn)
			continue
		}
		fn(p)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte(minimalConfig))
	f.Add([]byte("target:\n  base_url: ${X:-http://a/}\njobs:\n  types:\n    a: {cost: 1e400}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("limiter: {burst: 1h, aimd: {decrease_factor: 2}}\n"))
	f.Add([]byte("worker: !!binary AAAA\n"))
	if data, err := os.ReadFile(filepath.Join("..", "..", "..", "config.example.yaml")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		_, err := parseEnv(data, envOf(map[string]string{"X": "secretvalue"}))
		if err == nil {
			return
		}
		for _, line := range strings.Split(err.Error(), "\n") {
			if !strings.HasPrefix(line, "config: ") {
				t.Fatalf("error line %q does not start with \"config: \"", line)
			}
		}
		if strings.Contains(err.Error(), "secretvalue") {
			t.Fatalf("error shows an environment value: %v", err)
		}
	})
}

// parseEnv parses a config file with lookup as the environment.
func parseEnv(data []byte, lookup func(string) (string, bool)) (Config, error) {
	return Parse(data, Options{Lookup: lookup})
}
