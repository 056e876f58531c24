package worker

import (
	"context"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/sources"
)

// countingMessage counts its InProgress calls.
type countingMessage struct {
	sources.Message
	extended atomic.Int64
}

func (m *countingMessage) ID() string                       { return "m" }
func (m *countingMessage) InProgress(context.Context) error { m.extended.Add(1); return nil }

// TestKeeper: each job is extended every interval from when it was added,
// whatever the others do, and never once removed.
func TestKeeper(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var k keeper
		k.init(10*time.Second, slog.New(slog.DiscardHandler))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			k.run(ctx)
		}()
		a, b, c := &countingMessage{}, &countingMessage{}, &countingMessage{}
		da, db, dc := &delivery{msg: a}, &delivery{msg: b}, &delivery{msg: c}
		k.add(da, time.Now())
		time.Sleep(4 * time.Second)
		k.add(db, time.Now())
		k.add(dc, time.Now())
		time.Sleep(2 * time.Second)
		k.remove(dc)                // before its first extension
		time.Sleep(9 * time.Second) // 15 s: a extended at 10 s, b at 14 s
		synctest.Wait()
		if got := a.extended.Load(); got != 1 {
			t.Errorf("at 15 s a was extended %d times, want 1 (at 10 s)", got)
		}
		if got := b.extended.Load(); got != 1 {
			t.Errorf("at 15 s b was extended %d times, want 1 (at 14 s)", got)
		}
		k.remove(da)
		time.Sleep(20 * time.Second) // 35 s: b at 24 and 34 s
		synctest.Wait()
		if got, want := [3]int64{a.extended.Load(), b.extended.Load(), c.extended.Load()}, [3]int64{1, 3, 0}; got != want {
			t.Errorf("at 35 s extensions %v, want %v", got, want)
		}
		cancel()
		<-done
	})
}
