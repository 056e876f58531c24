package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"cloud.google.com/go/pubsub/v2"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"golang.org/x/sync/errgroup"
	"google.golang.org/api/option"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/tracing"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sinks"
	"github.com/sluicehq/sluice/sinks/httpapi"
	"github.com/sluicehq/sluice/sinks/jsonl"
	"github.com/sluicehq/sluice/sinks/natsout"
	"github.com/sluicehq/sluice/sinks/pubsubout"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/sources/gcppubsub"
	"github.com/sluicehq/sluice/sources/natsjs"
	"github.com/sluicehq/sluice/worker"
)

// runFlags are the flags of `sluice run`. Those set on the command line
// replace the config file's values.
type runFlags struct {
	config        string
	set           []string // --set key.path=value
	target        string
	maxInFlight   int
	rate          float64
	instances     int
	natsURL       string
	dataDir       string
	natsPort      int
	logFormat     string
	logLevel      string
	ui            bool // the live page on metrics.listen (ui.go)
	uiListen      string
	metricsListen string
}

func newRunCmd() *cobra.Command {
	var f runFlags
	cmd := &cobra.Command{
		Use:   "run [-c FILE] [--target URL]",
		Short: "Drain the queue into the target API",
		Long: `run pulls jobs from the queue, waits on the adaptive limiter for each job's
units, calls the target API, and acks, redelivers or dead-letters each job.

With -c FILE it runs as the config file says (see 'sluice config example').
Without it, it runs on the default: an embedded NATS JetStream server
storing its data in ./sluice-data, and needs --target. Flags given on the
command line replace the file's values.

SIGINT or SIGTERM stops pulling, lets requests already sent finish for up to
worker.shutdown_timeout, and hands the waiting jobs back to the queue. A
second signal exits at once (unsettled jobs are redelivered after their ack
wait).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := runConfig(cmd, f)
			if err == nil {
				err = checkUI(f.ui, f.uiListen, cfg.Metrics)
			}
			if err != nil {
				return usageError(err)
			}
			log, err := newLogger(cmd.ErrOrStderr(), cfg.Log.Format, cfg.Log.Level)
			if err != nil {
				return usageError(err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			// The announcement of a shutdown by signal; it ends before the
			// command returns, so nothing is logged after it.
			finished := make(chan struct{})
			var announced sync.WaitGroup
			announced.Go(func() {
				select {
				case <-finished:
				case <-ctx.Done():
					// From now on the default action applies: a second
					// signal ends the process at once.
					stop()
					if cmd.Context().Err() == nil || stoppedBySignal(cmd.Context()) {
						log.Info("shutting down; a second signal exits at once")
					}
				}
			})
			err = runWorkerWith(ctx, cfg, f.ui || f.uiListen != "", f.uiListen, prometheus.NewRegistry(), log)
			close(finished)
			announced.Wait()
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.config, "config", "c", "", "config file (default: $SLUICE_CONFIG, else embedded JetStream and the flags below)")
	fl.StringArrayVar(&f.set, "set", nil, "set a config value over the file and the environment, key.path=value (repeatable), e.g. --set worker.max_attempts=6")
	fl.StringVar(&f.target, "target", "", "target API base URL (target.base_url)")
	fl.IntVar(&f.maxInFlight, "max-in-flight", config.DefaultMaxInFlight, "most jobs held at once (worker.max_in_flight)")
	fl.IntVar(&f.maxInFlight, "concurrency", config.DefaultMaxInFlight, "same as --max-in-flight")
	fl.Float64Var(&f.rate, "rate", limiter.DefaultConfig().InitialUnitsPerMinute, "initial rate in units per minute (limiter.initial_units_per_minute)")
	fl.IntVar(&f.instances, "instances", 1, "processes sharing the budget (limiter.instances)")
	fl.StringVar(&f.natsURL, "nats-url", "", `NATS server URL, or "embedded" (source.jetstream.url)`)
	fl.StringVar(&f.dataDir, "data-dir", "", "embedded server data directory (source.jetstream.embedded.store_dir)")
	fl.IntVar(&f.natsPort, "nats-port", 0, "embedded server client port, -1 for a free one (source.jetstream.embedded.port)")
	fl.StringVar(&f.logFormat, "log-format", "", "log format: auto, text or json (log.format)")
	fl.StringVar(&f.logLevel, "log-level", "", "log level: debug, info, warn or error (log.level)")
	fl.BoolVar(&f.ui, "ui", false, "serve a live page of this worker at /ui/ on metrics.listen (docs/ui.md)")
	fl.StringVar(&f.uiListen, "ui-listen", "", "serve the live page at /ui/ on this address instead of metrics.listen, e.g. 127.0.0.1:0 (implies --ui)")
	fl.StringVar(&f.metricsListen, "metrics-listen", "", `address of /metrics, /healthz and /readyz (metrics.listen); "127.0.0.1:0" for a free port, "off" for none`)
	return cmd
}

// runConfig loads the config file (or the defaults) and applies the flags
// set on the command line.
func runConfig(cmd *cobra.Command, f runFlags) (config.Config, error) {
	fl := cmd.Flags()
	f.config = configFile(f.config)
	if f.config == "" && !fl.Changed("target") {
		return config.Config{}, errors.New("run: --target URL is required without -c FILE")
	}
	apply := func(c *config.Config) error {
		set := func(flag, path string, fn func()) {
			if fl.Changed(flag) {
				fn()
				delete(c.Lines, path) // a problem with it is the flag's, not the file's line
			}
		}
		set("target", "target.base_url", func() { c.Target.BaseURL = f.target })
		set("max-in-flight", "worker.max_in_flight", func() { c.Worker.MaxInFlight = f.maxInFlight })
		set("concurrency", "worker.max_in_flight", func() { c.Worker.MaxInFlight = f.maxInFlight })
		set("rate", "limiter.initial_units_per_minute", func() { c.Limiter.InitialUnitsPerMinute = f.rate })
		set("instances", "limiter.instances", func() { c.Limiter.Instances = f.instances })
		set("log-format", "log.format", func() { c.Log.Format = f.logFormat })
		set("log-level", "log.level", func() { c.Log.Level = f.logLevel })
		set("metrics-listen", "metrics.listen", func() { c.Metrics.Listen = f.metricsListen })
		return applySourceFlags(c, fl.Changed("nats-url"), f.natsURL, fl.Changed("data-dir"), f.dataDir, fl.Changed("nats-port"), f.natsPort)
	}
	if f.config == "" {
		return config.Parse(nil, config.Options{Adjust: apply, Set: f.set})
	}
	return config.Load(f.config, config.Options{Adjust: apply, Set: f.set})
}

// runWorker wires the source, limiter, target and outputs into a worker and
// runs it, with the runtime endpoints, until ctx is done and every job it
// held is settled.
func runWorker(ctx context.Context, cfg config.Config, ui bool, reg *prometheus.Registry, log *slog.Logger) error {
	return runWorkerWith(ctx, cfg, ui, "", reg, log)
}

// runWorkerWith is runWorker with the live page on uiListen, alone, when
// it is not empty (`sluice run --ui-listen`).
func runWorkerWith(ctx context.Context, cfg config.Config, ui bool, uiListen string, reg *prometheus.Registry, log *slog.Logger) error {
	if err := cfg.Check(true); err != nil {
		return err // a config built in code, not loaded
	}
	src, err := openSource(ctx, cfg.Source, log)
	if err != nil {
		return err
	}
	defer src.Close()

	lcfg := cfg.Limiter.Config
	share, err := joinShare(ctx, cfg, lcfg, src, reg, log) // limiter.share: nil when static with nothing to remember
	if err != nil {
		return err
	}
	defer share.close()
	lm := limiter.NewMetrics()
	if err := reg.Register(lm); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	lopts := append(share.limiterOptions(), limiter.WithMetrics(lm), limiter.WithLogger(log))
	lim, err := limiter.New(share.limiterConfig(lcfg), lopts...)
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

	results, deadLetters, closeOutputs, err := openOutputs(ctx, cfg, src)
	defer closeOutputs()
	if err != nil {
		return err
	}

	wm := worker.NewMetrics()
	if err := reg.Register(wm); err != nil {
		return fmt.Errorf("metrics: %w", err)
	}
	deps := worker.Deps{Source: src, Target: sink, Limiter: lim, Log: log, Metrics: wm}
	if results != nil {
		deps.Results = results
	}
	if deadLetters != nil {
		deps.DeadLetters = deadLetters
	}
	tp, err := tracing.New(ctx, cfg.Observability, currentVersion())
	if err != nil {
		return err
	}
	if tp != nil {
		defer shutdownTracing(ctx, tp, log)
		deps.Tracer = tracing.Tracer(tp)
	}
	w, err := worker.New(cfg.WorkerConfig(sourceAckWait(src)), deps)
	if err != nil {
		return err
	}
	sat := limiter.NewSaturation(0)
	if err := registerOpsMetrics(reg, sat, src, log); err != nil {
		return err
	}

	ops := withUI(opsConfig{Metrics: cfg.Metrics, ui: ui, uiListen: uiListen}, lim, reg, share, w.Config().ID)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return runShare(gctx) })
	g.Go(func() error {
		sat.Poll(gctx, time.Second, func() int { return lim.Stats().Queue })
		return nil
	})
	g.Go(func() error { return serveUI(gctx, ops, log) })
	g.Go(func() error {
		return serveOps(gctx, ops, reg, allReady(sourceReady(src), targetResolves(cfg.Target.BaseURL, nil)), log)
	})
	g.Go(func() error {
		wcfg := w.Config()
		log.Info("sluice running", "source", cfg.Source.Kind, "target", cfg.ShownTarget(hc),
			"max_in_flight", wcfg.MaxInFlight, "units_per_minute", lcfg.InitialUnitsPerMinute,
			"limiter", !lcfg.Disabled, "worker_id", wcfg.ID)
		err := w.Run(gctx)
		log.Info("worker stopped")
		return err
	})
	return g.Wait()
}

// openOutputs opens the results and dead-letter outputs (nil for kind
// none); the returned function closes those that were opened, the
// dead-letter output first.
func openOutputs(ctx context.Context, cfg config.Config, src sources.Source) (results, deadLetters sinks.Output, closeAll func(), err error) {
	closeAll = func() {
		if deadLetters != nil {
			deadLetters.Close()
		}
		if results != nil {
			results.Close()
		}
	}
	if results, err = openOutput(ctx, "results", cfg.Results.Output(), cfg.Source, src); err != nil {
		return nil, nil, func() {}, err
	}
	if deadLetters, err = openOutput(ctx, "dead_letters", cfg.DeadLetters, cfg.Source, src); err != nil {
		if results != nil {
			results.Close()
		}
		return nil, nil, func() {}, err
	}
	return results, deadLetters, closeAll, nil
}

// sourceAckWait is the source's ack deadline, which the worker extends
// every third of.
func sourceAckWait(src sources.Source) time.Duration {
	if js, ok := src.(*natsjs.Source); ok {
		return js.Config().AckWait
	}
	if ps, ok := src.(*gcppubsub.Source); ok {
		return ps.Config().AckDeadline
	}
	return worker.DefaultAckWait
}

// openOutput opens the results or dead-letter output; nil for kind none.
func openOutput(ctx context.Context, section string, o config.Output, sc config.Source, src sources.Source) (sinks.Output, error) {
	switch o.Kind {
	case config.OutputNone:
		return nil, nil
	case config.OutputJSONL:
		out, err := jsonl.New(jsonl.Config{Path: o.Path})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", section, err)
		}
		return out, nil
	case config.OutputNATS:
		js, ok := src.(*natsjs.Source)
		if !ok {
			return nil, fmt.Errorf("%s.kind: %q needs source.kind %q", section, config.OutputNATS, config.SourceJetStream)
		}
		nc := natsOutputConfig(section, o, js.Config())
		out, err := natsout.New(ctx, js.JetStream(), nc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", section, err)
		}
		return out, nil
	case config.OutputPubSub:
		if sc.Kind != config.SourcePubSub {
			return nil, fmt.Errorf("%s.kind: %q needs source.kind %q (for the project and credentials)", section, config.OutputPubSub, config.SourcePubSub)
		}
		var opts []option.ClientOption
		if os.Getenv("PUBSUB_EMULATOR_HOST") == "" && sc.PubSub.CredentialsFile != "" {
			opts = append(opts, option.WithAuthCredentialsFile(option.ServiceAccount, sc.PubSub.CredentialsFile))
		}
		client, err := pubsub.NewClient(ctx, sc.PubSub.Project, opts...)
		if err != nil {
			return nil, fmt.Errorf("%s: pubsub client: %w", section, err)
		}
		out, err := pubsubout.New(ctx, client, pubsubout.Config{Topic: o.Topic, CreateTopic: sc.PubSub.Setup})
		if err != nil {
			client.Close()
			return nil, fmt.Errorf("%s: %w", section, err)
		}
		return &clientOutput{Output: out, client: client}, nil
	default:
		return nil, fmt.Errorf("%s.kind: must be one of none, nats, pubsub, jsonl, got %q", section, o.Kind)
	}
}

// clientOutput is a Pub/Sub output that owns its client.
type clientOutput struct {
	*pubsubout.Output
	client *pubsub.Client
}

func (o *clientOutput) Close() error {
	err := o.Output.Close()
	if cerr := o.client.Close(); err == nil {
		err = cerr
	}
	return err
}

// natsOutputConfig places dead letters on the source's dead-letter subject
// and stream (sluice.dead in SLUICE_DEAD by default), and results on the
// job subject's sibling "results" (sluice.results) in STREAM_RESULTS. The
// streams are created when the source sets its own up.
func natsOutputConfig(section string, o config.Output, jc natsjs.Config) natsout.Config {
	if section == "dead_letters" {
		subject := o.Subject
		if subject == "" {
			subject = jc.DeadLetterSubject
		}
		return natsout.Config{Subject: subject, Stream: jc.DeadLetterStream, CreateStream: jc.Setup}
	}
	subject := o.Subject
	if subject == "" {
		first := jc.Subjects[0]
		if i := strings.LastIndexByte(first, '.'); i >= 0 {
			subject = first[:i] + ".results"
		} else {
			subject = first + ".results"
		}
	}
	return natsout.Config{Subject: subject, Stream: jc.Stream + "_RESULTS", CreateStream: true}
}

var (
	_ worker.Target  = (*httpapi.Sink)(nil)
	_ worker.Checker = (*httpapi.Sink)(nil)
)

// applySourceFlags sets the embedded-server and NATS flags of `sluice run`
// on the source section.
func applySourceFlags(c *config.Config, urlSet bool, url string, dirSet bool, dir string, portSet bool, port int) error {
	if !urlSet && !dirSet && !portSet {
		return nil
	}
	if c.Source.Kind != config.SourceJetStream {
		return fmt.Errorf("run: --nats-url, --data-dir and --nats-port need source.kind %q, got %q", config.SourceJetStream, c.Source.Kind)
	}
	js := &c.Source.JetStream
	if urlSet {
		js.URL = url
		delete(c.Lines, "source.jetstream.url")
	}
	if dirSet {
		js.Embedded.StoreDir = dir
		delete(c.Lines, "source.jetstream.embedded.store_dir")
	}
	if portSet {
		js.Embedded.Port = port
		delete(c.Lines, "source.jetstream.embedded.port")
	}
	return nil
}

// shutdownTracing exports the spans still batched, for up to 10s.
func shutdownTracing(ctx context.Context, tp *sdktrace.TracerProvider, log *slog.Logger) {
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := tp.Shutdown(sctx); err != nil {
		log.Warn("tracing: the last spans were not exported", "err", err)
	}
}
