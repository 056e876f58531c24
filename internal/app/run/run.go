// Package run wires one sluice worker as `sluice run` runs it: the source,
// the limiter and its share of the budget, the target, the outputs, the
// worker, tracing and the runtime endpoints. The command layer parses
// flags into a config.Config and calls Worker; the demo calls it once per
// worker.
package run

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/sync/errgroup"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sinks/httpapi"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

// Options are what a run takes besides its config.
type Options struct {
	// Log is the process logger; nil discards.
	Log *slog.Logger
	// Registry receives the worker's metrics; nil means a new one.
	Registry *prometheus.Registry
	// UI serves the live page at /ui/ on metrics.listen (`run --ui`).
	UI bool
	// UIListen serves the live page alone on this address instead
	// (`run --ui-listen`); it implies UI.
	UIListen string
	// Version is the version of sluice, for sluice_build_info, the ops
	// index and the tracing resource.
	Version string
	// Started, when set, is called once the worker is wired, before it
	// runs, with a Probe that reads its state.
	Started func(Probe)
	// ExitWhenEmpty ends the run, with no error, once the queue is empty
	// and nothing is in flight (`run --exit-when-empty`,
	// worker.Config.ExitWhenEmpty).
	ExitWhenEmpty bool
}

// Probe reads a running worker's state, for the demo and the live page.
// Its methods are safe for concurrent use.
type Probe struct {
	lim *limiter.Limiter
	w   *worker.Worker
}

// Limiter returns a snapshot of the worker's limiter.
func (p Probe) Limiter() limiter.Stats { return p.lim.Stats() }

// Worker returns a snapshot of the worker's counts.
func (p Probe) Worker() worker.Stats { return p.w.Stats() }

// Worker runs one worker as cfg says until ctx is done and every job it
// held is settled. cfg is checked first, as `config validate` checks it,
// before anything is opened; then metrics.listen (and --ui-listen) are
// bound, before the source is opened, so a port in use stops the run
// before it says it runs or pulls a job. A ctx that ends while the worker
// starts is a stop, not a failure: Worker returns nil.
func Worker(ctx context.Context, cfg config.Config, o Options) error {
	err := startWorker(ctx, cfg, o)
	if err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil // stopped while it was opening the source or the outputs
	}
	return err
}

func startWorker(ctx context.Context, cfg config.Config, o Options) error {
	if err := cfg.Check(true); err != nil {
		return err
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Registry == nil {
		o.Registry = prometheus.NewRegistry()
	}
	o.UI = o.UI || o.UIListen != ""
	log := o.Log
	ops := opsConfig{Metrics: cfg.Metrics, ui: o.UI, uiListen: o.UIListen, version: o.Version}
	lns, err := bindOps(ctx, ops, log)
	if err != nil || ctx.Err() != nil {
		return err // nil when stopped before it started
	}
	defer lns.close() // ServeHTTP closes them too; a second Close is harmless
	src, js, err := openRunSource(ctx, cfg.Source, log)
	if err != nil {
		return err
	}
	defer src.Close()
	var conn jetstream.JetStream
	if js != nil {
		conn = js.JetStream()
	}
	share, err := joinShare(ctx, cfg, conn, o.Registry, log) // nil: static, nothing to remember
	if err != nil {
		return err
	}
	defer share.close()
	lim, err := newLimiter(cfg.Limiter.Config, share, o.Registry, log)
	if err != nil {
		return err
	}
	runShare, err := share.start(ctx, lim, log)
	if err != nil {
		return err
	}
	hc, err := cfg.HTTPConfig()
	if err != nil {
		return err
	}
	sink, err := httpapi.New(hc, httpapi.WithLogger(log))
	if err != nil {
		return err
	}
	defer sink.Close()
	outs, err := openOutputs(ctx, cfg, js)
	if err != nil {
		return err
	}
	defer outs.close()
	deps := worker.Deps{Source: src, Target: sink, Limiter: lim, Log: log,
		Results: outs.results, DeadLetters: outs.deadLetters}
	w, stopTracing, err := newWorker(ctx, cfg, deps, o)
	if err != nil {
		return err
	}
	defer stopTracing()
	if o.Started != nil {
		o.Started(Probe{lim: lim, w: w})
	}
	return serve(ctx, cfg, o, running{src: src, lim: lim, w: w, share: share, runShare: runShare, target: cfg.ShownTarget(hc),
		ops: ops, lns: lns})
}

// running is what serve runs beside the worker.
type running struct {
	src      sources.Source
	lim      *limiter.Limiter
	w        *worker.Worker
	share    *shareRun
	runShare func(context.Context) error
	target   string // the target as the logs may show it
	ops      opsConfig
	lns      opsListeners // bound before anything was opened
}

// serve runs the worker, its share of the budget, the saturation gauge and
// the runtime endpoints until ctx is done or one of them fails.
func serve(ctx context.Context, cfg config.Config, o Options, r running) error {
	log := o.Log
	sat := limiter.NewSaturation(0)
	if err := RegisterOpsMetrics(o.Registry, sat, r.src, o.Version, log); err != nil {
		return err
	}
	wcfg := r.w.Config()
	log.Info("sluice running", "source", cfg.Source.Kind, "target", r.target,
		"max_in_flight", wcfg.MaxInFlight, "units_per_minute", cfg.Limiter.InitialUnitsPerMinute,
		"limiter", !cfg.Limiter.Disabled, "worker_id", wcfg.ID)
	probe := Probe{lim: r.lim, w: r.w}
	ops := withUI(r.ops, probe, r.src, r.share, wcfg.ID)
	ops.state = func() WorkerState { return workerState(probe, wcfg.ID) }
	// The worker may end first (ExitWhenEmpty): the rest stops with it.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return r.runShare(gctx) })
	g.Go(func() error {
		sat.Poll(gctx, time.Second, func() int { return r.lim.Stats().Queue })
		return nil
	})
	g.Go(func() error { return serveUI(gctx, r.lns.ui, ops, log) })
	g.Go(func() error {
		ready := allReady(sourceReady(r.src), targetResolves(cfg.Target.BaseURL, nil),
			targetAnswers(func() worker.TargetHealth { return r.w.Stats().Target }, cfg.Ops.TargetUnreadyAfter, time.Now),
			r.share.fleetReady)
		return serveOps(gctx, r.lns.ops, ops, o.Registry, ready, log)
	})
	g.Go(func() error {
		err := r.w.Run(gctx)
		log.Info("worker stopped")
		cancel()
		return err
	})
	return g.Wait()
}

// openRunSource opens the configured source; for JetStream it also returns
// it with its concrete type: its connection is the one that the outputs
// and the cluster use too (nil for another source).
func openRunSource(ctx context.Context, c config.Source, log *slog.Logger) (sources.Source, *natsjs.Source, error) {
	if c.Kind != config.SourceJetStream {
		src, err := OpenSource(ctx, c, log)
		return src, nil, err
	}
	src, err := OpenJetStream(ctx, c.JetStream, log)
	if err != nil {
		return nil, nil, err
	}
	return src, src, nil
}

// newLimiter builds the limiter where the share starts it, with its
// metrics registered on reg.
func newLimiter(lcfg limiter.Config, share *shareRun, reg prometheus.Registerer, log *slog.Logger) (*limiter.Limiter, error) {
	lm := limiter.NewMetrics()
	if err := reg.Register(lm); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	opts := append(share.limiterOptions(), limiter.WithMetrics(lm), limiter.WithLogger(log))
	lim, err := limiter.New(share.limiterConfig(lcfg), opts...)
	if err != nil {
		return nil, err
	}
	if err := reg.Register(newPaceCollector(lim)); err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	return lim, nil
}

// newWorker builds the worker with its metrics and, when configured, its
// tracer; the returned function exports the spans still batched.
func newWorker(ctx context.Context, cfg config.Config, deps worker.Deps, o Options) (*worker.Worker, func(), error) {
	wm := worker.NewMetrics()
	if err := o.Registry.Register(wm); err != nil {
		return nil, nil, fmt.Errorf("metrics: %w", err)
	}
	deps.Metrics = wm
	stop := func() {}
	tp, err := tracing.New(ctx, cfg.Observability, o.Version)
	if err != nil {
		return nil, nil, err
	}
	if tp != nil {
		stop = func() { shutdownTracing(ctx, tp, o.Log) }
		deps.Tracer = tracing.Tracer(tp)
	}
	ackWait := worker.DefaultAckWait
	if aw, ok := deps.Source.(sources.AckWaiter); ok {
		ackWait = aw.AckWait()
	}
	wcfg := cfg.WorkerConfig(ackWait)
	wcfg.ExitWhenEmpty = o.ExitWhenEmpty
	w, err := worker.New(wcfg, deps)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return w, stop, nil
}

// shutdownTracing exports the spans still batched, for up to 10s.
func shutdownTracing(ctx context.Context, tp *sdktrace.TracerProvider, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(sctx); err != nil {
		log.Warn("tracing: the last spans were not exported", "err", err)
	}
}

var (
	_ worker.Target  = (*httpapi.Sink)(nil)
	_ worker.Checker = (*httpapi.Sink)(nil)
)
