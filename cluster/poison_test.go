package cluster

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sluicehq/sluice/internal/testkit"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// fleetBucketKV opens the fleet bucket of cfg on a connection of its own,
// as an operator (or an attacker) with the nats CLI would.
func fleetBucketKV(t *testing.T, url string, cfg FleetConfig) jetstream.KeyValue {
	t.Helper()
	kv, err := openFleetBucket(t.Context(), connect(t, url), FleetBucket(cfg.Bucket))
	if err != nil {
		t.Fatal(err)
	}
	return kv
}

func putState(t *testing.T, kv jetstream.KeyValue, s fleet.State) uint64 {
	t.Helper()
	data, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return putRaw(t, kv, string(data))
}

func putRaw(t *testing.T, kv jetstream.KeyValue, data string) uint64 {
	t.Helper()
	rev, err := kv.Put(t.Context(), fleetKey, []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

func storedState(t *testing.T, kv jetstream.KeyValue) fleet.State {
	t.Helper()
	e, err := kv.Get(t.Context(), fleetKey)
	if err != nil {
		t.Fatal(err)
	}
	s, err := decodeFleetState(e.Value())
	if err != nil {
		t.Fatalf("stored state %q: %v", e.Value(), err)
	}
	return s
}

// A pause a day ahead in the fleet state, read at the start or through the
// watch, pauses nobody: it is logged at warn once, counted, reported by
// Ready until it is replaced, and replaced at the next write (issue 23,
// defect 1).
func TestFleetFarFuturePause(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	lcfg := limiter.DefaultConfig()
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: lcfg}
	kv := fleetBucketKV(t, url, cfg)
	now := time.Now()
	putState(t, kv, fleet.State{Adapt: control.Adapt{Rate: 600, LastCut: now, IncClock: now, CutTime: now, WMax: 600},
		PausedUntil: now.Add(24 * time.Hour), Seen: now})
	var logs testkit.SyncBuffer
	met := NewMetrics()
	f := openFleet(t, url, cfg, nil, WithMetrics(met), WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	if p := f.State().PausedUntil; !p.IsZero() {
		t.Fatalf("a worker starting on the poisoned state is paused until %v", p)
	}
	if p := storedState(t, kv).PausedUntil; !p.IsZero() {
		t.Fatalf("the starting worker left the pause in the bucket: %v", p)
	}
	// The same again, through the watch of a running worker.
	lim := newCoreLimiter(t, lcfg, now)
	f.attach(lim)
	poison := fleet.State{Adapt: f.State().Adapt, PausedUntil: now.Add(24 * time.Hour), Seen: now}
	data, _ := json.Marshal(poison)
	rev := putRaw(t, kv, string(data))
	f.observe(data, rev, false)
	if p := f.State().PausedUntil; !p.IsZero() {
		t.Fatalf("the running worker follows a pause until %v", p)
	}
	if err := f.Ready(now); err == nil || !strings.Contains(err.Error(), "max_pause") {
		t.Errorf("Ready with the pause still stored: %v, want an error naming max_pause", err)
	}
	lim.mu.Lock()
	granted := lim.core.Acquire(now.Add(time.Second), 1).Status == limiter.Granted
	lim.mu.Unlock()
	if !granted {
		t.Error("the worker's limiter grants nothing: it follows the pause")
	}
	f.step(t.Context(), now.Add(time.Second), true) // the next write replaces it
	if p := storedState(t, kv).PausedUntil; !p.IsZero() {
		t.Errorf("the pause is still stored after the next write: %v", p)
	}
	if err := f.Ready(now); err != nil {
		t.Errorf("Ready after the state was replaced: %v", err)
	}
	n := 0
	for _, l := range strings.Split(logs.String(), "\n") {
		if strings.Contains(l, "level=WARN") && strings.Contains(l, "field=paused_until") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("%d warnings of the invalid pause, want 1 for two reads:\n%s", n, logs.String())
	}
	if got := testutil.ToFloat64(met.invalid.WithLabelValues("fleet", "paused_until")); got != 2 {
		t.Errorf("sluice_cluster_invalid_state_total{fleet,paused_until} = %v, want 2", got)
	}
}

// A worker whose clock runs a day fast writes seen a day ahead; a throttle
// that another worker sees then pauses the fleet no longer than max_pause
// from its own clock (issue 23, defect 1).
func TestFleetFastClockSeen(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	lcfg := limiter.DefaultConfig()
	lcfg.SlowStart = false
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: lcfg}
	kv := fleetBucketKV(t, url, cfg)
	f := openFleet(t, url, cfg, nil)
	now := time.Now()
	f.attach(newCoreLimiter(t, lcfg, now))
	fast := f.State()
	fast.Seen = now.Add(24 * time.Hour)
	data, _ := json.Marshal(fast)
	f.observe(data, putRaw(t, kv, string(data)), false)
	f.Report(wholeReport(now, 10*time.Second))
	f.step(t.Context(), now, false)
	got := storedState(t, kv)
	if end := now.Add(lcfg.MaxPause + maxSkew); got.PausedUntil.After(end) {
		t.Fatalf("a 429 with Retry-After 10s paused the fleet until %v, %v ahead (max_pause %v)",
			got.PausedUntil.Format(time.RFC3339), got.PausedUntil.Sub(now).Round(time.Second), lcfg.MaxPause)
	}
	if got.Seen.After(now.Add(maxSkew)) {
		t.Errorf("seen stays %v ahead", got.Seen.Sub(now).Round(time.Second))
	}
}

// A remembered rate far above max, or far above anything the fleet was
// measured to accept, is clamped when it is resumed, and the clamp is
// written; a law resumes at 0.98 of what the API was seen to accept; a
// literal null is no state (issue 23, defect 3).
func TestFleetRememberedRateClamped(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	lcfg := limiter.DefaultConfig() // max 10,000,000, initial 600
	now := time.Now()
	for _, c := range []struct {
		name   string
		stored string
		want   float64
	}{
		{"1e308", `{"rate":1e308,"throttled":true,"seen":"` + now.Format(time.RFC3339Nano) + `"}`, rateFactor * 600},
		{"1e9", `{"rate":1e9,"throttled":true,"seen":"` + now.Format(time.RFC3339Nano) + `"}`, rateFactor * 600},
		{"1e9 with an estimate", `{"rate":1e9,"throttled":true,"law":{"rate":1e9,"bound":50000,"ceil":50000,"window_from":"refusal"},"seen":"` +
			now.Format(time.RFC3339Nano) + `"}`, 0.98 * 50000},
		{"5000 remembered", `{"rate":5000,"throttled":true,"seen":"` + now.Format(time.RFC3339Nano) + `"}`, 5000},
		{"null", `null`, 600},
		{"garbage", `{"rate":`, 600},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: lcfg}
			kv := fleetBucketKV(t, url, cfg)
			putRaw(t, kv, c.stored)
			f := openFleet(t, url, cfg, nil)
			if got := f.State().Rate; got != c.want {
				t.Errorf("resumed at %v, want %v", got, c.want)
			}
			if got := storedState(t, kv).Rate; got != c.want {
				t.Errorf("stored after the start: %v, want %v", got, c.want)
			}
		})
	}
	// A running worker takes null through the watch as no state: it
	// keeps the rate it follows.
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: lcfg}
	kv := fleetBucketKV(t, url, cfg)
	f := openFleet(t, url, cfg, nil)
	f.attach(newCoreLimiter(t, lcfg, now))
	f.observe([]byte("null"), putRaw(t, kv, "null"), false)
	if got := f.State().Rate; got != 600 {
		t.Errorf("after a null in the watch the fleet rate is %v, want 600 kept", got)
	}
	f.step(t.Context(), now, true)
	if got := storedState(t, kv).Rate; got != 600 {
		t.Errorf("stored after the next write: %v, want 600", got)
	}
}

// flakyKV is a fleet bucket whose watches the test can close, as the
// client does 20 s after the bucket is deleted.
type flakyKV struct {
	jetstream.KeyValue
	watches chan *closingWatcher
}

func (k *flakyKV) Watch(ctx context.Context, keys string, opts ...jetstream.WatchOpt) (jetstream.KeyWatcher, error) {
	w, err := k.KeyValue.Watch(ctx, keys, opts...)
	if err != nil {
		return nil, err
	}
	cw := &closingWatcher{KeyWatcher: w, ch: make(chan jetstream.KeyValueEntry)}
	go func() {
		defer close(cw.ch)
		for e := range w.Updates() {
			cw.ch <- e
		}
	}()
	k.watches <- cw
	return cw, nil
}

type closingWatcher struct {
	jetstream.KeyWatcher
	ch chan jetstream.KeyValueEntry
}

func (w *closingWatcher) Updates() <-chan jetstream.KeyValueEntry { return w.ch }

// A deleted fleet bucket stops no worker: its writes fail, it runs on the
// local rules and says so, it creates the bucket again, writes the state
// it had, and follows it (issue 23, defect 4).
func TestFleetBucketDeleted(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	lcfg := limiter.DefaultConfig()
	lcfg.SlowStart = false
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: lcfg, Refresh: time.Second}
	var logs testkit.SyncBuffer
	f := openFleet(t, url, cfg, nil, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	now := time.Now()
	lim := newCoreLimiter(t, lcfg, now)
	f.attach(lim)
	f.Report(wholeReport(now, 0))
	f.step(t.Context(), now, false) // a cut: 600 -> 420
	if err := connect(t, url).DeleteKeyValue(t.Context(), FleetBucket(cfg.Bucket)); err != nil {
		t.Fatal(err)
	}
	f.step(t.Context(), now.Add(2*time.Second), true) // the confirmation fails
	if f.Online() || lim.leads != 1 {
		t.Fatalf("online %v after the bucket was deleted, leads %d; want the local rules", f.Online(), lim.leads)
	}
	f.step(t.Context(), now.Add(3*time.Second), true) // the next tick creates it again
	if !f.Online() {
		t.Fatalf("still offline a tick after the bucket was deleted; log:\n%s", logs.String())
	}
	kv := fleetBucketKV(t, url, cfg)
	if got := storedState(t, kv).Rate; got != 420 {
		t.Errorf("the bucket created again holds rate %v, want the fleet's 420", got)
	}
	for _, want := range []string{"cluster: fleet state unreachable", "cluster: fleet bucket created again"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log without %q:\n%s", want, logs.String())
		}
	}
}

// Run outlives the end of its watch (the client ends it 20 s after the
// bucket is deleted): it watches again and keeps the worker running.
func TestFleetRunWatchEnds(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	cfg := FleetConfig{Bucket: uniqueBucket(t), Limiter: limiter.DefaultConfig()}
	f := openFleet(t, url, cfg, nil)
	fk := &flakyKV{KeyValue: f.kv, watches: make(chan *closingWatcher, 4)}
	f.kv = fk
	lim := newCoreLimiter(t, limiter.DefaultConfig(), time.Now())
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- f.Run(ctx, lim) }()
	w := <-fk.watches
	_ = w.KeyWatcher.Stop() // the server's end of the watch goes: its updates close
	select {
	case <-fk.watches: // watched again
	case err := <-done:
		t.Fatalf("Run returned %v when its watch ended", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A member whose clock runs a day fast: every reader measures its skew
// from its heartbeat (Members, and List for sluice status), and ignores
// the wait it says is a day ahead, which would let the fleet raise on
// every tick.
func TestMemberClockSkew(t *testing.T) {
	srv := startServer(t)
	url := srv.ClientURL()
	cfg := Config{Bucket: uniqueBucket(t), TTL: 3 * time.Second}
	met := NewMetrics()
	m, err := Join(t.Context(), connect(t, url), cfg, WithMetrics(met))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, m.Run)
	js := connect(t, url)
	kv, err := js.KeyValue(t.Context(), cfg.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	ahead := time.Now().Add(24 * time.Hour)
	data, _ := json.Marshal(Member{ID: "fast", Started: ahead, Refreshed: ahead, Rate: 300, Share: 0.5, Waited: ahead})
	if _, err := kv.Put(t.Context(), memberPrefix+"fast-0001", data); err != nil {
		t.Fatal(err)
	}
	skewOK := func(v Member) bool { return v.Skew > 24*time.Hour-maxSkew && v.Skew <= 24*time.Hour }
	var fast Member
	testkit.Eventually(t, "the fast member seen", func() bool {
		for _, v := range m.Members() {
			if v.ID == "fast" {
				fast = v
				return true
			}
		}
		return false
	})
	if !skewOK(fast) || !fast.Waited.IsZero() {
		t.Errorf("the fast member as seen: skew %v, waited %v; want about 24h and no wait", fast.Skew, fast.Waited)
	}
	if got := testutil.ToFloat64(met.invalid.WithLabelValues("member", "waited")); got != 1 {
		t.Errorf("sluice_cluster_invalid_state_total{member,waited} = %v, want 1", got)
	}
	list, err := List(t.Context(), js, cfg.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range list {
		switch {
		case v.ID == "fast" && !skewOK(v):
			t.Errorf("List: the fast member's skew %v, want about 24h", v.Skew)
		case v.ID != "fast" && (v.Skew > time.Second || v.Skew < -time.Second):
			t.Errorf("List: %s on this machine's clock has skew %v", v.ID, v.Skew)
		}
	}
}
