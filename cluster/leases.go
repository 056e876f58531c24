package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// leaseValue is the value of a partition's key: who holds it.
type leaseValue struct {
	Member string `json:"member"` // the holder's member key
	ID     string `json:"id"`
}

// Leases holds capacity leases for a Membership: the budget is split into
// Config.Partitions partitions, and this worker's share of the budget is
// the partitions it holds, over the partitions. See the package
// documentation for the model.
type Leases struct {
	m   *Membership
	kv  jetstream.KeyValue
	cfg Config
	set settings

	watcher   jetstream.KeyWatcher
	view      *roster[leaseValue] // every partition key as watched
	held      map[int]leaseState  // this worker's leases
	lastRenew time.Time
	failing   bool    // renewals are failing (logged once)
	share     float64 // last share reported

	mu       sync.Mutex
	snapshot []int // held partitions, sorted, for Held
}

// NewLeases starts following the partitions of m's bucket and acquires this
// worker's first leases, reporting its share (WithShare) before it returns:
// IdleShare at once, then its leases' share. Run keeps them.
func NewLeases(ctx context.Context, m *Membership, opts ...Option) (*Leases, error) {
	l := &Leases{
		m:     m,
		kv:    m.kv,
		cfg:   m.cfg,
		set:   newSettings(opts),
		view:  newRoster[leaseValue](m.cfg.TTL, "", 0),
		held:  map[int]leaseState{},
		share: -1,
	}
	m.report(0, IdleShare)
	l.applyShare()
	w, err := l.kv.Watch(context.WithoutCancel(ctx), leasePrefix+">")
	if err != nil {
		return nil, fmt.Errorf("cluster: watch leases in bucket %q: %w", l.cfg.Bucket, err)
	}
	l.watcher = w
	for initial := true; initial; {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("cluster: watch leases in bucket %q: closed", l.cfg.Bucket)
			}
			if e == nil {
				initial = false
				break
			}
			l.apply(e, time.Now())
		case <-ctx.Done():
			_ = w.Stop()
			return nil, fmt.Errorf("cluster: leases in bucket %q: %w", l.cfg.Bucket, ctx.Err())
		}
	}
	l.tick(ctx, time.Now())
	return l, nil
}

// Held returns the partitions this worker holds, sorted.
func (l *Leases) Held() []int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.snapshot)
}

// Run renews the leases every Config.Refresh, rebalances them as members
// come and go, and drops any lease it could not renew in time, until ctx
// ends; then it releases them all and returns nil. It returns an error
// only if the watch ends (the connection was closed).
func (l *Leases) Run(ctx context.Context) error {
	defer l.releaseAll()
	defer func() { _ = l.watcher.Stop() }()
	timer := time.NewTimer(l.wake(time.Now()))
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-l.watcher.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("cluster: watch leases in bucket %q: closed", l.cfg.Bucket)
			}
			if e == nil {
				continue
			}
			l.apply(e, time.Now())
			if e.Operation() == jetstream.KeyValuePut {
				continue // nothing freed: no need to look again now
			}
		case <-l.m.changed:
		case <-timer.C:
		}
		now := time.Now()
		l.tick(ctx, now)
		timer.Reset(max(l.wake(time.Now()), time.Millisecond))
	}
}

// wake returns the delay until the loop must next look: the next renewal,
// the first lease that would lapse, or a partition that frees up.
func (l *Leases) wake(now time.Time) time.Duration {
	next := l.lastRenew.Add(l.cfg.Refresh)
	for _, h := range l.held {
		if h.until.Before(next) {
			next = h.until
		}
	}
	if at, ok := l.view.nextExpiry(now); ok && at.Before(next) {
		next = at
	}
	return next.Sub(now)
}

func partitionKey(p int) string { return leasePrefix + strconv.Itoa(p) }

func partitionOf(key string) (int, bool) {
	p, err := strconv.Atoi(strings.TrimPrefix(key, leasePrefix))
	return p, err == nil && strings.HasPrefix(key, leasePrefix)
}

func (l *Leases) apply(e jetstream.KeyValueEntry, at time.Time) {
	if e.Operation() != jetstream.KeyValuePut {
		l.view.remove(e.Key())
		return
	}
	var v leaseValue
	_ = json.Unmarshal(e.Value(), &v) // unreadable: held by an unknown member
	l.view.put(e.Key(), e.Revision(), v, at)
}

// tick does one round at now: drop lapsed leases, renew if due, then
// release or acquire as plan says.
func (l *Leases) tick(ctx context.Context, now time.Time) {
	l.dropLapsed(now)
	if refreshDue(l.lastRenew, now, l.cfg.Refresh) {
		l.renew(ctx, now)
	}
	if ctx.Err() != nil {
		return
	}
	now = time.Now()
	l.view.prune(now)
	in := planInput{
		partitions: l.cfg.Partitions,
		members:    l.m.liveKeys(now),
		self:       l.m.key,
		held:       len(l.held),
		others:     map[string]int{},
	}
	taken := map[int]bool{}
	for _, k := range l.view.live(now) {
		p, ok := partitionOf(k)
		if !ok || p >= l.cfg.Partitions {
			continue
		}
		taken[p] = true
		if e, _ := l.view.get(k, now); e.value.Member != l.m.key {
			in.others[e.value.Member]++
		}
	}
	for p := range l.held {
		taken[p] = true
	}
	in.taken = len(taken)
	acquire, release := plan(in)
	if release > 0 {
		l.release(release)
	}
	if acquire > 0 {
		var free []int
		for p := range l.cfg.Partitions {
			if !taken[p] {
				free = append(free, p)
			}
		}
		rand.Shuffle(len(free), func(i, j int) { free[i], free[j] = free[j], free[i] })
		l.acquire(ctx, free, acquire)
	}
	l.m.report(len(l.held), shareOf(len(l.held), l.cfg.Partitions))
}

// dropLapsed gives up the leases whose time is up at now.
func (l *Leases) dropLapsed(now time.Time) {
	lapsed := false
	for p, h := range l.held {
		if !now.Before(h.until) {
			delete(l.held, p)
			lapsed = true
			l.set.log.Warn("cluster: lease lapsed", "bucket", l.cfg.Bucket, "partition", p)
		}
	}
	if lapsed {
		l.applyShare()
	}
}

// opContext bounds a KV operation so that it ends before the first held
// lease would lapse: the loop must be free to drop it in time.
func (l *Leases) opContext(ctx context.Context, now time.Time) (context.Context, context.CancelFunc) {
	deadline := now.Add(l.cfg.opTimeout())
	for _, h := range l.held {
		if h.until.Before(deadline) {
			deadline = h.until
		}
	}
	return context.WithDeadline(ctx, deadline)
}

func (l *Leases) value() []byte {
	b, _ := json.Marshal(leaseValue{Member: l.m.key, ID: l.cfg.ID})
	return b
}

// renew updates every held lease at its revision. A lease someone else
// now holds (or that expired) is dropped at once; one that could not be
// written keeps until it lapses.
func (l *Leases) renew(ctx context.Context, now time.Time) {
	l.lastRenew = now
	val := l.value()
	lost, failed := false, false
	for _, p := range slices.Sorted(maps.Keys(l.held)) {
		h := l.held[p]
		sent := time.Now()
		if !sent.Before(h.until) {
			delete(l.held, p)
			lost = true
			continue
		}
		octx, cancel := l.opContext(ctx, sent)
		rev, err := l.kv.Update(octx, partitionKey(p), val, h.rev)
		cancel()
		switch {
		case err == nil:
			l.held[p] = leaseState{rev: rev, until: sent.Add(leaseLife(l.cfg.TTL))}
		case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists),
			errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
			delete(l.held, p)
			lost = true
			l.set.log.Warn("cluster: lease lost", "bucket", l.cfg.Bucket, "partition", p)
		default:
			if !failed && !l.failing && ctx.Err() == nil {
				l.set.log.Warn("cluster: leases not renewed; each is kept until it lapses", "bucket", l.cfg.Bucket, "err", err)
			}
			failed = true
		}
	}
	if failed {
		l.failing = true
		l.lastRenew = now.Add(-l.cfg.Refresh * 3 / 4) // retry soon
	} else if l.failing {
		l.failing = false
		l.set.log.Info("cluster: leases renewed again", "bucket", l.cfg.Bucket, "held", len(l.held))
	}
	if lost {
		l.applyShare()
	}
}

// release gives up n leases: the share shrinks first, then the keys are
// deleted at their revision (so a lease that meanwhile passed to another
// worker is left alone).
func (l *Leases) release(n int) {
	ps := slices.Sorted(maps.Keys(l.held))
	ps = ps[len(ps)-min(n, len(ps)):]
	gone := map[int]leaseState{}
	for _, p := range ps {
		gone[p] = l.held[p]
		delete(l.held, p)
	}
	l.applyShare()
	l.deleteLeases(gone)
	l.set.log.Info("cluster: leases released", "bucket", l.cfg.Bucket, "partitions", ps, "held", len(l.held))
}

func (l *Leases) deleteLeases(gone map[int]leaseState) {
	ctx, cancel := context.WithTimeout(context.Background(), max(l.cfg.opTimeout(), time.Second))
	defer cancel()
	for p, h := range gone {
		if err := l.kv.Delete(ctx, partitionKey(p), jetstream.LastRevision(h.rev)); err != nil {
			l.set.log.Debug("cluster: release: lease not deleted; it expires after the ttl", "partition", p, "err", err)
		}
	}
}

// acquire creates up to n of the free partitions' keys.
func (l *Leases) acquire(ctx context.Context, free []int, n int) {
	val := l.value()
	var got []int
	for _, p := range free {
		if len(got) == n || ctx.Err() != nil {
			break
		}
		sent := time.Now()
		octx, cancel := l.opContext(ctx, sent)
		rev, err := l.kv.Create(octx, partitionKey(p), val)
		cancel()
		if err != nil {
			if !errors.Is(err, jetstream.ErrKeyExists) {
				l.set.log.Debug("cluster: lease not acquired", "partition", p, "err", err)
				break
			}
			continue
		}
		l.held[p] = leaseState{rev: rev, until: sent.Add(leaseLife(l.cfg.TTL))}
		got = append(got, p)
	}
	if len(got) > 0 {
		l.applyShare()
		l.set.log.Info("cluster: leases acquired", "bucket", l.cfg.Bucket, "partitions", got, "held", len(l.held))
	}
}

// releaseAll gives up every lease on shutdown.
func (l *Leases) releaseAll() {
	gone := l.held
	l.held = map[int]leaseState{}
	l.applyShare()
	l.m.report(0, IdleShare)
	l.deleteLeases(gone)
}

// applyShare reports the share of the leases held, if it changed, and
// updates the snapshot and the metric.
func (l *Leases) applyShare() {
	ps := slices.Sorted(maps.Keys(l.held))
	l.mu.Lock()
	l.snapshot = ps
	l.mu.Unlock()
	l.set.metrics.setLeases(len(ps))
	if s := shareOf(len(ps), l.cfg.Partitions); s != l.share {
		l.share = s
		if lim := l.set.limiter; lim != nil {
			if err := lim.SetShare(s); err != nil {
				l.set.log.Warn("limiter.share: share not applied", "share", s, "err", err)
			}
		}
		if l.set.onShare != nil {
			l.set.onShare(s)
		}
	}
	if l.set.onHeld != nil {
		l.set.onHeld(ps)
	}
}
