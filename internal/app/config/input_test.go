package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/config"
)

// aliasBomb is a "billion laughs" of YAML aliases: levels of ten aliases
// to the level below, 10^levels strings from a few hundred bytes.
func aliasBomb(levels int) string {
	var b strings.Builder
	b.WriteString(`a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	for i := 1; i <= levels; i++ {
		p := fmt.Sprintf("*a%d", i-1)
		fmt.Fprintf(&b, "a%d: &a%d [%s]\n", i, i, strings.Repeat(p+",", 9)+p)
	}
	return b.String()
}

// TestInputBounded: a config file of more than MaxFileBytes, aliases that
// expand past their budget and a --set value of more than MaxSetBytes are
// refused with an error naming the bound, not read into memory.
func TestInputBounded(t *testing.T) {
	dir := t.TempDir()
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, []byte("# "+strings.Repeat("x", config.MaxFileBytes)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	huge := []string{big}
	if runtime.GOOS == "linux" {
		huge = append(huge, "/dev/zero") // endless
	}
	for _, path := range huge {
		_, err := config.Load(path, config.Options{NoTarget: true})
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "larger than 4 MiB") {
			t.Errorf("Load(%s) = %v; want an error naming the file and the 4 MiB bound", path, err)
		}
	}
	ok := filepath.Join(dir, "ok.yaml")
	if err := os.WriteFile(ok, []byte("worker:\n  max_in_flight: 8\n# "+strings.Repeat("x", config.MaxFileBytes-40)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := config.Load(ok, config.Options{NoTarget: true}); err != nil {
		t.Errorf("a file just under the bound: %v", err)
	}

	bomb := aliasBomb(9) // about 360 bytes, 10^9 strings
	if len(bomb) > 800 {
		t.Fatalf("the bomb is %d bytes", len(bomb))
	}
	if _, err := config.Parse([]byte(bomb), config.Options{NoTarget: true}); err == nil || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Errorf("a %d-byte alias bomb: %v; want the alias bound", len(bomb), err)
	}
	set := "a=" + strings.ReplaceAll(strings.TrimSpace(aliasBomb(9)), "\n", ", ")
	if _, err := config.Parse(nil, config.Options{NoTarget: true, Set: []string{"x={" + set[2:] + "}"}}); err == nil || !strings.Contains(err.Error(), "aliases expand to more than") {
		t.Errorf("a %d-byte --set alias bomb: %v; want the alias bound", len(set), err)
	}
	// Aliases used as they are meant to be: shared defaults.
	shared := "jobs:\n  types:\n    a: &t {method: POST, path: /a, cost: 2}\n    b: *t\n    c: *t\n"
	if _, err := config.Parse([]byte(shared), config.Options{NoTarget: true}); err != nil {
		t.Errorf("shared defaults by alias: %v", err)
	}

	long := "worker.id=" + strings.Repeat("x", config.MaxSetBytes+1)
	if _, err := config.Parse(nil, config.Options{NoTarget: true, Set: []string{long}}); err == nil || !strings.Contains(err.Error(), "--set worker.id: the value is") {
		t.Errorf("a --set value of %d bytes: %v; want the bound", len(long), err)
	}
}
