package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Key prefixes in the bucket.
const (
	memberPrefix = "m."
	leasePrefix  = "p."
)

// Member is one worker's heartbeat: the value of its key in the bucket.
type Member struct {
	Key       string    `json:"-"`         // the member's key in the bucket
	ID        string    `json:"id"`        // Config.ID
	Started   time.Time `json:"started"`   // when it joined
	Refreshed time.Time `json:"refreshed"` // when it wrote this heartbeat (its own clock)
	Rate      float64   `json:"rate"`      // its limiter's rate, units per minute
	Share     float64   `json:"share"`     // its fraction of the budget
	Leases    int       `json:"leases"`    // partitions it holds (leases mode)
	// Waited is when its requests last had to wait in its limiter (zero:
	// never); a fleet raises its rate only if some worker's did since the
	// fleet's increase clock restarted.
	Waited time.Time `json:"waited,omitzero"`
	// Accepted is the units the API accepted from it in the minute before
	// the heartbeat (0: none, or no limiter yet); the fleet controller adds
	// up the workers' counts (docs/limiter.md, "Fleet").
	Accepted float64 `json:"accepted,omitzero"`
	// Skew is how far the member's clock is ahead of the NATS server's
	// (negative: behind), measured by the reader: Refreshed minus the
	// time the server stored the heartbeat (which adds the write's
	// latency, milliseconds). The heartbeat itself does not carry it.
	Skew time.Duration `json:"clock_skew,omitzero"`
}

// Membership keeps this worker's heartbeat key in the bucket and counts the
// live keys: N, the number of workers sharing the budget. See the package
// documentation for the model.
type Membership struct {
	cfg     Config
	kv      jetstream.KeyValue
	key     string
	started time.Time
	set     settings
	input   *inputLog
	watcher jetstream.KeyWatcher

	mu        sync.Mutex
	roster    *roster[Member]
	n         int
	share     float64
	leases    int
	leased    bool // a Leases reports the share; else it is 1/n
	nextWrite time.Time
	changed   chan struct{} // kicked when n changes; read by Leases
	skewed    bool          // this worker's clock was found off by more than maxSkew
	lim       Limiter       // set by Drive
	counts    bool          // Drive: N goes to lim
}

// Drive ties m to the worker's limiter once it exists: from then on each
// heartbeat carries l's rate and the time a request last waited in it
// (what the fleet controller raises on), starting with one written at
// once (Run retries it if it fails), and, when counts is true (limiter.share.mode members), every
// change of the instance count is applied to l: the current one at once
// (its error is Drive's), each later one as it is seen (a count l refuses
// is then logged and skipped).
func (m *Membership) Drive(ctx context.Context, l Limiter, counts bool) error {
	m.mu.Lock()
	m.lim, m.counts = l, counts
	n := m.n
	m.mu.Unlock()
	if counts {
		if err := l.SetInstanceCount(n); err != nil {
			return err
		}
	}
	if err := m.write(ctx, time.Now()); err != nil {
		// Run writes it again soon; the worker starts all the same.
		m.set.log.Warn("cluster: heartbeat not written", "err", err)
	}
	return nil
}

// Join opens (or creates) the bucket, writes this worker's heartbeat,
// reads every heartbeat already there and reports N (WithInstanceCount)
// before it returns. Run keeps the heartbeat alive and leaves the bucket
// when its context ends; without Run, the key expires after the TTL.
func Join(ctx context.Context, js jetstream.JetStream, cfg Config, opts ...Option) (*Membership, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	kv, err := openBucket(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	var suffix [4]byte
	_, _ = rand.Read(suffix[:])
	key := memberPrefix + keyPart(cfg.ID) + "-" + hex.EncodeToString(suffix[:])
	m := &Membership{
		cfg:     cfg,
		kv:      kv,
		key:     key,
		started: time.Now(),
		set:     newSettings(opts),
		roster:  newRoster[Member](cfg.TTL, key, cfg.Refresh*3/2),
		n:       1,
		share:   1,
		changed: make(chan struct{}, 1),
	}
	m.input = newInputLog(m.set)
	now := time.Now()
	if err := m.write(ctx, now); err != nil {
		return nil, err
	}
	w, err := kv.Watch(context.WithoutCancel(ctx), memberPrefix+">") // the watch lives as long as Run
	if err != nil {
		m.leave()
		return nil, fmt.Errorf("cluster: watch bucket %q: %w", cfg.Bucket, err)
	}
	m.watcher = w
	// The initial values end with a nil entry.
	for initial := true; initial; {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				m.leave()
				return nil, fmt.Errorf("cluster: watch bucket %q: closed", cfg.Bucket)
			}
			if e == nil {
				initial = false
				break
			}
			m.apply(e, time.Now())
		case <-ctx.Done():
			_ = w.Stop()
			m.leave()
			return nil, fmt.Errorf("cluster: join bucket %q: %w", cfg.Bucket, ctx.Err())
		}
	}
	m.recount(time.Now(), true)
	m.set.log.Info("cluster: joined", "bucket", cfg.Bucket, "key", m.key, "instances", m.Count())
	return m, nil
}

// openBucket opens the bucket, creating it with max age TTL if it does not
// exist. An existing bucket must have the same TTL: leases are only safe
// if every member expires keys at the same age.
func openBucket(ctx context.Context, js jetstream.JetStream, cfg Config) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      cfg.Bucket,
			Description: "sluice: heartbeats and capacity leases of the workers sharing one budget",
			History:     1,
			TTL:         cfg.TTL,
			Storage:     jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket) // created meanwhile by another worker
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %q: %w", cfg.Bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %q: %w", cfg.Bucket, err)
	}
	if st.TTL() != cfg.TTL {
		return nil, fmt.Errorf("cluster: ttl: bucket %q expires keys after %v, but ttl is %v; every worker must use the bucket's ttl", cfg.Bucket, st.TTL(), cfg.TTL)
	}
	return kv, nil
}

// Key returns this worker's key in the bucket.
func (m *Membership) Key() string { return m.key }

// Count returns N as last computed: the live members, this one included.
func (m *Membership) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.n
}

// Members returns the live members as this worker sees them, sorted by
// key. This worker is among them once its heartbeat has come back.
func (m *Membership) Members() []Member {
	now := time.Now()
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Member
	for _, k := range m.roster.live(now) {
		e, _ := m.roster.get(k, now)
		v := e.value
		v.Key = k
		out = append(out, v)
	}
	return out
}

// liveKeys returns the live member keys at now with this worker's own,
// sorted.
func (m *Membership) liveKeys(now time.Time) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := m.roster.live(now)
	if i, found := sort.Find(len(keys), func(i int) int { return strings.Compare(m.key, keys[i]) }); !found {
		keys = append(keys, "")
		copy(keys[i+1:], keys[i:])
		keys[i] = m.key
	}
	return keys
}

// Budget returns the budget the other live members have found, in units
// per minute for the whole budget: the median over them of rate / share,
// from their last heartbeats. A worker that joins late starts its limiter
// there (as its initial rate) instead of at the configured initial rate,
// so that scaling out keeps the total the others found. False when no
// other member has reported a rate.
func (m *Membership) Budget() (float64, bool) {
	var est []float64
	for _, v := range m.Members() {
		if v.Key != m.key && v.Rate > 0 && v.Share > 0 {
			est = append(est, v.Rate/v.Share)
		}
	}
	if len(est) == 0 {
		return 0, false
	}
	slices.Sort(est)
	if len(est)%2 == 1 {
		return est[len(est)/2], true
	}
	return (est[len(est)/2-1] + est[len(est)/2]) / 2, true
}

// report sets what the heartbeat says of the leases (Leases calls it).
func (m *Membership) report(leases int, share float64) {
	m.mu.Lock()
	m.leases, m.share, m.leased = leases, share, true
	m.mu.Unlock()
}

// Run refreshes the heartbeat every Config.Refresh, follows the bucket and
// reports N on every change, until ctx ends; then it deletes the heartbeat
// at once and returns nil. A failed refresh is retried; while refreshes
// fail (or the watch stalls), N stays where it was (see the package
// documentation). Run returns
// an error only if the watch ends (the connection was closed).
func (m *Membership) Run(ctx context.Context) error {
	defer m.leave()
	defer func() { _ = m.watcher.Stop() }()
	timer := time.NewTimer(0)
	defer timer.Stop()
	failing := false
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-m.watcher.Updates():
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return fmt.Errorf("cluster: watch bucket %q: closed", m.cfg.Bucket)
			}
			if e != nil {
				m.apply(e, time.Now())
			}
		case <-timer.C:
		}
		now := time.Now()
		m.mu.Lock()
		due := !now.Before(m.nextWrite)
		m.mu.Unlock()
		if due {
			err := m.write(ctx, now)
			switch {
			case err != nil && !failing && ctx.Err() == nil:
				failing = true
				m.set.log.Warn("cluster: heartbeat failed; retrying, the instance count holds meanwhile", "bucket", m.cfg.Bucket, "err", err)
			case err == nil && failing:
				failing = false
				m.set.log.Info("cluster: heartbeat written again", "bucket", m.cfg.Bucket)
			}
		}
		m.recount(time.Now(), false)
		timer.Reset(max(time.Until(m.wake(now)), time.Millisecond))
	}
}

// wake returns when Run must next look: the next heartbeat or the next
// expiry of a member.
func (m *Membership) wake(now time.Time) time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	next := m.nextWrite
	if at, ok := m.roster.nextExpiry(now); ok && at.Before(next) {
		next = at
	}
	return next
}

// opTimeout bounds one KV operation.
func (c Config) opTimeout() time.Duration { return max(c.Refresh/2, 100*time.Millisecond) }

// write writes the heartbeat at now. A failure schedules a retry; the
// roster notices the missing echo by itself.
func (m *Membership) write(ctx context.Context, now time.Time) error {
	m.mu.Lock()
	lim := m.lim
	m.mu.Unlock()
	rate, accepted := 0.0, 0.0 // no limiter yet: no rate to report
	var waited time.Time
	if lim != nil {
		rate, waited, accepted = lim.Rate(), lim.LastWait(), lim.AcceptedUnits()
	}
	m.mu.Lock()
	v := Member{ID: m.cfg.ID, Started: m.started, Refreshed: now, Rate: rate, Share: m.share, Leases: m.leases, Waited: waited, Accepted: accepted}
	m.mu.Unlock()
	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("cluster: heartbeat: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, m.cfg.opTimeout())
	_, err = m.kv.Put(wctx, m.key, data)
	cancel()
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.nextWrite = now.Add(max(m.cfg.Refresh/4, 50*time.Millisecond))
		return fmt.Errorf("cluster: heartbeat in bucket %q: %w", m.cfg.Bucket, err)
	}
	m.nextWrite = now.Add(m.cfg.Refresh)
	if m.set.onWrite != nil {
		m.set.onWrite(now)
	}
	return nil
}

// apply records one watched entry seen at at. A heartbeat is checked
// (checkMember): a value that breaks its rule is not used, and is logged
// and counted.
func (m *Membership) apply(e jetstream.KeyValueEntry, at time.Time) {
	if e.Operation() != jetstream.KeyValuePut {
		m.mu.Lock()
		m.roster.remove(e.Key())
		m.mu.Unlock()
		return
	}
	v, ps := decodeMember(e, at)
	m.input.report("member", m.cfg.Bucket+"/"+e.Key(), ps, "not used")
	m.mu.Lock()
	m.roster.put(e.Key(), e.Revision(), v, at)
	own := e.Key() == m.key
	first := own && !m.skewed && (v.Skew > maxSkew || v.Skew < -maxSkew)
	m.skewed = m.skewed || first
	m.mu.Unlock()
	if first {
		m.set.log.Warn("cluster: this worker's clock is off from the NATS server's; the others ignore the times it writes ahead of theirs",
			"bucket", m.cfg.Bucket, "skew", v.Skew.Round(time.Millisecond))
	}
}

// decodeMember decodes and checks the heartbeat e, read at now.
func decodeMember(e jetstream.KeyValueEntry, now time.Time) (Member, []problem) {
	var v Member
	if err := json.Unmarshal(e.Value(), &v); err != nil {
		// Still a live worker (another version, say): count it.
		return Member{ID: strings.TrimPrefix(e.Key(), memberPrefix)}, []problem{{"heartbeat", "unreadable: " + err.Error()}}
	}
	return checkMember(v, e.Created(), now)
}

// recount computes N at now and reports it if it changed (or if force).
func (m *Membership) recount(now time.Time, force bool) {
	m.mu.Lock()
	m.roster.prune(now)
	n := count(m.roster, m.key, now)
	changed := n != m.n
	m.n = n
	if !m.leased {
		m.share = 1 / float64(n)
	}
	m.mu.Unlock()
	if !changed && !force {
		return
	}
	m.set.metrics.setInstances(n)
	if changed {
		m.set.log.Info("cluster: instance count changed", "bucket", m.cfg.Bucket, "instances", n)
		select {
		case m.changed <- struct{}{}:
		default:
		}
	}
	if m.set.onCount != nil {
		m.set.onCount(n)
	}
	m.mu.Lock()
	lim, counts := m.lim, m.counts
	m.mu.Unlock()
	if lim != nil && counts {
		if err := lim.SetInstanceCount(n); err != nil {
			m.set.log.Warn("limiter.share: instance count not applied", "instances", n, "err", err)
		}
	}
}

// leave deletes the heartbeat, with a fresh deadline: it runs after the
// worker's context has ended.
func (m *Membership) leave() {
	ctx, cancel := context.WithTimeout(context.Background(), max(m.cfg.opTimeout(), time.Second))
	defer cancel()
	if err := m.kv.Delete(ctx, m.key); err != nil {
		m.set.log.Warn("cluster: leave: heartbeat not deleted; it expires after the ttl", "bucket", m.cfg.Bucket, "err", err)
		return
	}
	m.set.log.Info("cluster: left", "bucket", m.cfg.Bucket, "key", m.key)
}

// List returns the live members in bucket, sorted by key, as of now: those
// whose heartbeat the server stored less than the bucket's TTL ago. It is
// for `sluice status`: it reads the bucket once and does not join.
func List(ctx context.Context, js jetstream.JetStream, bucket string) ([]Member, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %q: %w", bucket, err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %q: %w", bucket, err)
	}
	lister, err := kv.ListKeysFiltered(ctx, memberPrefix+">")
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %q: %w", bucket, err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	now := time.Now()
	var out []Member
	for _, k := range keys {
		e, err := kv.Get(ctx, k)
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("cluster: bucket %q: %w", bucket, err)
		}
		if st.TTL() > 0 && now.Sub(e.Created()) >= st.TTL() {
			continue
		}
		v, _ := decodeMember(e, now)
		v.Key = k
		out = append(out, v)
	}
	return out, nil
}
