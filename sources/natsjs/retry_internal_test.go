package natsjs

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// TestRetryServerError: stream and consumer setup retries a JetStream 500
// (seen as "error creating store for stream" from an embedded server under
// load) with growing waits, and gives up at once on anything else.
func TestRetryServerError(t *testing.T) {
	storeFailed := &jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"}
	badRequest := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use"}

	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		calls := 0
		err := retryServerError(t.Context(), func() error {
			calls++
			if calls < 3 {
				return storeFailed
			}
			return nil
		})
		if err != nil || calls != 3 {
			t.Fatalf("two 500s then success: err %v after %d calls, want nil after 3", err, calls)
		}
		if waited := time.Since(start); waited != 300*time.Millisecond {
			t.Errorf("waited %v, want 100ms + 200ms", waited)
		}
	})

	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := retryServerError(t.Context(), func() error { calls++; return storeFailed })
		if !errors.Is(err, storeFailed) || calls != setupAttempts {
			t.Fatalf("always 500: err %v after %d calls, want the 500 after %d", err, calls, setupAttempts)
		}
	})

	calls := 0
	err := retryServerError(t.Context(), func() error { calls++; return badRequest })
	if !errors.Is(err, badRequest) || calls != 1 {
		t.Fatalf("a 400: err %v after %d calls, want it after 1", err, calls)
	}

	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		err := retryServerError(ctx, func() error {
			calls++
			cancel()
			return storeFailed
		})
		if !errors.Is(err, storeFailed) || calls != 1 {
			t.Fatalf("cancelled: err %v after %d calls, want the 500 after 1", err, calls)
		}
	})
}
