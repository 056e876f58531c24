package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=...", from
// git describe (see the Makefile). Without it, cli.ResolveVersion reads the
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
	return cli.ResolveVersion(version, bi)
}
