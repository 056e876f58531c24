package main

import (
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/tracing"
)

// TestMain clears the variables that the commands read as overrides of
// their config (docs/configuration.md). A test sets what it needs with
// t.Setenv; a value in the environment that runs the tests (CI names its
// NATS server in NATS_URL for the sources' conformance suites) must not
// turn every command under test, and every child process, to that server.
func TestMain(m *testing.M) {
	for _, o := range config.EnvOverrides() {
		os.Unsetenv(o[0])
	}
	for _, name := range []string{config.EnvConfigFile, tracing.EnvEndpoint, tracing.EnvTracesEndpoint} {
		os.Unsetenv(name)
	}
	os.Exit(m.Run())
}
