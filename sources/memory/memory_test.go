package memory_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/memory"
	"github.com/sluicehq/sluice/sources/sourcetest"
)

func TestConformance(t *testing.T) {
	sourcetest.RunSynctest(t, func(t *testing.T, opts sourcetest.Options) sourcetest.Queue {
		q, err := memory.NewQueue(memory.Config{AckWait: opts.AckWait, PollInterval: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return sourcetest.Queue{Open: func(*testing.T) sources.Source { return q.Source() }}
	})
}

func newSource(t *testing.T, cfg memory.Config) *memory.Source {
	t.Helper()
	s, err := memory.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func receive(t *testing.T, s *memory.Source, max int) []sources.Message {
	t.Helper()
	msgs, err := s.Receive(t.Context(), max)
	if err != nil {
		t.Fatalf("Receive: %v", err)
	}
	return msgs
}

func TestDuplicateWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSource(t, memory.Config{DuplicateWindow: time.Minute})
		ctx := t.Context()
		for range 3 {
			if err := s.Publish(ctx, sources.Outgoing{ID: "a", Data: []byte("1")}); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.Queue().Len(); n != 1 {
			t.Fatalf("after 3 publishes of one ID: %d messages, want 1", n)
		}
		// Without an ID nothing is deduplicated, and the sequence is the ID.
		for range 2 {
			if err := s.Publish(ctx, sources.Outgoing{Data: []byte("x")}); err != nil {
				t.Fatal(err)
			}
		}
		if n := s.Queue().Len(); n != 3 {
			t.Fatalf("after 2 publishes without ID: %d messages, want 3", n)
		}
		time.Sleep(time.Minute)
		if err := s.Publish(ctx, sources.Outgoing{ID: "a", Data: []byte("2")}); err != nil {
			t.Fatal(err)
		}
		msgs := receive(t, s, 10)
		var got []string
		for _, m := range msgs {
			got = append(got, m.ID()+"="+string(m.Data()))
		}
		want := []string{"a=1", "2=x", "3=x", "a=2"}
		if len(got) != len(want) {
			t.Fatalf("received %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("received %v, want %v", got, want)
			}
		}
	})
}

func TestReceiveWaitsAndPolls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSource(t, memory.Config{PollInterval: 5 * time.Second})
		start := time.Now()
		if msgs := receive(t, s, 1); len(msgs) != 0 {
			t.Fatalf("empty queue gave %d messages", len(msgs))
		}
		if d := time.Since(start); d != 5*time.Second {
			t.Errorf("empty receive returned after %s, want the 5s poll interval", d)
		}

		go func() {
			time.Sleep(time.Second)
			_ = s.Publish(context.Background(), sources.Outgoing{ID: "late"})
		}()
		start = time.Now()
		msgs := receive(t, s, 1)
		if len(msgs) != 1 || time.Since(start) != time.Second {
			t.Fatalf("got %d messages after %s, want 1 after 1s", len(msgs), time.Since(start))
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := s.Receive(ctx, 1); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Receive with expiring context: %v, want deadline exceeded", err)
		}
		if _, err := s.Receive(t.Context(), 0); err == nil {
			t.Error("Receive(0) succeeded")
		}
	})
}

func TestSettlement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSource(t, memory.Config{AckWait: 10 * time.Second, PollInterval: time.Minute})
		ctx := t.Context()
		published := time.Now()
		for _, id := range []string{"ack", "nak", "term", "expire"} {
			if err := s.Publish(ctx, sources.Outgoing{ID: id}); err != nil {
				t.Fatal(err)
			}
		}
		msgs := receive(t, s, 10)
		if len(msgs) != 4 {
			t.Fatalf("got %d messages, want 4", len(msgs))
		}
		st, _ := s.Stats(ctx)
		if st != (sources.Stats{AckPending: 4, Oldest: published}) {
			t.Errorf("stats with 4 in flight: %+v", st)
		}
		byID := map[string]sources.Message{}
		for _, m := range msgs {
			byID[m.ID()] = m
		}
		if err := byID["ack"].Ack(ctx); err != nil {
			t.Fatal(err)
		}
		if err := byID["ack"].Ack(ctx); !errors.Is(err, memory.ErrStale) {
			t.Errorf("second Ack: %v, want ErrStale", err)
		}
		if err := byID["nak"].Nak(ctx, 3*time.Second); err != nil {
			t.Fatal(err)
		}
		if err := byID["term"].Term(ctx, "bad job"); err != nil {
			t.Fatal(err)
		}

		start := time.Now()
		again := receive(t, s, 10)
		if len(again) != 1 || again[0].ID() != "nak" || again[0].DeliveryCount() != 2 || time.Since(start) != 3*time.Second {
			t.Fatalf("after Nak(3s): %d messages after %s", len(again), time.Since(start))
		}
		again = receive(t, s, 10)
		if len(again) != 1 || again[0].ID() != "expire" || again[0].DeliveryCount() != 2 {
			t.Fatalf("after the ack wait: %d messages", len(again))
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("expired message redelivered %s after first delivery, want 10s", d)
		}
		// The first delivery of "expire" is stale now.
		if err := byID["expire"].Ack(ctx); !errors.Is(err, memory.ErrStale) {
			t.Errorf("Ack of a superseded delivery: %v, want ErrStale", err)
		}
		st, _ = s.Stats(ctx)
		// ack and term are done; nak and expire, published first, wait.
		if st != (sources.Stats{AckPending: 2, Redelivered: 2, DeadLetters: 1, Done: 2, Oldest: published}) {
			t.Errorf("stats: %+v", st)
		}

		var kinds []memory.EventKind
		for _, ev := range s.Queue().Events() {
			kinds = append(kinds, ev.Kind)
			if ev.Kind == memory.EventTerm && ev.Reason != "bad job" {
				t.Errorf("term reason %q", ev.Reason)
			}
			if ev.Kind == memory.EventNak && ev.Delay != 3*time.Second {
				t.Errorf("nak delay %s", ev.Delay)
			}
		}
		want := []memory.EventKind{memory.EventAck, memory.EventNak, memory.EventTerm}
		if len(kinds) != len(want) || kinds[0] != want[0] || kinds[1] != want[1] || kinds[2] != want[2] {
			t.Errorf("events %v, want %v", kinds, want)
		}
	})
}

func TestMaxDeliver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := newSource(t, memory.Config{AckWait: time.Second, MaxDeliver: 2, PollInterval: time.Minute})
		ctx := t.Context()
		if err := s.Publish(ctx, sources.Outgoing{ID: "x"}); err != nil {
			t.Fatal(err)
		}
		for want := 1; want <= 2; want++ {
			msgs := receive(t, s, 1)
			if len(msgs) != 1 || msgs[0].DeliveryCount() != want {
				t.Fatalf("delivery %d: got %d messages", want, len(msgs))
			}
			if want == 2 {
				if err := msgs[0].Nak(ctx, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		if msgs := receive(t, s, 1); len(msgs) != 0 {
			t.Fatalf("delivered %d times with MaxDeliver 2", msgs[0].DeliveryCount())
		}
		if n := s.Queue().Len(); n != 0 {
			t.Errorf("%d messages left after max deliveries", n)
		}
	})
}

func TestClosedConsumer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newSource(t, memory.Config{PollInterval: time.Hour})
		ctx := t.Context()
		if err := a.Publish(ctx, sources.Outgoing{ID: "x"}); err != nil {
			t.Fatal(err)
		}
		msgs := receive(t, a, 1)
		b := a.Queue().Source()
		done := make(chan []sources.Message)
		go func() {
			m, _ := b.Receive(context.Background(), 1)
			done <- m
		}()
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		if err := msgs[0].Ack(ctx); !errors.Is(err, memory.ErrClosed) {
			t.Errorf("Ack after Close: %v, want ErrClosed", err)
		}
		if _, err := a.Receive(ctx, 1); !errors.Is(err, memory.ErrClosed) {
			t.Errorf("Receive after Close: %v, want ErrClosed", err)
		}
		start := time.Now()
		got := <-done
		if len(got) != 1 || got[0].DeliveryCount() != 2 {
			t.Fatalf("second consumer got %d messages", len(got))
		}
		if d := time.Since(start); d != memory.DefaultAckWait {
			t.Errorf("redelivered after %s, want the ack wait", d)
		}
		_ = b.Close()
	})
}

func TestValidate(t *testing.T) {
	for _, c := range []memory.Config{
		{AckWait: -1}, {MaxDeliver: -1}, {DuplicateWindow: -1}, {PollInterval: -1},
	} {
		if _, err := memory.New(c); err == nil {
			t.Errorf("New(%+v) succeeded", c)
		}
	}
}
