package run

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Healthcheck GETs u and reports an error unless it answers 2xx. The error
// quotes the start of the body, where /readyz says why it is not ready.
func Healthcheck(ctx context.Context, u string, timeout time.Duration) error {
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
