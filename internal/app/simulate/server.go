package simulate

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
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/sim"
)

// ServerOptions are the flags of `sluice testserver`.
type ServerOptions struct {
	API          string
	Burst        float64
	BurstSet     bool // --burst-units was given
	FillInterval time.Duration
	CountRefused bool
	Delay        bool
	NoRetryAfter bool
	Quota        float64
	Window       time.Duration
	Listen       string
	TypeCosts    []string // TYPE=UNITS
	DefaultCost  float64
	LogFile      string
	LogTime      bool // --log-time: each line of LogFile begins with the time of the acceptance
	Headers      Headers
}

// RunServer is `sluice testserver`: it validates o, listens on o.Listen
// and serves the model API until ctx ends, then prints the final stats to
// out. It logs to errOut.
func RunServer(ctx context.Context, o ServerOptions, out, errOut io.Writer) error {
	cfg, err := o.Config()
	if err != nil {
		return cli.UsageError(err)
	}
	if o.LogFile != "" {
		lf, err := os.OpenFile(o.LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("--log: %w", err)
		}
		defer lf.Close()
		cfg.Log = lf
		if o.LogTime {
			cfg.Log = stampedLog{w: lf, now: time.Now}
		}
	} else if o.LogTime {
		return cli.UsageError(errors.New("--log-time: needs --log FILE"))
	}
	cfg.Logger = slog.New(slog.NewTextHandler(errOut, nil))
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("--listen: %w", err)
	}
	return ServeAPI(ctx, ln, cfg, out, errOut)
}

// stampedLog begins each line written to w with the time of the write:
// Unix seconds, to the millisecond, and a space. sim.Server writes one
// accepted id per Write, in the order it accepts the calls, so the stamp
// is the gateway's own time of the acceptance: the end-to-end scripts
// measure a drain from the first accepted call to the last with it, free
// of their own polling and of the workers' start.
type stampedLog struct {
	w   io.Writer
	now func() time.Time
}

func (s stampedLog) Write(p []byte) (int, error) {
	b := strconv.AppendFloat(make([]byte, 0, 16+len(p)), float64(s.now().UnixMilli())/1e3, 'f', 3, 64)
	b = append(append(b, ' '), p...)
	if _, err := s.w.Write(b); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Config validates o and returns the model API's configuration; errors
// name the flag.
func (o ServerOptions) Config() (sim.ServerConfig, error) {
	cfg := sim.DefaultServerConfig()
	if !(o.Quota > 0) || math.IsInf(o.Quota, 0) {
		return cfg, fmt.Errorf("--quota: must be > 0, got %v", o.Quota)
	}
	if o.Window <= 0 {
		return cfg, fmt.Errorf("--window: must be > 0, got %v", o.Window)
	}
	if !(o.DefaultCost >= 0) || math.IsInf(o.DefaultCost, 0) {
		return cfg, fmt.Errorf("--default-cost: must be >= 0, got %v", o.DefaultCost)
	}
	api := sim.APIWindow
	if o.API != "" {
		var err error
		if api, err = sim.ParseAPI(o.API); err != nil {
			return cfg, fmt.Errorf("--api: %w", err)
		}
	}
	if !(o.Burst >= 0) || math.IsInf(o.Burst, 0) {
		return cfg, fmt.Errorf("--burst-units: must be >= 0, got %v", o.Burst)
	}
	if o.CountRefused && !api.CountsRefused() {
		return cfg, fmt.Errorf("--count-refused: applies to --api window, fixed or weighted, got --api %s", api)
	}
	if o.Delay && !api.HoldsCalls() {
		return cfg, fmt.Errorf("--delay: applies to --api leaky, got --api %s", api)
	}
	cfg.API, cfg.BurstUnits, cfg.CountRefused, cfg.Delay, cfg.NoRetryAfter = api, o.Burst, o.CountRefused, o.Delay, o.NoRetryAfter
	if api == sim.APIBucket {
		if o.FillInterval <= 0 {
			return cfg, fmt.Errorf("--fill-interval: must be > 0, got %v", o.FillInterval)
		}
		cfg.FillInterval = o.FillInterval
		fill := o.Quota * o.FillInterval.Seconds() / o.Window.Seconds()
		if !o.BurstSet {
			cfg.BurstUnits = fill
		} else if o.Burst < fill {
			return cfg, fmt.Errorf("--burst-units: must be at least one fill's tokens (--quota × --fill-interval / --window = %v) with --api bucket, got %v", fill, o.Burst)
		}
	}
	cfg.Quota, cfg.Window, cfg.DefaultCost = o.Quota, o.Window, o.DefaultCost
	headers, err := o.Headers.Parse()
	if err != nil {
		return cfg, err
	}
	if !api.SendsHeaders() && headers.Format != call.RateLimitNone {
		return cfg, fmt.Errorf("--headers: --api %s sends no quota headers, got %v", api, headers.Format)
	}
	cfg.Headers = headers
	for _, tc := range o.TypeCosts {
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

// ServeAPI serves the model API on ln until ctx ends, then prints
// the final stats to out.
func ServeAPI(ctx context.Context, ln net.Listener, cfg sim.ServerConfig, out, errOut io.Writer) error {
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
