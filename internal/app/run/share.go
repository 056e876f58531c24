package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources/natsjs"
)

// shareRun is the live share of a running worker: its membership, its
// leases in leases mode, the fleet controller they run on, and the limiter
// they feed; or, for a worker alone on an embedded server, the memory of
// its rate. A nil *shareRun is static mode with nothing to remember: every
// method does nothing.
type shareRun struct {
	mode  string
	m     *cluster.Membership // members and leases
	fleet *cluster.Fleet      // members and leases
	mem   *cluster.Memory     // static mode on the embedded server
	nc    *nats.Conn          // a connection of our own (nats_url), closed by close
	opts  []cluster.Option
}

// shareCoordination returns the JetStream context to coordinate through: a
// connection of its own to limiter.share.nats_url, or js, the JetStream
// source's connection (nil for another source).
func shareCoordination(s config.Share, js jetstream.JetStream) (jetstream.JetStream, *nats.Conn, error) {
	if s.NATSURL != "" {
		nc, err := nats.Connect(s.NATSURL, nats.Name("sluice-share"), nats.MaxReconnects(-1))
		if err != nil {
			return nil, nil, fmt.Errorf("limiter.share.nats_url: connect to %s: %w", natsjs.RedactURL(s.NATSURL), natsjs.HideURL(err))
		}
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			return nil, nil, fmt.Errorf("limiter.share.nats_url: %w", err)
		}
		return js, nc, nil
	}
	if js == nil {
		return nil, nil, errors.New("limiter.share.nats_url: required unless source.kind is jetstream")
	}
	return js, nil, nil
}

// joinShare joins the bucket for a worker about to start, in members or
// leases mode, and opens the fleet state; in static mode on the embedded
// server with one instance, it opens the memory of the rate; else nil.
//
// js is the JetStream source's connection, nil for another source.
func joinShare(ctx context.Context, cfg config.Config, js jetstream.JetStream, reg prometheus.Registerer, log *slog.Logger) (*shareRun, error) {
	lcfg := cfg.Limiter.Config
	sc := cfg.Limiter.Share
	fcfg := cluster.FleetConfig{Bucket: sc.BucketName(cfg.Target.BaseURL), Limiter: lcfg,
		Remember: time.Duration(sc.Remember), Refresh: time.Duration(sc.TTL) / 3}
	if fcfg.Remember == 0 {
		fcfg.Remember = -1 // remember: 0s remembers nothing
	}
	if sc.Mode == config.ShareStatic || sc.Mode == "" {
		return rememberAlone(ctx, cfg, fcfg, js, log)
	}
	js, nc, err := shareCoordination(sc, js)
	if err != nil {
		return nil, err
	}
	met := cluster.NewMetrics()
	if err := reg.Register(met); err != nil {
		if nc != nil {
			nc.Close()
		}
		return nil, fmt.Errorf("metrics: %w", err)
	}
	r := &shareRun{mode: sc.Mode, nc: nc}
	r.opts = []cluster.Option{cluster.WithLogger(log), cluster.WithMetrics(met)}
	m, err := cluster.Join(ctx, js, sc.Lib(cfg.Target.BaseURL, cfg.Worker.ID), r.opts...)
	if err != nil {
		r.close()
		return nil, fmt.Errorf("limiter.share: %w", err)
	}
	r.m = m
	if r.fleet, err = cluster.OpenFleet(ctx, js, fcfg, m, r.opts...); err != nil {
		r.close()
		return nil, fmt.Errorf("limiter.share: %w", err)
	}
	return r, nil
}

// rememberAlone opens the memory of the rate for a worker alone (one
// instance) on the embedded JetStream server; nil otherwise.
func rememberAlone(ctx context.Context, cfg config.Config, fcfg cluster.FleetConfig, js jetstream.JetStream, log *slog.Logger) (*shareRun, error) {
	if js == nil || cfg.Source.Kind != config.SourceJetStream || cfg.Source.JetStream.URL != natsjs.Embedded || cfg.Limiter.Instances != 1 {
		return nil, nil
	}
	mem, err := cluster.OpenMemory(ctx, js, fcfg, cluster.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("limiter.share.remember: %w", err)
	}
	return &shareRun{mode: config.ShareStatic, mem: mem}, nil
}

// limiterConfig starts the limiter where the fleet is (its remembered or
// current rate, within min and max), and in members mode at 1/N of it.
func (r *shareRun) limiterConfig(c limiter.Config) limiter.Config {
	rate, ok := 0.0, false
	switch {
	case r == nil:
		return c
	case r.fleet != nil:
		rate, ok = r.fleet.State().Rate, true
	case r.mem != nil:
		rate, ok = r.mem.Remembered(time.Now())
	}
	if ok && !math.IsNaN(rate) {
		c.InitialUnitsPerMinute = min(max(rate, c.MinUnitsPerMinute), c.MaxUnitsPerMinute)
	}
	if r.mode == config.ShareMembers {
		c.Instances = r.m.Count()
	}
	return c
}

// limiterOptions are the options the fleet needs of the limiter: its
// throttles are reported to the fleet.
func (r *shareRun) limiterOptions() []limiter.Option {
	if r == nil || r.fleet == nil {
		return nil
	}
	return []limiter.Option{limiter.WithThrottleHook(r.fleet.Report)}
}

// start hands the limiter to the membership and, in leases mode, acquires
// the first leases; the returned function runs the share, the fleet
// controller (or the memory of the rate) until ctx ends.
func (r *shareRun) start(ctx context.Context, lim *limiter.Limiter, log *slog.Logger) (func(context.Context) error, error) {
	if r == nil {
		return func(context.Context) error { return nil }, nil
	}
	if r.mem != nil {
		return func(ctx context.Context) error { return r.mem.Run(ctx, lim.Adapt) }, nil
	}
	runs := []func(context.Context) error{r.m.Run, func(ctx context.Context) error { return r.fleet.Run(ctx, lim) }}
	if err := r.m.Drive(ctx, lim, r.mode == config.ShareMembers); err != nil {
		return nil, fmt.Errorf("limiter.share: %w", err)
	}
	if r.mode == config.ShareLeases {
		l, err := cluster.NewLeases(ctx, r.m, append(r.opts, cluster.WithLimiter(lim))...)
		if err != nil {
			return nil, fmt.Errorf("limiter.share: %w", err)
		}
		runs = append(runs, l.Run)
	}
	return func(ctx context.Context) error {
		g, gctx := errgroup.WithContext(ctx)
		for _, run := range runs {
			g.Go(func() error { return run(gctx) })
		}
		return g.Wait()
	}, nil
}

// fleetReady is a readiness check: not ready while the fleet state holds
// a pause that ends more than max_pause from now (cluster.Fleet.Ready).
func (r *shareRun) fleetReady(context.Context) error {
	if r == nil || r.fleet == nil {
		return nil
	}
	return r.fleet.Ready(time.Now())
}

// close closes the connection of our own, if any.
func (r *shareRun) close() {
	if r != nil && r.nc != nil {
		r.nc.Drain()
	}
}

// MemberList is what sluice status shows of limiter.share: the live
// members of the budget's bucket.
type MemberList struct {
	Mode       string           `json:"mode"`
	Partitions int              `json:"partitions,omitempty"` // leases mode
	Members    []cluster.Member `json:"members"`              // empty when the bucket does not exist yet
	// The fleet's pace (FleetPace): the sum of the members' rates, and of
	// the units the API accepted from each in the minute before its
	// heartbeat.
	Sending  float64 `json:"sending_units_per_minute"`
	Accepted float64 `json:"accepted_units_per_minute"`
}

// ListMembers reads the live members of the budget that cfg describes; nil
// when limiter.share.mode is static.
func ListMembers(ctx context.Context, cfg config.Config, log *slog.Logger) (*MemberList, error) {
	src := cfg.Source
	sc := cfg.Limiter.Share
	if sc.Mode == config.ShareStatic || sc.Mode == "" {
		return nil, nil
	}
	var js jetstream.JetStream
	if sc.NATSURL != "" {
		var nc *nats.Conn
		var err error
		if js, nc, err = shareCoordination(sc, nil); err != nil {
			return nil, err
		}
		defer nc.Close()
	} else {
		if src.Kind != config.SourceJetStream {
			return nil, errors.New("limiter.share.nats_url: required unless source.kind is jetstream")
		}
		s, err := OpenJetStream(ctx, src.JetStream, log)
		if err != nil {
			return nil, err
		}
		defer s.Close()
		js = s.JetStream()
	}
	ml := &MemberList{Mode: sc.Mode, Members: []cluster.Member{}}
	if sc.Mode == config.ShareLeases {
		ml.Partitions = sc.Partitions
	}
	members, err := cluster.List(ctx, js, sc.BucketName(cfg.Target.BaseURL))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return ml, nil
	}
	if err != nil {
		return nil, fmt.Errorf("status: %w", err)
	}
	ml.Members = members
	f := FleetPace(members, "", nil)
	ml.Sending, ml.Accepted = f.Sending, f.Accepted
	return ml, nil
}

// Print writes the live members as a table (nothing for nil: static mode).
func (ml *MemberList) Print(w io.Writer) error {
	if ml == nil {
		return nil
	}
	if len(ml.Members) == 0 {
		_, err := fmt.Fprintf(w, "%-24s %10s\n", "members ("+ml.Mode+")", "none")
		return err
	}
	if _, err := fmt.Fprintf(w, "%-24s %10d\n  fleet %s\n", "members ("+ml.Mode+")", len(ml.Members),
		Pace{Sending: ml.Sending, Accepted: ml.Accepted}); err != nil {
		return err
	}
	now := time.Now()
	for _, m := range ml.Members {
		leases := ""
		if ml.Mode == config.ShareLeases {
			leases = fmt.Sprintf("  leases %d/%d", m.Leases, ml.Partitions)
		}
		if _, err := fmt.Fprintf(w, "  %-30s sending %9.1f/min  accepted %9.1f/min  share %6.4f%s  up %s  clock %s\n",
			m.ID, m.Rate, m.Accepted, m.Share, leases, now.Sub(m.Started).Round(time.Second), skew(m.Skew)); err != nil {
			return err
		}
	}
	return nil
}

// skew shows a member's clock skew from the NATS server's: signed, in
// seconds, to the millisecond.
func skew(d time.Duration) string { return fmt.Sprintf("%+.3fs", d.Seconds()) }
