package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...", from
// git describe (see the Makefile). Without it, resolveVersion reads the
// version the Go toolchain stamped into the binary.
var version = "dev"

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version of sluice",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

// versionLine is what `sluice version` and `sluice --version` print:
// "sluice v0.3.0 go1.26.0 linux/amd64".
func versionLine() string {
	return fmt.Sprintf("sluice %s %s %s/%s", currentVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

func currentVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return resolveVersion(version, bi)
}

// resolveVersion picks the version to print: the one set at link time;
// else the module version of a `go install module@version` build (or the
// pseudo-version the toolchain derives from the repository); else the VCS
// revision the toolchain stamped (12 characters, "-dirty" for a modified
// tree); else "dev".
func resolveVersion(linked string, bi *debug.BuildInfo) string {
	if linked != "" && linked != "dev" {
		return linked
	}
	if bi == nil {
		return "dev"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var rev string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev == "" {
		return "dev"
	}
	rev = rev[:min(len(rev), 12)]
	if dirty {
		rev += "-dirty"
	}
	return "devel-" + strings.TrimSpace(rev)
}
