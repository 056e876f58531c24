package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// Memory remembers the rate of a worker that runs alone on its own rules
// (no share mode) in the same fleet bucket and state as a Fleet, so that a
// restart begins where the last run was: Remembered gives the rate to
// start at, and Run writes the limiter's state once per refresh and when
// it stops. A fleet started later on the same bucket goes on from it too.
type Memory struct {
	js    jetstream.JetStream
	kv    jetstream.KeyValue
	cfg   FleetConfig
	log   *slog.Logger
	state fleet.State
	found bool
}

// OpenMemory opens (or creates) the fleet bucket of cfg.Bucket and reads
// the remembered state, checked as a Fleet checks it (with the default
// limiter options if cfg.Limiter is not valid).
func OpenMemory(ctx context.Context, js jetstream.JetStream, cfg FleetConfig, opts ...Option) (*Memory, error) {
	cfg = cfg.withDefaults()
	if cfg.Limiter.Validate() != nil {
		cfg.Limiter = limiter.DefaultConfig()
	}
	kv, err := openFleetBucket(ctx, js, FleetBucket(cfg.Bucket))
	if err != nil {
		return nil, err
	}
	set := newSettings(opts)
	m := &Memory{js: js, kv: kv, cfg: cfg, log: set.log}
	e, err := kv.Get(ctx, fleetKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
	case err != nil:
		return nil, fmt.Errorf("cluster: fleet state: %w", err)
	default:
		s, err := decodeFleetState(e.Value())
		var ps []problem
		if err != nil {
			ps = []problem{{"state", "no fleet state: " + err.Error()}}
		} else {
			m.state, ps = checkFleetState(s, reading{now: time.Now(), cfg: cfg.Limiter})
			m.found = true
		}
		newInputLog(set).report("fleet", FleetBucket(cfg.Bucket)+"/"+fleetKey, ps, "replaced at the next write")
	}
	return m, nil
}

// Remembered returns the remembered rate of the whole budget, if a worker
// wrote it less than Remember before now.
func (m *Memory) Remembered(now time.Time) (float64, bool) {
	if !m.found || now.Sub(m.state.Seen) >= m.cfg.Remember || !(m.state.Rate > 0) {
		return 0, false
	}
	return m.state.Rate, true
}

// Run writes state() (the limiter's, for the whole budget) every Refresh
// until ctx ends, then once more, and returns nil. A failed write is
// logged once and retried at the next refresh.
func (m *Memory) Run(ctx context.Context, state func() control.Adapt) error {
	tick := time.NewTicker(m.cfg.Refresh)
	defer tick.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
			defer cancel()
			_ = m.write(wctx, state(), time.Now())
			return nil
		case <-tick.C:
		}
		err := m.write(ctx, state(), time.Now())
		if err != nil {
			m.reopen(ctx)
		}
		switch {
		case err != nil && !failing:
			failing = true
			m.log.Warn("cluster: rate not remembered; retrying", "bucket", FleetBucket(m.cfg.Bucket), "err", err)
		case err == nil && failing:
			failing = false
		}
	}
}

func (m *Memory) write(ctx context.Context, a control.Adapt, now time.Time) error {
	data, err := json.Marshal(fleet.State{Adapt: a, Seen: now})
	if err != nil {
		return err
	}
	wctx, cancel := context.WithTimeout(ctx, opTimeout(m.cfg.Refresh))
	defer cancel()
	_, err = m.kv.Put(wctx, fleetKey, data)
	return err
}

// reopen opens the bucket again after a failed write, creating it if it
// was deleted.
func (m *Memory) reopen(ctx context.Context) {
	octx, cancel := context.WithTimeout(ctx, opTimeout(m.cfg.Refresh))
	defer cancel()
	name := FleetBucket(m.cfg.Bucket)
	if _, err := m.js.KeyValue(octx, name); !errors.Is(err, jetstream.ErrBucketNotFound) {
		return
	}
	if kv, err := openFleetBucket(octx, m.js, name); err == nil {
		m.kv = kv
		m.log.Warn("cluster: fleet bucket created again; it was deleted", "bucket", name)
	}
}
