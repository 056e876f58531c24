package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/run"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/web"
)

// servePage is `sluice simulate --serve ADDR`: the simulator page, each
// page's run starting from start (the flags' scenario, mode, quota,
// instances and demand), until ctx ends.
func servePage(ctx context.Context, o Options, start sim.Config, errOut io.Writer) error {
	if o.JSON || o.SVG != "" || o.Compare {
		return cli.UsageError(errors.New("--serve: cannot be combined with --json, --svg or --compare"))
	}
	cfg := web.DefaultSimConfig()
	cfg.Start = start
	cfg.Speed = o.Speed
	if err := cfg.Validate(); err != nil {
		if !(o.Speed >= web.MinSpeed && o.Speed <= web.MaxSpeed) {
			return cli.UsageError(fmt.Errorf("--speed: must be in [%v, %v], got %v", web.MinSpeed, web.MaxSpeed, o.Speed))
		}
		return cli.UsageError(err)
	}
	if start.Instances > sim.MaxLiveInstances {
		return cli.UsageError(fmt.Errorf("--instances: must be at most %d with --serve, got %d", sim.MaxLiveInstances, start.Instances))
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.Serve)
	if err != nil {
		return fmt.Errorf("--serve: %w", err)
	}
	cfg.Log = slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	return ServePage(ctx, ln, cfg, errOut)
}

// ServePage serves the simulator page on ln until ctx is done, then ends
// every session's stream and shuts the server down.
func ServePage(ctx context.Context, ln net.Listener, cfg web.SimConfig, errOut io.Writer) error {
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
