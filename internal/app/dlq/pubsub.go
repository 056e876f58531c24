package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"cloud.google.com/go/pubsub/v2"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/sinks/pubsubout"
	"github.com/sluicehq/sluice/worker"
)

// openPubSub opens the Pub/Sub source the jobs go back to and the
// subscription that keeps the dead letters (dead_letters.subscription). A
// pull that finds no record within source.pubsub.poll_interval ends the
// pass.
func openPubSub(ctx context.Context, cfg config.Config, log *slog.Logger) (*Replayer, error) {
	client, err := run.PubSubClient(ctx, "dead_letters", cfg.Source)
	if err != nil {
		return nil, err
	}
	src, err := run.OpenSource(ctx, cfg.Source, log)
	if err != nil {
		client.Close()
		return nil, err
	}
	sub := cfg.DeadLetters.PubSub(false).SubscriptionName(client.Project())
	st := newPubSubDeadLetters(client, sub, cfg.Source.PubSub.PollInterval)
	return &Replayer{src: src, store: st, closers: []func() error{st.close}}, nil
}

// pubsubDeadLetters reads the subscription that keeps a dead-letter topic's
// records. A replayed record is acknowledged (removed); the others are
// handed back when the replay ends.
type pubsubDeadLetters struct {
	client *pubsub.Client
	r      *pubsubout.Reader
	sub    string
	recs   map[uint64]pubsubout.Record
	n      uint64
}

func newPubSubDeadLetters(client *pubsub.Client, sub string, wait time.Duration) *pubsubDeadLetters {
	return &pubsubDeadLetters{client: client, r: pubsubout.NewReader(client, sub, wait), sub: sub, recs: map[uint64]pubsubout.Record{}}
}

func (s *pubsubDeadLetters) each(ctx context.Context, fn func(record) error) error {
	return s.r.Each(ctx, func(rec pubsubout.Record) error {
		s.n++
		var d worker.DeadLetter
		if err := json.Unmarshal(rec.Data, &d); err != nil {
			return fmt.Errorf("dead_letters: subscription %s, record %d (key %q): not a dead-letter record: %v", s.sub, s.n, rec.Key, err)
		}
		s.recs[s.n] = rec
		return fn(record{DeadLetter: d, seq: s.n})
	})
}

func (s *pubsubDeadLetters) remove(ctx context.Context, seq uint64) error {
	rec, ok := s.recs[seq]
	if !ok {
		return fmt.Errorf("dead_letters: no record %d read from %s", seq, s.sub)
	}
	delete(s.recs, seq)
	return s.r.Remove(ctx, rec)
}

// close hands back the records not removed, then closes the client.
func (s *pubsubDeadLetters) close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return errors.Join(s.r.Release(ctx), s.client.Close())
}
