package main

import (
	"bytes"
	"strings"
	"testing"
)

// cobra generates `sluice completion bash|zsh|fish|powershell`; these tests
// keep it working (it needs subcommands, and must not be disabled).
func TestCompletionScripts(t *testing.T) {
	for shell, marker := range map[string]string{
		"bash":       "__start_sluice",
		"zsh":        "#compdef sluice",
		"fish":       "complete -c sluice",
		"powershell": "Register-ArgumentCompleter",
	} {
		root := newRootCmd()
		var out bytes.Buffer
		root.SetOut(&out)
		root.SetErr(&out)
		root.SetArgs([]string{"completion", shell})
		if err := root.Execute(); err != nil {
			t.Errorf("sluice completion %s: %v", shell, err)
			continue
		}
		if !strings.Contains(out.String(), marker) {
			t.Errorf("sluice completion %s: no %q in %d bytes", shell, marker, out.Len())
		}
	}
}

func TestCompletionCandidates(t *testing.T) {
	// What the generated scripts call to complete "sluice he<TAB>".
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetArgs([]string{"__complete", "he"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.Contains(got, "healthcheck\t") || !strings.Contains(got, "help\t") {
		t.Errorf("completing \"he\": %q", got)
	}
	// Flags complete too.
	root = newRootCmd()
	out.Reset()
	root.SetOut(&out)
	root.SetArgs([]string{"__complete", "healthcheck", "--"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "--url") || !strings.Contains(out.String(), "--timeout") {
		t.Errorf("completing healthcheck flags: %q", out.String())
	}
}
