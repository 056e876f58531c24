package limiter

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
)

// A burst of 429s with Retry-After logs one "limiter: paused" line, not
// one per 429; the extensions are debug lines (#15).
func TestOnePausedLinePerPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		l := newTestLimiter(t, func(c *Config) { c.Burst = 10 * time.Second }, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		var tickets []Ticket
		for range 10 {
			tk, err := l.Wait(t.Context(), 1)
			if err != nil {
				t.Fatal(err)
			}
			tickets = append(tickets, tk)
		}
		for i, tk := range tickets {
			time.Sleep(10 * time.Millisecond)
			l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Duration(5+i) * time.Second})
		}
		if n := strings.Count(logs.String(), `msg="limiter: paused"`); n != 1 {
			t.Errorf("%d paused lines for one burst of 10 throttles, want 1:\n%s", n, logs.String())
		}
		// A pause after the first one ended logs again.
		time.Sleep(time.Minute)
		tk, err := l.Wait(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
		if n := strings.Count(logs.String(), `msg="limiter: paused"`); n != 2 {
			t.Errorf("%d paused lines after a second pause, want 2:\n%s", n, logs.String())
		}
	})
}
