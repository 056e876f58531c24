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

// TestRunNamesTheFlag: a bad value given on the command line is reported
// as the flag's or the --set argument's, never as a line of the file that
// holds another value, and a flag's value of the wrong type names the flag
// and the value without the parser's jargon.
func TestRunNamesTheFlag(t *testing.T) {
	file := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(file, []byte("target:\n  base_url: http://127.0.0.1:9\nworker:\n  max_attempts: 4\n  max_in_flight: 8\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--set", "worker.max_attempts=0"}, "config: worker.max_attempts: must be > 0, got 0 (from --set worker.max_attempts)"},
		{[]string{"--max-in-flight", "0"}, "config: worker.max_in_flight: must be > 0, got 0 (from --max-in-flight)"},
		{[]string{"--rate", "x"}, `--rate: must be a number, got "x"`},
		{[]string{"--max-in-flight", "lots"}, `--max-in-flight: must be an integer, got "lots"`},
		{[]string{"--ui=maybe"}, `--ui: must be true or false, got "maybe"`},
	} {
		_, err := testkit.RunCLI(t.Context(), newRootCmd, append([]string{"run", "-c", file}, tc.args...)...)
		if err == nil || err.Error() != tc.want {
			t.Errorf("run %s: %v, want %q", strings.Join(tc.args, " "), err, tc.want)
		}
	}
}
