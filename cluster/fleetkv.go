package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// fleetKey is the key of the fleet's state in the fleet bucket.
const fleetKey = "fleet"

// FleetBucket returns the name of the bucket that holds the fleet state of
// the workers coordinating in bucket. It is a bucket of its own, with no
// max age, because the coordination bucket drops every key after its TTL
// and the fleet's rate must be remembered for limiter.share.remember.
func FleetBucket(bucket string) string { return bucket + "_fleet" }

// FleetConfig configures a Fleet.
type FleetConfig struct {
	// Bucket is the coordination bucket (Config.Bucket); the state lives
	// in FleetBucket(Bucket).
	Bucket string
	// Limiter holds the budget's limiter options (validated), whose rules
	// the fleet runs for the whole budget.
	Limiter limiter.Config
	// Remember is how long the state is used after a worker last wrote
	// it; older, a starting worker begins again at the initial rate.
	// Default DefaultRemember; negative: never (every start begins at the
	// initial rate).
	Remember time.Duration
	// Refresh is how often a running worker confirms the state (at most
	// once per Refresh for the whole fleet). Default DefaultTTL/3.
	Refresh time.Duration
}

func (c FleetConfig) withDefaults() FleetConfig {
	if c.Remember == 0 {
		c.Remember = fleet.DefaultRemember
	}
	if c.Refresh == 0 {
		c.Refresh = DefaultTTL / 3
	}
	return c
}

// Fleet runs one adaptive rate for all the workers that share a budget: the
// limiter's rules applied to a fleet.State in the fleet bucket, written only
// with compare-and-set on the key's revision, so that concurrent decisions
// of many workers never compound. See the package documentation.
type Fleet struct {
	js    jetstream.JetStream
	cfg   FleetConfig
	rules fleet.Rules
	m     *Membership // heartbeats saying when the others waited; nil for none
	set   settings
	input *inputLog
	clock func() time.Time // the reader's clock of observe; time.Now

	mu    sync.Mutex
	kv    jetstream.KeyValue // the bucket; opened again when it was deleted
	gen   uint64             // counts the openings of kv
	state fleet.State
	rev   uint64 // the state's revision in the bucket; 0 if absent
	// replace: the stored state broke a rule (checkFleetState), is
	// unreadable or absent; the next step writes the one held.
	replace bool
	// badPause is the end of a pause beyond max_pause that the stored
	// state holds and this worker ignores, until it is replaced (Ready).
	badPause   time.Time
	online     bool
	lim        Follower
	phase      float64       // this worker's phase in [0, 1) at the end of a fleet pause
	delay      time.Duration // how long the last write of the state took
	pending    fleet.Report  // throttles not yet applied, coalesced
	hasPending bool
	kick       chan struct{}
}

// OpenFleet opens (or creates) the fleet bucket and reads the state a
// starting worker runs on: the stored state if a worker wrote it less than
// Remember ago, else a new one at the initial rate, which it writes. m
// gives the other workers' heartbeats (nil: this worker alone).
func OpenFleet(ctx context.Context, js jetstream.JetStream, cfg FleetConfig, m *Membership, opts ...Option) (*Fleet, error) {
	if err := cfg.Limiter.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	kv, err := openFleetBucket(ctx, js, FleetBucket(cfg.Bucket))
	if err != nil {
		return nil, err
	}
	f := &Fleet{js: js, kv: kv, cfg: cfg, m: m, set: newSettings(opts), online: true, kick: make(chan struct{}, 1), phase: rand.Float64(),
		rules: fleet.NewRules(cfg.Limiter, cfg.Remember, cfg.Refresh)}
	f.input, f.clock = newInputLog(f.set), time.Now
	if err := f.reload(ctx); err != nil {
		return nil, err
	}
	remembered := f.rev != 0 && time.Since(f.state.Seen) < cfg.Remember
	// The state resumed is written when the rules start a new one, when
	// they clamp the rate, and when the stored one broke a rule.
	err = f.update(ctx, func(s fleet.State) (fleet.State, bool) {
		ns, changed := f.rules.Resume(s, time.Now())
		return ns, changed || ns != s || f.replacing()
	})
	if err != nil {
		return nil, err
	}
	f.set.log.Info("cluster: fleet state", "bucket", FleetBucket(cfg.Bucket), "rate", f.State().Rate, "remembered", remembered)
	return f, nil
}

func openFleetBucket(ctx context.Context, js jetstream.JetStream, name string) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket:      name,
			Description: "sluice: the adaptive rate of the workers sharing one budget, remembered across restarts",
			History:     1,
			Storage:     jetstream.FileStorage,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cluster: bucket %q: %w", name, err)
	}
	return kv, nil
}

// State returns the fleet state as this worker last saw it.
func (f *Fleet) State() fleet.State {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.state
}

// Delay returns how long this worker's last write of the state took: the
// fleet's propagation delay as this worker sees it (the others read a
// change through their watch about as fast). 0 before the first write.
func (f *Fleet) Delay() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.delay
}

// Online reports whether this worker runs on the fleet's state (true) or,
// the bucket being unreachable, on its own rules below the last fleet rate.
func (f *Fleet) Online() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.online
}

// Report takes a throttle the worker's limiter observed (it is the
// limiter's throttle hook, limiter.WithThrottleHook). Reports are
// coalesced and applied to the fleet by Run; it never blocks.
func (f *Fleet) Report(r fleet.Report) {
	f.mu.Lock()
	if !f.hasPending {
		f.pending, f.hasPending = r, true
	} else {
		p := &f.pending
		p.At = latest(p.At, r.At)
		p.Sent = latest(p.Sent, r.Sent)
		if p.At.Add(p.RetryAfter).Before(r.At.Add(r.RetryAfter)) {
			p.RetryAfter = r.At.Add(r.RetryAfter).Sub(p.At)
		}
		p.Measured, p.Part = r.Measured, r.Part
		if r.Accepted >= 0 {
			p.Accepted = r.Accepted
		}
		p.Window = max(p.Window, r.Window)
	}
	f.mu.Unlock()
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// Run makes lim follow the fleet state until ctx ends: it watches the
// state, applies the reported throttles, raises the rate when the rules
// allow, and confirms the state once per refresh. While the bucket cannot
// be reached (or its watch ended) lim runs on its own rules, below the
// last fleet rate; Run reads the state again each second, creates the
// bucket again if it was deleted, and watches it again; then the
// throttles seen meanwhile are applied to the fleet and lim follows the
// fleet again. Run returns nil when ctx ends, and never before.
func (f *Fleet) Run(ctx context.Context, lim Follower) error {
	f.attach(lim)
	var (
		w       jetstream.KeyWatcher
		gen     uint64 // the opening of the bucket that w watches
		initial bool   // w still sends the values it started with
	)
	stop := func() {
		if w != nil {
			_ = w.Stop()
			w = nil
		}
	}
	defer stop()
	watch := func() {
		stop()
		kv, g := f.bucket()
		nw, err := kv.Watch(context.WithoutCancel(ctx), fleetKey) // it lives as long as Run
		if err != nil {
			f.offline(fmt.Errorf("cluster: watch fleet state: %w", err))
			return
		}
		w, gen, initial = nw, g, true
	}
	watch()
	tick := time.NewTicker(fleetTick)
	defer tick.Stop()
	for {
		var updates <-chan jetstream.KeyValueEntry
		if w != nil {
			updates = w.Updates()
		}
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-updates:
			switch {
			case !ok:
				if ctx.Err() != nil {
					return nil
				}
				w = nil // watched again at the next tick
				f.offline(errors.New("cluster: watch fleet state: closed"))
			case e == nil:
				initial = false
			case e.Operation() == jetstream.KeyValuePut && !initial && f.behind(e.Revision()):
				// Older than the state held: a write this worker saw
				// first by a read, or the bucket made again by another
				// worker and the watch carried over. A read tells.
				_ = f.reload(ctx)
			case e.Operation() == jetstream.KeyValuePut:
				// The values a watch starts with are the state now,
				// even at a lower revision (the bucket made again).
				f.observe(e.Value(), e.Revision(), initial)
			}
		case <-f.kick:
			f.step(ctx, time.Now(), false)
		case <-tick.C:
			if _, g := f.bucket(); w == nil || g != gen {
				watch()
			}
			f.step(ctx, time.Now(), true)
		}
	}
}

// bucket returns the bucket's handle and its opening.
func (f *Fleet) bucket() (jetstream.KeyValue, uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.kv, f.gen
}

// behind reports whether rev is older than the revision of the state held.
func (f *Fleet) behind(rev uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return rev < f.rev
}

// replacing reports whether the stored state is to be replaced.
func (f *Fleet) replacing() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.replace
}

// Ready reports, for /readyz, a fleet pause that ends more than max_pause
// after now: one the stored state holds (ignored by this worker, and
// replaced at its next write), or one it follows. Nil otherwise.
func (f *Fleet) Ready(now time.Time) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	mp := f.cfg.Limiter.MaxPause
	for _, p := range []time.Time{f.badPause, f.state.PausedUntil} {
		if ahead := p.Sub(now); ahead > mp+maxSkew {
			return fmt.Errorf("fleet state in bucket %q: a pause until %s, %v ahead, more than max_pause %v (ignored until replaced)",
				FleetBucket(f.cfg.Bucket), p.UTC().Format(time.RFC3339), ahead.Round(time.Second), mp)
		}
	}
	return nil
}

// attach makes lim follow the fleet state (or lead, offline).
func (f *Fleet) attach(lim Follower) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lim = lim
	f.set.metrics.setFleet(f.state.Rate, f.online)
	if f.online {
		// The bucket starts to fill at this worker's phase, as at the end
		// of a pause: workers started together do not send in step.
		start := f.rules.Stagger(f.state, lim.Part(), f.phase, time.Now())
		lim.Follow(f.state, latest(start, f.rules.PauseEnd(f.state, lim.Part(), f.phase)))
	} else {
		lim.Lead()
	}
}

// followLocked makes the limiter follow the state, ending the fleet's
// pause at this worker's phase (fleet.Rules.PauseEnd).
func (f *Fleet) followLocked() {
	f.lim.Follow(f.state, f.rules.PauseEnd(f.state, f.lim.Part(), f.phase))
}

// fleetTick is how often Run looks for a raise, a confirmation due, or
// the bucket coming back.
const fleetTick = time.Second

// step rejoins the fleet if it was offline, applies the pending throttles
// and, on a tick, raises and confirms the state.
func (f *Fleet) step(ctx context.Context, now time.Time, tick bool) {
	if !f.Online() {
		if !tick || f.reconnect(ctx) != nil {
			return
		}
		f.rejoin()
	}
	f.mu.Lock()
	r, has := f.pending, f.hasPending
	f.hasPending = false
	lim := f.lim
	f.mu.Unlock()
	if has {
		acc := f.accepted(lim)
		err := f.update(ctx, func(s fleet.State) (fleet.State, bool) {
			ns, changed, _ := f.rules.Throttle(s, r, acc)
			return ns, changed
		}, func(before, after fleet.State) {
			if after.LastCut.After(before.LastCut) || !before.Throttled && after.Throttled {
				f.set.metrics.fleetCut()
				f.set.log.Info("cluster: fleet rate cut", "from", before.Rate, "to", after.Rate)
			}
		})
		if err != nil {
			f.requeue(r)
			return
		}
	}
	if !tick {
		return
	}
	if f.replacing() && f.update(ctx, func(s fleet.State) (fleet.State, bool) { return s, f.replacing() }) != nil {
		return
	}
	if lim == nil {
		return
	}
	v := fleet.View{LastWait: f.lastWait(lim), Sent: lim.Sent(), Accepted: f.accepted(lim), Delay: f.Delay()}
	if f.update(ctx, func(s fleet.State) (fleet.State, bool) { return f.rules.Raise(s, now, v) }) != nil {
		return
	}
	_ = f.update(ctx, func(s fleet.State) (fleet.State, bool) { return f.rules.Touch(s, now) })
}

// requeue puts back a throttle that could not be applied.
func (f *Fleet) requeue(r fleet.Report) {
	f.mu.Lock()
	has := f.hasPending
	f.mu.Unlock()
	if !has {
		f.mu.Lock()
		f.pending, f.hasPending = r, true
		f.mu.Unlock()
		return
	}
	f.Report(r)
}

// lastWait is the latest time any worker's requests waited: this one's,
// and the others' from their heartbeats.
func (f *Fleet) lastWait(lim Follower) time.Time {
	w := lim.LastWait()
	if f.m != nil {
		for _, v := range f.m.Members() {
			w = latest(w, v.Waited)
		}
	}
	return w
}

// accepted is the units the API accepted from the whole fleet in the last
// minute: this worker's count now, and the others' from their heartbeats
// (each as of its last heartbeat). 0 when this worker has no limiter yet.
func (f *Fleet) accepted(lim Follower) float64 {
	if lim == nil {
		return 0
	}
	sum := lim.AcceptedUnits()
	if f.m != nil {
		own := f.m.Key()
		for _, v := range f.m.Members() {
			if v.Key != own {
				sum += v.Accepted
			}
		}
	}
	return sum
}

// update applies fn to the state and writes the result with
// compare-and-set on the revision it was read at; when another worker
// wrote first, it reads the state again and applies fn again, so that each
// decision is taken on the latest state exactly once. An error other than
// a conflict takes the worker offline.
// done, if given, is called with the state before and after a successful
// write.
func (f *Fleet) update(ctx context.Context, fn func(fleet.State) (fleet.State, bool), done ...func(before, after fleet.State)) error {
	for range maxConflicts {
		f.mu.Lock()
		s, rev := f.state, f.rev
		f.mu.Unlock()
		ns, changed := fn(s)
		if !changed {
			return nil
		}
		data, err := json.Marshal(ns)
		if err != nil {
			return fmt.Errorf("cluster: fleet state: %w", err)
		}
		octx, cancel := context.WithTimeout(ctx, opTimeout(f.cfg.Refresh))
		sent := time.Now()
		kv, _ := f.bucket()
		if rev == 0 {
			rev, err = kv.Create(octx, fleetKey, data)
		} else {
			rev, err = kv.Update(octx, fleetKey, data, rev)
		}
		took := time.Since(sent)
		cancel()
		if err == nil {
			f.mu.Lock()
			f.delay = took
			f.mu.Unlock()
			f.apply(ns, rev)
			for _, d := range done {
				d(s, ns)
			}
			return nil
		}
		if !isConflict(err) {
			f.offline(err)
			return err
		}
		if err := f.reload(ctx); err != nil {
			return err
		}
	}
	return fmt.Errorf("cluster: fleet state: still changed by others after %d attempts", maxConflicts)
}

// maxConflicts bounds the compare-and-set attempts of one decision.
const maxConflicts = 64

func opTimeout(refresh time.Duration) time.Duration { return max(refresh/2, 100*time.Millisecond) }

func isConflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// reload reads the state from the bucket. An absent key leaves the state
// as it is, at revision 0, so that the next write creates it.
func (f *Fleet) reload(ctx context.Context) error {
	octx, cancel := context.WithTimeout(ctx, opTimeout(f.cfg.Refresh))
	defer cancel()
	kv, _ := f.bucket()
	e, err := kv.Get(octx, fleetKey)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound), errors.Is(err, jetstream.ErrKeyDeleted):
		f.mu.Lock()
		f.rev, f.replace = 0, true
		f.mu.Unlock()
		return nil
	case err != nil:
		f.offline(err)
		return fmt.Errorf("cluster: fleet state: %w", err)
	}
	f.observe(e.Value(), e.Revision(), true)
	return nil
}

// observe takes a state read (force) or watched at revision rev, if it is
// newer than the one held or read. A state that breaks a rule
// (checkFleetState) is taken as corrected, and one that cannot be read
// (not a JSON object: garbage, null) leaves the state as it is; either is
// replaced at the next step.
func (f *Fleet) observe(data []byte, rev uint64, force bool) {
	now := f.clock()
	s, err := decodeFleetState(data)
	accepted := f.accepted(f.follower())
	f.mu.Lock()
	if rev <= f.rev && !force {
		f.mu.Unlock()
		return
	}
	var ps []problem
	if err != nil {
		ps = []problem{{"state", "no fleet state: " + err.Error()}}
	} else {
		stored := s.PausedUntil
		s, ps = checkFleetState(s, reading{now: now, cfg: f.cfg.Limiter, accepted: accepted, held: f.state.Rate})
		f.state = s
		f.badPause = time.Time{}
		if !stored.Equal(s.PausedUntil) {
			f.badPause = stored
		}
		f.set.metrics.setFleet(s.Rate, f.online)
		if f.online && f.lim != nil {
			f.followLocked()
		}
	}
	f.rev, f.replace = rev, len(ps) > 0
	f.mu.Unlock()
	f.input.report("fleet", FleetBucket(f.cfg.Bucket)+"/"+fleetKey, ps, "replaced at the next write")
}

// follower returns the limiter that follows the fleet (nil before Run).
func (f *Fleet) follower() Follower {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lim
}

// apply makes s, written by this worker at revision rev, the state, if rev
// is newer, and has the limiter follow it while online.
func (f *Fleet) apply(s fleet.State, rev uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if rev <= f.rev {
		return
	}
	f.state, f.rev = s, rev
	f.replace, f.badPause = false, time.Time{}
	f.set.metrics.setFleet(s.Rate, f.online)
	if f.online && f.lim != nil {
		f.followLocked()
	}
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
