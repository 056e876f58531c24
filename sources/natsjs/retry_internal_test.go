package natsjs

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestRetrySetup: stream and consumer setup retries a JetStream 500
// (seen as "error creating store for stream" from an embedded server under
// load) and a request that timed out (seen as "context deadline exceeded"
// from an embedded server under the race detector on a loaded machine)
// with growing waits, and gives up at once on anything else, a timeout of
// the caller's own context included.
func TestRetrySetup(t *testing.T) {
	storeFailed := &jetstream.APIError{Code: 500, ErrorCode: 10049, Description: "error creating store for stream"}
	badRequest := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use"}

	timedOut := fmt.Errorf("wrapped: %w", context.DeadlineExceeded)
	for _, transient := range []error{storeFailed, timedOut, nats.ErrTimeout} {
		synctest.Test(t, func(t *testing.T) {
			start := time.Now()
			calls := 0
			err := retrySetup(t.Context(), func() error {
				calls++
				if calls < 3 {
					return transient
				}
				return nil
			})
			if err != nil || calls != 3 {
				t.Fatalf("%v twice then success: err %v after %d calls, want nil after 3", transient, err, calls)
			}
			if waited := time.Since(start); waited != 300*time.Millisecond {
				t.Errorf("%v: waited %v, want 100ms + 200ms", transient, waited)
			}
		})
	}

	synctest.Test(t, func(t *testing.T) {
		calls := 0
		err := retrySetup(t.Context(), func() error { calls++; return storeFailed })
		if !errors.Is(err, storeFailed) || calls != setupAttempts {
			t.Fatalf("always 500: err %v after %d calls, want the 500 after %d", err, calls, setupAttempts)
		}
	})

	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		calls := 0
		err := retrySetup(ctx, func() error {
			calls++
			<-ctx.Done()
			return ctx.Err()
		})
		if !errors.Is(err, context.DeadlineExceeded) || calls != 1 {
			t.Fatalf("the caller's deadline: err %v after %d calls, want it after 1", err, calls)
		}
	})

	calls := 0
	err := retrySetup(t.Context(), func() error { calls++; return badRequest })
	if !errors.Is(err, badRequest) || calls != 1 {
		t.Fatalf("a 400: err %v after %d calls, want it after 1", err, calls)
	}

	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		calls := 0
		err := retrySetup(ctx, func() error {
			calls++
			cancel()
			return storeFailed
		})
		if !errors.Is(err, storeFailed) || calls != 1 {
			t.Fatalf("cancelled: err %v after %d calls, want the 500 after 1", err, calls)
		}
	})
}
