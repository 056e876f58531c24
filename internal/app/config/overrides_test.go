package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app/config"
)

// TestOverridesPrecedence: --set beats the environment, which beats the
// file, which beats the defaults; a --set value is typed by its option.
func TestOverridesPrecedence(t *testing.T) {
	file := []byte("source:\n  jetstream:\n    url: nats://file:4222\n  pubsub:\n    project: from-file\nworker:\n  max_in_flight: 8\n")
	env := map[string]string{"NATS_URL": "nats://env:4222", "GOOGLE_CLOUD_PROJECT": "from-env"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cfg, err := config.Parse(file, config.Options{Lookup: lookup, NoTarget: true,
		Set: []string{"worker.max_in_flight=16", "limiter.burst=5s", "target.throttle_statuses=[429,503]", "source.pubsub.project=from-set"}})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Source.JetStream.URL != "nats://env:4222" {
		t.Errorf("url = %q, want NATS_URL's", cfg.Source.JetStream.URL)
	}
	if cfg.Source.PubSub.Project != "from-set" {
		t.Errorf("project = %q, want --set's over GOOGLE_CLOUD_PROJECT", cfg.Source.PubSub.Project)
	}
	if cfg.Worker.MaxInFlight != 16 || cfg.Limiter.Burst != 5*time.Second || len(cfg.Target.ThrottleStatuses) != 2 {
		t.Errorf("--set not applied: max_in_flight %d, burst %v, throttle_statuses %v", cfg.Worker.MaxInFlight, cfg.Limiter.Burst, cfg.Target.ThrottleStatuses)
	}
	cfg, err = config.Parse(file, config.Options{Lookup: lookup, NoTarget: true})
	if err != nil || cfg.Source.PubSub.Project != "from-env" || cfg.Worker.MaxInFlight != 8 {
		t.Errorf("without --set: project %q max_in_flight %d (%v), want the env's and the file's", cfg.Source.PubSub.Project, cfg.Worker.MaxInFlight, err)
	}
	cfg, err = config.Parse(nil, config.Options{Lookup: func(string) (string, bool) { return "", false }, NoTarget: true})
	if err != nil || cfg.Source.JetStream.URL != config.Default().Source.JetStream.URL {
		t.Errorf("no file, no env: url %q (%v), want the default", cfg.Source.JetStream.URL, err)
	}
}

// TestSetErrors: a --set of the wrong type or an unknown key is a problem
// naming the key, with no line; a malformed argument names itself.
func TestSetErrors(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for _, tc := range []struct{ set, want string }{
		{"worker.max_in_flight=lots", "worker.max_in_flight"},
		{"limiter.burst=5", "limiter.burst"},
		{"worker.max_inflight=3", "max_in_flight"},
		{"noequals", "key.path=value"},
		{"worker..id=x", "not a key path"},
	} {
		_, err := config.Parse(nil, config.Options{Lookup: none, NoTarget: true, Set: []string{tc.set}})
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "line 1") {
			t.Errorf("--set %s: %v, want an error naming %s without a line", tc.set, err, tc.want)
		}
	}
}

// TestOverrideNamesItsOrigin: a problem with a value set over the file
// names the --set argument or the variable that set it, never the line
// where the file set the key to another value.
func TestOverrideNamesItsOrigin(t *testing.T) {
	file := []byte("target:\n  base_url: http://127.0.0.1:9\nworker:\n  max_attempts: 4\nsource:\n  jetstream:\n    url: nats://127.0.0.1:4222\n")
	env := func(k string) (string, bool) {
		if k == "NATS_URL" {
			return "not a url", true
		}
		return "", false
	}
	_, err := config.Parse(file, config.Options{Lookup: env, Set: []string{"worker.max_attempts=0"}})
	got := ""
	if err != nil {
		got = err.Error()
	}
	for _, want := range []string{
		"config: worker.max_attempts: must be > 0, got 0 (from --set worker.max_attempts)",
		`(from NATS_URL)`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("got\n%s\nwant a line with %q", got, want)
		}
	}
	if strings.Contains(got, "line") {
		t.Errorf("got\n%s\nwant no line of the file: the file's values are not the ones refused", got)
	}

	// A flag's value, set by Adjust: the flag.
	_, err = config.Parse(file, config.Options{Adjust: func(c *config.Config) error {
		c.Worker.MaxAttempts = 0
		c.SetBy("worker.max_attempts", "--max-attempts")
		return nil
	}})
	if err == nil || err.Error() != "config: worker.max_attempts: must be > 0, got 0 (from --max-attempts)" {
		t.Errorf("a flag's value: %v", err)
	}
}

// TestProblemsInLineOrder: the problems come in the order of the file's
// lines, and a problem that only follows from another one is left out.
func TestProblemsInLineOrder(t *testing.T) {
	file := []byte(`log:
  level: verbose
target:
  base_url: http://127.0.0.1:8080
limiter:
  max_units_per_minute: -5
  burst: -1s
worker:
  max_in_flight: 0
source:
  kind: jetstrem
`)
	_, err := config.Parse(file, config.Options{Lookup: func(string) (string, bool) { return "", false }})
	want := `config: log.level: must be "debug", "info", "warn" or "error", got "verbose" (line 2)
config: limiter.max_units_per_minute: must be > 0, got -5 (line 6)
config: limiter.burst: must be >= 0, got -1s (line 7)
config: worker.max_in_flight: must be > 0, got 0 (line 9)
config: source.kind: must be "jetstream" or "pubsub", got "jetstrem" (line 11)`
	if err == nil || err.Error() != want {
		t.Errorf("got\n%v\nwant\n%s", err, want)
	}
}
