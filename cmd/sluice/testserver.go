package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/sim"
)

type testserverFlags struct {
	api         string
	burst       float64
	burstSet    bool // --burst-units was given
	fill        time.Duration
	refused     bool
	quota       float64
	window      time.Duration
	listen      string
	typeCosts   []string
	defaultCost float64
	logFile     string
	headers     headersFlags
}

func newTestserverCmd() *cobra.Command {
	var f testserverFlags
	cmd := &cobra.Command{
		Use:   "testserver",
		Short: "Serve the model API with a hidden quota over HTTP",
		Long: `testserver is the simulator's model API as a real HTTP server: it accepts at
most --quota units in any sliding --window, and answers a call that does not
fit with 429 and a Retry-After of the seconds until it would (rounded up).
--api leaky models a gateway's leaky bucket instead (as nginx limit_req):
--quota units per --window leak out at a steady rate, a call may go ahead of
it by at most --burst-units, and one that does not fit gets 429 with a
Retry-After of the whole seconds until it would (rounded up, at least 1).
--api fixed is a window that resets (as GitHub's): the first call after a
window ends opens one of --window, which accepts --quota units; a refused
call's Retry-After is the seconds until it resets. --api bucket is Envoy's
local rate limit: a bucket of --burst-units tokens (default: one fill), full
at the start, that gains quota × --fill-interval / --window tokens at every
--fill-interval; a refused call's Retry-After is the seconds until the fill
that makes room. --count-refused (window, fixed): a refused call counts
against the quota too, as HAProxy's stick-table counters do.

Every request is a call, whatever its method and path, except GET /stats and
GET /jobs. A call costs the X-Cost header's units, or its job type's price
(Sluice-Type or X-Job-Type header, priced with --type-cost TYPE=UNITS), or
--default-cost. The job id in Sluice-Job-Id (or X-Job-Id) is counted per
accepted call, so duplicates show in GET /stats ("jobs") and GET /jobs, and
--log FILE appends each accepted id on its own line.

--headers ietf sends RateLimit-Policy ("window";q=QUOTA;w=WINDOW) and
RateLimit ("window";r=REMAINING;t=RESET) with every answer; --headers
x-ratelimit sends X-RateLimit-Limit, X-RateLimit-Remaining and
X-RateLimit-Reset (delta seconds, or a Unix time with --headers-reset
unix). REMAINING is the units left in the window after the call, rounded
down; RESET the seconds until the oldest units in the window leave it,
rounded up.

--headers applies to window and fixed (RESET: the seconds until the fixed
window resets); leaky and bucket send no quota headers.

GET /stats: accepted_units, accepted_requests, throttled, window_units,
quota, window_s, too_large, bad_requests, jobs {distinct, duplicates,
without_id}. On SIGINT or SIGTERM the server stops and prints the final
stats as JSON. See docs/simulator.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.burstSet = cmd.Flags().Changed("burst-units")
			cfg, err := f.config()
			if err != nil {
				return cli.UsageError(err)
			}
			if f.logFile != "" {
				lf, err := os.OpenFile(f.logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
				if err != nil {
					return fmt.Errorf("--log: %w", err)
				}
				defer lf.Close()
				cfg.Log = lf
			}
			cfg.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			ln, err := net.Listen("tcp", f.listen)
			if err != nil {
				return fmt.Errorf("--listen: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			return serveTestserver(ctx, ln, cfg, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.api, "api", string(sim.APIWindow), "model API: window (a sliding window), leaky (a gateway's leaky bucket), fixed (a window that resets) or bucket (Envoy's token bucket)")
	fl.Float64Var(&f.burst, "burst-units", 5, "with --api leaky: units a call may go ahead of the steady rate; with --api bucket: the bucket's size (default one fill)")
	fl.DurationVar(&f.fill, "fill-interval", sim.DefaultFillInterval, "with --api bucket: how often quota × interval / window tokens are added")
	fl.BoolVar(&f.refused, "count-refused", false, "with --api window or fixed: a refused call counts against the quota too")
	fl.Float64Var(&f.quota, "quota", 3000, "hidden quota, units per window")
	fl.DurationVar(&f.window, "window", sim.DefaultWindowSpan, "length of the sliding or fixed window, and the span of --quota")
	fl.StringVar(&f.listen, "listen", "127.0.0.1:8080", "address to listen on")
	fl.StringArrayVar(&f.typeCosts, "type-cost", nil, "price of a job type, TYPE=UNITS (repeatable)")
	fl.Float64Var(&f.defaultCost, "default-cost", 1, "units of a call with no X-Cost and no priced type")
	fl.StringVar(&f.logFile, "log", "", "append the id of every accepted call to this file")
	f.headers.register(fl, "sent with every answer, computed from the window")
	return cmd
}

func (f testserverFlags) config() (sim.ServerConfig, error) {
	cfg := sim.DefaultServerConfig()
	if !(f.quota > 0) || math.IsInf(f.quota, 0) {
		return cfg, fmt.Errorf("--quota: must be > 0, got %v", f.quota)
	}
	if f.window <= 0 {
		return cfg, fmt.Errorf("--window: must be > 0, got %v", f.window)
	}
	if !(f.defaultCost >= 0) || math.IsInf(f.defaultCost, 0) {
		return cfg, fmt.Errorf("--default-cost: must be >= 0, got %v", f.defaultCost)
	}
	api := sim.APIWindow
	if f.api != "" {
		var err error
		if api, err = sim.ParseAPI(f.api); err != nil {
			return cfg, fmt.Errorf("--api: %w", err)
		}
	}
	if !(f.burst >= 0) || math.IsInf(f.burst, 0) {
		return cfg, fmt.Errorf("--burst-units: must be >= 0, got %v", f.burst)
	}
	if f.refused && api != sim.APIWindow && api != sim.APIFixed {
		return cfg, fmt.Errorf("--count-refused: applies to --api window or fixed, got --api %s", api)
	}
	cfg.API, cfg.BurstUnits, cfg.CountRefused = api, f.burst, f.refused
	if api == sim.APIBucket {
		if f.fill <= 0 {
			return cfg, fmt.Errorf("--fill-interval: must be > 0, got %v", f.fill)
		}
		cfg.FillInterval = f.fill
		fill := f.quota * f.fill.Seconds() / f.window.Seconds()
		if !f.burstSet {
			cfg.BurstUnits = fill
		} else if f.burst < fill {
			return cfg, fmt.Errorf("--burst-units: must be at least one fill's tokens (--quota × --fill-interval / --window = %v) with --api bucket, got %v", fill, f.burst)
		}
	}
	cfg.Quota, cfg.Window, cfg.DefaultCost = f.quota, f.window, f.defaultCost
	headers, err := f.headers.parse()
	if err != nil {
		return cfg, err
	}
	if (api == sim.APILeaky || api == sim.APIBucket) && headers.Format != call.RateLimitNone {
		return cfg, fmt.Errorf("--headers: --api %s sends no quota headers, got %v", api, headers.Format)
	}
	cfg.Headers = headers
	for _, tc := range f.typeCosts {
		typ, units, ok := strings.Cut(tc, "=")
		c, err := strconv.ParseFloat(strings.TrimSpace(units), 64)
		typ = strings.TrimSpace(typ)
		if !ok || typ == "" || err != nil || !(c >= 0) || math.IsInf(c, 0) {
			return cfg, fmt.Errorf("--type-cost: want TYPE=UNITS with UNITS >= 0, got %q", tc)
		}
		if cfg.TypeCosts == nil {
			cfg.TypeCosts = map[string]float64{}
		}
		cfg.TypeCosts[typ] = c
	}
	return cfg, cfg.Validate()
}

// serveTestserver serves the model API on ln until ctx ends, then prints
// the final stats to out.
func serveTestserver(ctx context.Context, ln net.Listener, cfg sim.ServerConfig, out, errOut io.Writer) error {
	srv, err := sim.NewServer(cfg)
	if err != nil {
		ln.Close()
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(errOut, "sluice testserver: listening on http://%s (api %s, quota %v units per %v)\n", ln.Addr(), cmp.Or(cfg.API, sim.APIWindow), cfg.Quota, cfg.Window)
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("testserver: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	serr := hs.Shutdown(sctx)
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("testserver: %w", err)
	}
	b, err := json.Marshal(srv.Stats())
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\n", b)
	if serr != nil {
		return fmt.Errorf("testserver: shutdown: %w", serr)
	}
	return nil
}
