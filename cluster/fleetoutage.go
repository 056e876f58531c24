package cluster

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go/jetstream"
)

// A fleet through an outage of its state: it runs on the local rules
// while the bucket cannot be read, makes the bucket again if it was
// deleted, and follows the fleet again once it can read it.

// reconnect reads the state again after an outage. If the bucket is
// gone (deleted), it creates it again, and the next write stores the
// state this worker holds.
func (f *Fleet) reconnect(ctx context.Context) error {
	err := f.reload(ctx)
	if err == nil {
		return nil
	}
	octx, cancel := context.WithTimeout(ctx, opTimeout(f.cfg.Refresh))
	defer cancel()
	name := FleetBucket(f.cfg.Bucket)
	if _, ferr := f.js.KeyValue(octx, name); !errors.Is(ferr, jetstream.ErrBucketNotFound) {
		return err // there, or the server cannot say
	}
	kv, err := openFleetBucket(octx, f.js, name)
	if err != nil {
		return err
	}
	f.mu.Lock()
	f.kv, f.gen, f.rev = kv, f.gen+1, 0
	f.mu.Unlock()
	f.set.log.Warn("cluster: fleet bucket created again; it was deleted", "bucket", name)
	return f.reload(ctx)
}

// offline makes the limiter run on its own rules after err.
func (f *Fleet) offline(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.online {
		return
	}
	f.online = false
	f.set.metrics.setFleet(f.state.Rate, false)
	if f.lim != nil {
		f.lim.Lead()
	}
	f.set.log.Warn("cluster: fleet state unreachable; running on the local rules below the last fleet rate", "bucket", FleetBucket(f.cfg.Bucket), "rate", f.state.Rate, "err", err)
}

// rejoin makes the limiter follow the fleet again.
func (f *Fleet) rejoin() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.online {
		return
	}
	f.online = true
	f.set.metrics.setFleet(f.state.Rate, true)
	if f.lim != nil {
		f.followLocked()
	}
	f.set.log.Info("cluster: fleet state reachable again; following the fleet", "bucket", FleetBucket(f.cfg.Bucket), "rate", f.state.Rate)
}
