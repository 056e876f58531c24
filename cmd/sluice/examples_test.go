package main

import (
	"fmt"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/testkit"
)

// Every command's help has an Examples section, and every sluice command
// line in it names commands and flags that exist, with valid values.
func TestEveryCommandHasExamples(t *testing.T) {
	root := newRootCmd()
	for _, path := range commandPaths(root) {
		args := strings.Fields(path)[1:]
		cmd, _, err := root.Find(args)
		if err != nil || cmd.CommandPath() != path {
			t.Fatalf("%s: not found (%v)", path, err)
		}
		if strings.TrimSpace(cmd.Example) == "" {
			t.Errorf("%s: no Examples section (add one to internal/app/cli/examples.go)", path)
			continue
		}
		lines := cli.ExampleCommandLines(cmd.Example)
		if len(lines) == 0 {
			t.Errorf("%s: the examples run no sluice command", path)
		}
		for _, line := range lines {
			checkExampleLine(t, path, line)
		}
		if !strings.Contains(cmd.UsageString(), "Examples:") {
			t.Errorf("%s: the help shows no Examples section", path)
		}
	}
	for _, path := range cli.ExamplePaths() {
		found := false
		for _, p := range commandPaths(root) {
			found = found || p == path
		}
		if !found {
			t.Errorf("internal/app/cli/examples.go has an entry for %q, which is no command", path)
		}
	}
}

// checkExampleLine reports an example command line that a fresh tree
// refuses: an unknown command or flag, a bad flag value, wrong arguments.
func checkExampleLine(t *testing.T, path string, words []string) {
	t.Helper()
	if err := exampleLineError(words); err != nil {
		t.Errorf("%s: example %q: %v", path, strings.Join(words, " "), err)
	}
}

func exampleLineError(words []string) error {
	root := newRootCmd()
	root.InitDefaultVersionFlag()
	cmd, rest, err := root.Find(words)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return err
	}
	args := cmd.Flags().Args()
	if cmd.HasSubCommands() && len(args) > 0 {
		return fmt.Errorf("unknown command %q for %q", args[0], cmd.CommandPath())
	}
	if cmd.Args != nil {
		return cmd.Args(cmd, args)
	}
	return nil
}

// The example checker itself catches a stale example.
func TestExampleLinesAreChecked(t *testing.T) {
	lines := cli.ExampleCommandLines("  # comment\n  sluice run --rate 5 -c x.yaml\n  cat jobs | sluice enqueue - > out\n  source <(sluice completion bash)\n")
	want := []string{"run --rate 5 -c x.yaml", "enqueue -", "completion bash"}
	if len(lines) != len(want) {
		t.Fatalf("lines %q, want %q", lines, want)
	}
	for i, l := range lines {
		if strings.Join(l, " ") != want[i] {
			t.Errorf("line %d: %q, want %q", i, strings.Join(l, " "), want[i])
		}
	}
	for _, bad := range [][]string{{"run", "--no-such-flag"}, {"stauts"}, {"run", "--rate", "x"}, {"version", "extra"}} {
		if exampleLineError(bad) == nil {
			t.Errorf("example %q passed the check", bad)
		}
	}
}

func TestResolveVersion(t *testing.T) {
	parse := func(s string) *debug.BuildInfo {
		bi, err := debug.ParseBuildInfo(s)
		if err != nil {
			t.Fatal(err)
		}
		return bi
	}
	const head = "go\tgo1.26.0\npath\tgithub.com/sluicehq/sluice/cmd/sluice\n"
	for _, tc := range []struct {
		name, linked string
		bi           *debug.BuildInfo
		want         string
	}{
		{"set at link time", "v0.3.0-4-g1a2b3c4", parse(head + "mod\tgithub.com/sluicehq/sluice\tv9.9.9\t\n"), "v0.3.0-4-g1a2b3c4"},
		{"go install module@version", "dev", parse(head + "mod\tgithub.com/sluicehq/sluice\tv1.2.3\th1:abc=\n"), "v1.2.3"},
		{"go build in a clone", "dev", parse(head + "mod\tgithub.com/sluicehq/sluice\tv0.0.0-20261201225643-8a52ab8d94ee+dirty\t\nbuild\tvcs=git\nbuild\tvcs.revision=8a52ab8d94ee3fffbc272946acc8cc3aee031310\nbuild\tvcs.modified=true\n"), "v0.0.0-20261201225643-8a52ab8d94ee+dirty"},
		{"revision only", "dev", parse(head + "mod\tgithub.com/sluicehq/sluice\t(devel)\t\nbuild\tvcs=git\nbuild\tvcs.revision=8a52ab8d94ee3fffbc272946acc8cc3aee031310\nbuild\tvcs.modified=true\n"), "devel-8a52ab8d94ee-dirty"},
		{"clean revision", "", parse(head + "mod\tgithub.com/sluicehq/sluice\t(devel)\t\nbuild\tvcs.revision=8a52ab8d94ee3fffbc272946acc8cc3aee031310\nbuild\tvcs.modified=false\n"), "devel-8a52ab8d94ee"},
		{"nothing stamped", "dev", parse(head + "mod\tgithub.com/sluicehq/sluice\t(devel)\t\n"), "dev"},
		{"no build info", "dev", nil, "dev"},
	} {
		if got := cli.ResolveVersion(tc.linked, tc.bi); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// --version prints what `sluice version` prints.
func TestVersionFlag(t *testing.T) {
	a, err := testkit.RunCLI(t.Context(), newRootCmd, "version")
	if err != nil {
		t.Fatal(err)
	}
	b, err := testkit.RunCLI(t.Context(), newRootCmd, "--version")
	if err != nil {
		t.Fatal(err)
	}
	if a != b || !strings.HasPrefix(a, "sluice "+currentVersion()+" go") {
		t.Errorf("version %q, --version %q", a, b)
	}
}
