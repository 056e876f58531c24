package main

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// TestSimulateServeFlags: `sluice simulate --serve` refuses flags it cannot
// combine with and values out of range, naming the flag.
func TestSimulateServeFlags(t *testing.T) {
	for _, args := range [][]string{
		{"simulate", "--serve", "127.0.0.1:0", "--json"},
		{"simulate", "--serve", "127.0.0.1:0", "--compare"},
		{"simulate", "--serve", "127.0.0.1:0", "--speed", "0"},
		{"simulate", "--serve", "127.0.0.1:0", "--instances", "40"},
		{"simulate", "--serve", "127.0.0.1:99999"},
	} {
		if _, err := testkit.RunCLI(t.Context(), newRootCmd, args...); err == nil || !strings.Contains(err.Error(), "--") {
			t.Errorf("%v: %v, want an error naming the flag", args, err)
		}
	}
}
