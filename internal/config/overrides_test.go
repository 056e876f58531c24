package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
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
