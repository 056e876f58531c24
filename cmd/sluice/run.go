package main

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/limiter"
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
	ui            bool // the live page on metrics.listen (docs/ui.md)
	uiListen      string
	metricsListen string
	exitWhenEmpty bool
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
wait).

With --exit-when-empty it also exits, with status 0, once the queue is empty
and nothing is in flight (for batch jobs and Kubernetes Jobs).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, err := runConfig(cmd, f)
			if err == nil {
				err = run.CheckUI(f.ui, f.uiListen, cfg.Metrics)
			}
			if err != nil {
				return cli.UsageError(err)
			}
			log, err := run.NewLogger(cmd.ErrOrStderr(), cfg.Log.Format, cfg.Log.Level)
			if err != nil {
				return cli.UsageError(err)
			}
			// The first SIGINT or SIGTERM ends cmd.Context()
			// (cli.CatchSignals), whose catcher stops listening first: a
			// second signal takes the default action and ends the process.
			// The command keeps no handler of its own, which would take
			// that second signal for as long as it listened.
			return untilSignal(cmd.Context(), func() {
				if cli.StoppedBySignal(cmd.Context()) {
					log.Info("shutting down; a second signal exits at once")
				}
			}, func(ctx context.Context) error {
				return run.Worker(ctx, cfg, run.Options{Log: log, UI: f.ui, UIListen: f.uiListen, Version: currentVersion(),
					ExitWhenEmpty: f.exitWhenEmpty})
			})
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
	fl.BoolVar(&f.exitWhenEmpty, "exit-when-empty", false, "exit with status 0 once the queue is empty and nothing is in flight")
	fl.StringVar(&f.metricsListen, "metrics-listen", "", `address of /metrics, /healthz and /readyz (metrics.listen); "127.0.0.1:0" for a free port, "off" for none`)
	return cmd
}

// untilSignal runs fn until sigCtx ends (the first signal), and announces
// the shutdown before fn's context ends: nothing fn logs as it stops comes
// before the announcement. The announcement is not made when fn returns
// first.
func untilSignal(sigCtx context.Context, announce func(), fn func(context.Context) error) error {
	ctx, cancel := context.WithCancelCause(context.WithoutCancel(sigCtx))
	defer cancel(nil)
	finished := make(chan struct{})
	var watching sync.WaitGroup
	watching.Go(func() {
		select {
		case <-finished:
		case <-sigCtx.Done():
			announce()
			cancel(context.Cause(sigCtx))
		}
	})
	err := fn(ctx)
	close(finished)
	watching.Wait()
	return err
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
				c.SetBy(path, "--"+flag) // a problem with it is the flag's, not the file's line
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
		c.SetBy("source.jetstream.url", "--nats-url")
	}
	if dirSet {
		js.Embedded.StoreDir = dir
		c.SetBy("source.jetstream.embedded.store_dir", "--data-dir")
	}
	if portSet {
		js.Embedded.Port = port
		c.SetBy("source.jetstream.embedded.port", "--nats-port")
	}
	return nil
}
