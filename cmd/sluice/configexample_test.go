package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// `config example --source pubsub` prints a config that `config validate`
// accepts, for the Pub/Sub source with Pub/Sub dead letters; so does the
// default example; an unknown source is a usage error (#15).
func TestConfigExampleValidates(t *testing.T) {
	for _, source := range []string{"jetstream", "pubsub"} {
		out, err := testkit.RunCLI(t.Context(), newRootCmd, "config", "example", "--source", source)
		if err != nil {
			t.Fatalf("--source %s: %v", source, err)
		}
		if source == "pubsub" && (!strings.Contains(out, "\n  kind: pubsub\n") || !strings.Contains(out, "dead_letters:\n  kind: pubsub\n")) {
			t.Errorf("--source pubsub: not a Pub/Sub config:\n%s", out)
		}
		path := filepath.Join(t.TempDir(), "sluice.yaml")
		if err := os.WriteFile(path, []byte(out), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := testkit.RunCLI(t.Context(), newRootCmd, "config", "validate", path)
		if err != nil || strings.TrimSpace(got) != "OK" {
			t.Errorf("validate the %s example: %v\n%s", source, err, got)
		}
	}
	if _, err := testkit.RunCLI(t.Context(), newRootCmd, "config", "example", "--source", "kafka"); err == nil || !strings.Contains(err.Error(), `--source must be "jetstream" or "pubsub", got "kafka"`) {
		t.Errorf("--source kafka: %v", err)
	}
}
