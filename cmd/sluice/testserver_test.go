package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestTestserverListen: a bad --listen is an error naming the flag.
func TestTestserverListen(t *testing.T) {
	if _, err := testkit.RunCLI(t.Context(), newRootCmd, "testserver", "--listen", "256.0.0.1:1"); err == nil || !strings.Contains(err.Error(), "--listen") {
		t.Errorf("bad --listen: %v", err)
	}
}
