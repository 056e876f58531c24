package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestConfigFileFromEnvAndSet: config validate reads the file $SLUICE_CONFIG
// names when given none, and --set values are checked with it, typed by
// their option.
func TestConfigFileFromEnvAndSet(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(file, []byte("target:\n  base_url: http://127.0.0.1:9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_CONFIG", file)
	if out, err := testkit.RunCLI(t.Context(), newRootCmd, "config", "validate"); err != nil || !strings.Contains(out, "OK") {
		t.Fatalf("validate with SLUICE_CONFIG: %q, %v", out, err)
	}
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "config", "validate", "--set", "worker.max_in_flight=lots")
	if err == nil || !strings.Contains(out, "worker.max_in_flight") {
		t.Fatalf("validate --set worker.max_in_flight=lots: %q, %v; want a problem naming the key", out, err)
	}
	t.Setenv("SLUICE_CONFIG", filepath.Join(t.TempDir(), "missing.yaml"))
	if _, err := testkit.RunCLI(t.Context(), newRootCmd, "config", "validate"); err == nil {
		t.Fatal("validate of a missing $SLUICE_CONFIG file succeeded")
	}
}
