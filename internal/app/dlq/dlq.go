// Package dlq reads dead letters back from where a run wrote them
// (dead_letters.kind nats, pubsub or jsonl) and enqueues their original
// jobs again: `sluice dlq replay`.
package dlq

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

// Filter selects dead letters; zero fields match everything.
type Filter struct {
	Type   string
	Reason string
	Status int
}

func (f Filter) match(d worker.DeadLetter) bool {
	return (f.Type == "" || d.Type == f.Type) &&
		(f.Reason == "" || d.Reason == f.Reason) &&
		(f.Status == 0 || d.Status == f.Status)
}

// record is one stored dead letter and where it is.
type record struct {
	worker.DeadLetter
	seq uint64 // stream sequence (nats) or line number (jsonl)
}

// store reads, and where it can deletes, dead letters.
type store interface {
	each(ctx context.Context, fn func(record) error) error
	// remove deletes a replayed record; stores that cannot return nil.
	remove(ctx context.Context, seq uint64) error
}

// Options are the choices of a replay.
type Options struct {
	Filter Filter
	DryRun bool // list what would be replayed, change nothing
	Keep   bool // keep replayed records in a NATS dead-letter stream
}

// Counts are what a replay did.
type Counts struct{ Seen, Matched, Replayed, Skipped int }

// Replayer replays the dead letters of one config: it holds the queue the
// jobs go back to and the store the records come from.
type Replayer struct {
	src     sources.Source
	store   store
	closers []func() error // the store's, before the queue is closed
}

// Open opens the queue and the dead-letter store that cfg names.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Replayer, error) {
	if cfg.DeadLetters.Kind == config.OutputNATS {
		if cfg.Source.Kind != config.SourceJetStream {
			return nil, fmt.Errorf("dead_letters.kind: %q needs source.kind %q", config.OutputNATS, config.SourceJetStream)
		}
		js, err := run.OpenJetStream(ctx, cfg.Source.JetStream, log)
		if err != nil {
			return nil, err
		}
		st, err := natsStore(ctx, cfg, js)
		if err != nil {
			js.Close()
			return nil, err
		}
		return &Replayer{src: js, store: st}, nil
	}
	if cfg.DeadLetters.Kind == config.OutputPubSub {
		return openPubSub(ctx, cfg, log)
	}
	if cfg.DeadLetters.Kind != config.OutputJSONL {
		return nil, fmt.Errorf("dlq replay: dead_letters.kind %q cannot be read back; replay supports nats, pubsub and jsonl", cfg.DeadLetters.Kind)
	}
	src, err := run.OpenSource(ctx, cfg.Source, log)
	if err != nil {
		return nil, err
	}
	return &Replayer{src: src, store: jsonlDeadLetters{path: cfg.DeadLetters.Path}}, nil
}

// Close hands back the records it read and did not remove (Pub/Sub), and
// closes the store and the queue.
func (r *Replayer) Close() error {
	var errs []error
	for _, c := range r.closers {
		errs = append(errs, c())
	}
	return errors.Join(append(errs, r.src.Close())...)
}

// natsStore is the dead-letter stream of the JetStream source js.
func natsStore(ctx context.Context, cfg config.Config, js *natsjs.Source) (store, error) {
	nc := run.NATSOutput("dead_letters", cfg.DeadLetters, js.Config())
	stream, err := js.JetStream().Stream(ctx, nc.Stream)
	if err != nil {
		return nil, fmt.Errorf("dead_letters: stream %s: %w", nc.Stream, err)
	}
	return natsDeadLetters{stream: stream, subject: nc.Subject}, nil
}

// Replay enqueues again the original job of every record that o.Filter
// matches, and writes a line per matching record on out.
func (r *Replayer) Replay(ctx context.Context, o Options, out io.Writer) (Counts, error) {
	return replay(ctx, r.store, r.src, o, out)
}

func replay(ctx context.Context, store store, src sources.Source, o Options, out io.Writer) (Counts, error) {
	var n Counts
	f, dryRun, keep := o.Filter, o.DryRun, o.Keep
	err := store.each(ctx, func(r record) error {
		n.Seen++
		if !f.match(r.DeadLetter) {
			return nil
		}
		n.Matched++
		line := fmt.Sprintf("id=%s type=%s reason=%s status=%d deliveries=%d", r.ID, r.Type, r.Reason, r.Status, r.Deliveries)
		if r.PayloadTruncated {
			n.Skipped++
			fmt.Fprintln(out, "skip", line, "(payload truncated)")
			return nil
		}
		data, err := r.Data()
		if err != nil {
			n.Skipped++
			fmt.Fprintln(out, "skip", line, "(payload unreadable)")
			return nil
		}
		if dryRun {
			fmt.Fprintln(out, "replay", line)
			n.Replayed++
			return nil
		}
		// A fresh message id: the original is still in the queue's
		// duplicate window, maybe. The record's position makes a second
		// replay of the same record idempotent within the window.
		id := r.ID + ".replay." + strconv.FormatUint(r.seq, 10)
		if err := src.Publish(ctx, sources.Outgoing{ID: id, Data: data, Headers: r.Headers}); err != nil {
			return fmt.Errorf("dlq replay: enqueue %s: %w", r.ID, err)
		}
		if !keep {
			if err := store.remove(ctx, r.seq); err != nil {
				return fmt.Errorf("dlq replay: remove record %d: %w", r.seq, err)
			}
		}
		fmt.Fprintln(out, "replayed", line)
		n.Replayed++
		return nil
	})
	return n, err
}

// jsonlDeadLetters reads a JSONL dead-letter file.
type jsonlDeadLetters struct{ path string }

func (s jsonlDeadLetters) each(ctx context.Context, fn func(record) error) error {
	f, err := os.Open(s.path)
	if err != nil {
		return fmt.Errorf("dead_letters.path: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	var line uint64
	for sc.Scan() {
		line++
		if err := ctx.Err(); err != nil {
			return err
		}
		var d worker.DeadLetter
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			return fmt.Errorf("dead_letters.path: %s line %d: not a dead-letter record: %v", s.path, line, err)
		}
		if err := fn(record{DeadLetter: d, seq: line}); err != nil {
			return err
		}
	}
	return sc.Err()
}

func (jsonlDeadLetters) remove(context.Context, uint64) error { return nil }

// natsDeadLetters reads a dead-letter stream.
type natsDeadLetters struct {
	stream  jetstream.Stream
	subject string
}

func (s natsDeadLetters) each(ctx context.Context, fn func(record) error) error {
	info, err := s.stream.Info(ctx)
	if err != nil {
		return err
	}
	if info.State.Msgs == 0 {
		return nil
	}
	last := info.State.LastSeq
	cons, err := s.stream.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{s.subject},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if err != nil {
		return err
	}
	for {
		batch, err := cons.Fetch(256, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			return err
		}
		got := 0
		for m := range batch.Messages() {
			got++
			meta, err := m.Metadata()
			if err != nil {
				return err
			}
			var d worker.DeadLetter
			if err := json.Unmarshal(m.Data(), &d); err != nil {
				return fmt.Errorf("dead-letter stream record %d: %v", meta.Sequence.Stream, err)
			}
			if err := fn(record{DeadLetter: d, seq: meta.Sequence.Stream}); err != nil {
				return err
			}
			if meta.Sequence.Stream >= last || meta.NumPending == 0 {
				return nil
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) {
			return err
		}
		if got == 0 {
			return nil
		}
	}
}

func (s natsDeadLetters) remove(ctx context.Context, seq uint64) error {
	return s.stream.DeleteMsg(ctx, seq)
}

// Each calls fn with every dead letter of the store, in order, until fn
// returns an error.
func (r *Replayer) Each(ctx context.Context, fn func(worker.DeadLetter) error) error {
	return r.store.each(ctx, func(rec record) error { return fn(rec.DeadLetter) })
}
