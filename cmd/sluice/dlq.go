package main

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
	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

func newDLQCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "Work with dead letters",
	}
	cmd.AddCommand(newDLQReplayCmd())
	return cmd
}

// dlqFilter selects dead letters; zero fields match everything.
type dlqFilter struct {
	Type   string
	Reason string
	Status int
}

func (f dlqFilter) match(d worker.DeadLetter) bool {
	return (f.Type == "" || d.Type == f.Type) &&
		(f.Reason == "" || d.Reason == f.Reason) &&
		(f.Status == 0 || d.Status == f.Status)
}

// deadLetterRecord is one stored dead letter and where it is.
type deadLetterRecord struct {
	worker.DeadLetter
	seq uint64 // stream sequence (nats) or line number (jsonl)
}

// deadLetterStore reads, and where it can deletes, dead letters.
type deadLetterStore interface {
	each(ctx context.Context, fn func(deadLetterRecord) error) error
	// remove deletes a replayed record; stores that cannot return nil.
	remove(ctx context.Context, seq uint64) error
}

func newDLQReplayCmd() *cobra.Command {
	var (
		file   string
		filter dlqFilter
		dryRun bool
		keep   bool
	)
	cmd := &cobra.Command{
		Use:   "replay [-c FILE] [--type T] [--reason R] [--status N] [--dry-run]",
		Short: "Enqueue dead letters again",
		Long: `replay reads the dead letters (dead_letters.kind nats or jsonl), and enqueues
again the original job of each one that matches every filter given: --type,
--reason (client_error, max_deliveries, bad_json, bad_path, ...) and
--status (the last HTTP status). With --dry-run it only lists them.

A replayed record is removed from a NATS dead-letter stream (unless --keep),
so that running replay twice does not enqueue a job twice; a JSONL file is
never changed. Records of oversized envelopes hold only the first bytes of
the payload and are skipped.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := commandConfig(file)
			if err != nil {
				return usageError(err)
			}
			ctx := cmd.Context()
			log := slog.New(slog.DiscardHandler)
			src, err := openSource(ctx, cfg.Source, log)
			if err != nil {
				return err
			}
			defer src.Close()
			store, err := openDeadLetterStore(ctx, cfg, src)
			if err != nil {
				return err
			}
			n, err := replayDeadLetters(ctx, store, src, filter, dryRun, keep, cmd.OutOrStdout())
			if err != nil {
				return err
			}
			verb := "replayed"
			if dryRun {
				verb = "would replay"
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %d of %d dead letters (%d matched, %d skipped)\n", verb, n.replayed, n.seen, n.matched, n.skipped)
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&file, "config", "c", "", "config file (default: the embedded JetStream default)")
	fl.StringVar(&filter.Type, "type", "", "only dead letters of this job type")
	fl.StringVar(&filter.Reason, "reason", "", "only dead letters with this reason")
	fl.IntVar(&filter.Status, "status", 0, "only dead letters whose last HTTP status is this")
	fl.BoolVar(&dryRun, "dry-run", false, "list what would be replayed, change nothing")
	fl.BoolVar(&keep, "keep", false, "keep replayed records in the NATS dead-letter stream")
	return cmd
}

// commandConfig loads the config file, or the defaults without one, for
// the commands that use the queue but not the target.
func commandConfig(file string) (config.Config, error) {
	if file = configFile(file); file == "" {
		// The defaults, with the environment's overrides (NATS_URL...).
		return config.Parse(nil, config.Options{NoTarget: true})
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return config.Config{}, fmt.Errorf("config: %w", err)
	}
	return config.Parse(data, config.Options{NoTarget: true})
}

// loadSourceConfig is the source section of the config file, or the
// default without one (for enqueue and status).
func loadSourceConfig(file string) (config.Source, error) {
	cfg, err := commandConfig(file)
	return cfg.Source, err
}

type replayCounts struct{ seen, matched, replayed, skipped int }

// replayDeadLetters enqueues the original job of every matching record.
func replayDeadLetters(ctx context.Context, store deadLetterStore, src sources.Source, f dlqFilter, dryRun, keep bool, out io.Writer) (replayCounts, error) {
	var n replayCounts
	err := store.each(ctx, func(r deadLetterRecord) error {
		n.seen++
		if !f.match(r.DeadLetter) {
			return nil
		}
		n.matched++
		line := fmt.Sprintf("id=%s type=%s reason=%s status=%d deliveries=%d", r.ID, r.Type, r.Reason, r.Status, r.Deliveries)
		if r.PayloadTruncated {
			n.skipped++
			fmt.Fprintln(out, "skip", line, "(payload truncated)")
			return nil
		}
		data, err := r.Data()
		if err != nil {
			n.skipped++
			fmt.Fprintln(out, "skip", line, "(payload unreadable)")
			return nil
		}
		if dryRun {
			fmt.Fprintln(out, "replay", line)
			n.replayed++
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
		n.replayed++
		return nil
	})
	return n, err
}

func openDeadLetterStore(ctx context.Context, cfg config.Config, src sources.Source) (deadLetterStore, error) {
	switch cfg.DeadLetters.Kind {
	case config.OutputJSONL:
		return jsonlDeadLetters{path: cfg.DeadLetters.Path}, nil
	case config.OutputNATS:
		js, ok := src.(*natsjs.Source)
		if !ok {
			return nil, fmt.Errorf("dead_letters.kind: %q needs source.kind %q", config.OutputNATS, config.SourceJetStream)
		}
		nc := natsOutputConfig("dead_letters", cfg.DeadLetters, js.Config())
		stream, err := js.JetStream().Stream(ctx, nc.Stream)
		if err != nil {
			return nil, fmt.Errorf("dead_letters: stream %s: %w", nc.Stream, err)
		}
		return natsDeadLetters{stream: stream, subject: nc.Subject}, nil
	default:
		return nil, fmt.Errorf("dlq replay: dead_letters.kind %q cannot be read back; replay supports nats and jsonl", cfg.DeadLetters.Kind)
	}
}

// jsonlDeadLetters reads a JSONL dead-letter file.
type jsonlDeadLetters struct{ path string }

func (s jsonlDeadLetters) each(ctx context.Context, fn func(deadLetterRecord) error) error {
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
		if err := fn(deadLetterRecord{DeadLetter: d, seq: line}); err != nil {
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

func (s natsDeadLetters) each(ctx context.Context, fn func(deadLetterRecord) error) error {
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
			if err := fn(deadLetterRecord{DeadLetter: d, seq: meta.Sequence.Stream}); err != nil {
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
