package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

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
				return usageError(fmt.Errorf("--url: must be an http(s) URL, got %q", rawURL))
			}
			if timeout <= 0 {
				return usageError(fmt.Errorf("--timeout: must be > 0, got %v", timeout))
			}
			if err := healthcheck(cmd.Context(), u.String(), timeout); err != nil {
				return &exitError{code: 1, err: err}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&rawURL, "url", defaultHealthcheckURL, "endpoint to probe")
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	return cmd
}

// healthcheck GETs u and reports an error unless it answers 2xx. The error
// quotes the start of the body, where /readyz says why it is not ready.
func healthcheck(ctx context.Context, u string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	client := &http.Client{
		// A health endpoint answers itself; a redirect means the wrong URL.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		msg := strings.TrimSpace(string(body))
		if msg == "" {
			return fmt.Errorf("healthcheck: %s answered %d", u, resp.StatusCode)
		}
		return fmt.Errorf("healthcheck: %s answered %d: %s", u, resp.StatusCode, msg)
	}
	return nil
}
