package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/web"
)

// serveSimulator is `sluice simulate --serve ADDR`: the simulator page,
// each page's run starting from start (the flags' scenario, mode, quota,
// instances and demand), until SIGINT or SIGTERM.
func serveSimulator(cmd *cobra.Command, f simulateFlags, start sim.Config) error {
	if f.json || f.svg != "" || f.compare {
		return cli.UsageError(errors.New("--serve: cannot be combined with --json, --svg or --compare"))
	}
	cfg := web.DefaultSimConfig()
	cfg.Start = start
	cfg.Speed = f.speed
	if err := cfg.Validate(); err != nil {
		if !(f.speed >= web.MinSpeed && f.speed <= web.MaxSpeed) {
			return cli.UsageError(fmt.Errorf("--speed: must be in [%v, %v], got %v", web.MinSpeed, web.MaxSpeed, f.speed))
		}
		return cli.UsageError(err)
	}
	if start.Instances > sim.MaxLiveInstances {
		return cli.UsageError(fmt.Errorf("--instances: must be at most %d with --serve, got %d", sim.MaxLiveInstances, start.Instances))
	}
	ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", f.serve)
	if err != nil {
		return fmt.Errorf("--serve: %w", err)
	}
	cfg.Log = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
	return serveSimulatorOn(ctx, ln, cfg, cmd.ErrOrStderr())
}

// serveSimulatorOn serves the simulator page on ln until ctx is done, then
// ends every session's stream and shuts the server down.
func serveSimulatorOn(ctx context.Context, ln net.Listener, cfg web.SimConfig, errOut io.Writer) error {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	srv, err := web.NewSimServer(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	addr := ln.Addr().String()
	if !run.LoopbackListen(addr) {
		fmt.Fprintf(errOut, "sluice simulate: warning: %s is reachable from other hosts\n", addr)
	}
	fmt.Fprintf(errOut, "sluice simulate: serving the simulator page on http://%s/ (Ctrl-C to stop)\n", addr)
	return run.ServeHTTP(ctx, ln, srv, cfg.Log, "--serve")
}
