package main

import (
	"fmt"
	"net/url"
	"time"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/spf13/cobra"
)

const defaultHealthcheckURL = "http://127.0.0.1:9464/healthz"

// newHealthcheckCmd builds `sluice healthcheck`: a probe for container
// HEALTHCHECKs and other supervisors that have no HTTP client of their own.
func newHealthcheckCmd() *cobra.Command {
	var (
		rawURL  string
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when a running sluice answers its health endpoint",
		Long: `healthcheck sends one GET to a running sluice's health endpoint and exits 0
when it answers 2xx, 1 otherwise. Use --url http://127.0.0.1:9464/readyz to
check readiness instead of liveness, or another address when metrics.listen
is not the default.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, err := url.Parse(rawURL)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return cli.UsageError(fmt.Errorf("--url: must be an http(s) URL, got %q", rawURL))
			}
			if timeout <= 0 {
				return cli.UsageError(fmt.Errorf("--timeout: must be > 0, got %v", timeout))
			}
			if err := run.Healthcheck(cmd.Context(), u.String(), timeout); err != nil {
				return &cli.ExitError{Code: 1, Err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&rawURL, "url", defaultHealthcheckURL, "endpoint to probe")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}
