package config

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice"
)

// The Pub/Sub example passes the checks `config validate` runs, and keeps
// its dead letters on Pub/Sub (#15).
func TestPubSubExample(t *testing.T) {
	data, err := PubSubExample(sluice.ExampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseEnv(data, envOf(nil))
	if err != nil {
		t.Fatalf("the Pub/Sub example: %v", err)
	}
	if cfg.Source.Kind != SourcePubSub || cfg.DeadLetters.Kind != OutputPubSub || cfg.Source.PubSub.Project != "my-project" {
		t.Errorf("source %q, dead letters %q, project %q", cfg.Source.Kind, cfg.DeadLetters.Kind, cfg.Source.PubSub.Project)
	}
	if _, err := PubSubExample([]byte(strings.ReplaceAll(string(sluice.ExampleConfig), "kind: jetstream", "kind: x"))); err == nil {
		t.Error("an example without the source line was edited")
	}
}
