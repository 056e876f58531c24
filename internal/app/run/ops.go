package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"runtime"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/worker"
)

// The runtime endpoints ("ops"): /metrics, /healthz, /readyz and, when
// enabled, /debug/pprof, served on metrics.listen.

const (
	// readyTimeout bounds one /readyz check.
	readyTimeout = 5 * time.Second
	// sourceStatsTimeout bounds the source stats read on each scrape.
	sourceStatsTimeout = 5 * time.Second
	// httpShutdownTimeout bounds how long in-flight requests to sluice's
	// own HTTP servers (the ops endpoints, the simulator page) may take once
	// the process stops.
	httpShutdownTimeout = 5 * time.Second
)

// opsConfig is what serveOps serves: the metrics section and, with
// `sluice run --ui`, the live page (ui.go).
type opsConfig struct {
	config.Metrics
	ui       bool               // `sluice run --ui`: serve the live page at /ui/ (ui.go)
	uiListen string             // `sluice run --ui-listen`: serve it there instead
	live     *livePage          // the live page's source, set by withUI when ui is on
	state    func() WorkerState // GET /state; nil: not served
	version  string             // of sluice, for the index page
}

// LoopbackListen reports whether a listen address binds only to the
// loopback interface. An empty host binds every interface.
func LoopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host == "" {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// opsListeners are the addresses that a run serves, bound before anything
// else is opened: a second sluice on the same port fails before it says it
// runs or pulls a job.
type opsListeners struct {
	ops net.Listener // metrics.listen; nil when "off"
	ui  net.Listener // --ui-listen; nil when the page is not on its own address
}

// bindOps binds metrics.listen and, with --ui-listen, the live page's own
// address, and logs where each is served. Each error names the option or
// flag of the address. It returns no listeners and no error when ctx ended
// first.
func bindOps(ctx context.Context, cfg opsConfig, log *slog.Logger) (opsListeners, error) {
	var l opsListeners
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if ctx.Err() != nil {
		return l, nil // stopped before it started
	}
	if cfg.Listen != config.OpsListenOff {
		ln, err := listen(ctx, cfg.Listen, "metrics.listen")
		if err != nil || ln == nil {
			return l, err
		}
		l.ops = ln
		if !LoopbackListen(cfg.Listen) {
			log.Warn("ops endpoints are reachable from other hosts", "addr", ln.Addr().String(), "pprof", cfg.Pprof)
		}
		log.Info("ops endpoints listening", "addr", ln.Addr().String(), "pprof", cfg.Pprof)
		if cfg.ui && cfg.uiListen == "" {
			log.Info("live page listening", "addr", ln.Addr().String(), "url", pageURL(ln.Addr(), uiPrefix+"/"))
		}
	}
	if cfg.ui && cfg.uiListen != "" {
		ln, err := listen(ctx, cfg.uiListen, "--ui-listen")
		if err != nil || ln == nil {
			l.close()
			return opsListeners{}, err
		}
		l.ui = ln
		log.Info("live page listening", "addr", ln.Addr().String(), "url", pageURL(ln.Addr(), uiPrefix+"/"))
	}
	return l, nil
}

// close closes the listeners that were not served.
func (l opsListeners) close() {
	for _, ln := range []net.Listener{l.ops, l.ui} {
		if ln != nil {
			ln.Close()
		}
	}
}

// pageURL is the URL of path on addr, as a person on this machine opens
// it: an address that binds every interface is reached on localhost.
func pageURL(addr net.Addr, path string) string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return "http://" + addr.String() + path
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + path
}

// serveOps serves the runtime endpoints on ln, bound by bindOps, until ctx
// is done, then shuts the server down and returns nil. It returns at once
// with nil when ln is nil (metrics.listen "off"). It is meant to run in the
// command's errgroup:
//
//	g.Go(func() error { return serveOps(ctx, lns.ops, ops, reg, ready, log) })
//
// ready decides /readyz: nil means ready. It is called on each request, with
// a deadline, and its error is shown to the caller, so it must not carry
// secrets.
func serveOps(ctx context.Context, ln net.Listener, cfg opsConfig, g prometheus.Gatherer, ready func(context.Context) error, log *slog.Logger) error {
	if ln == nil {
		return nil
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return ServeHTTP(ctx, ln, opsHandler(cfg, g, ready, log), log, "metrics.listen")
}

// listen binds addr for the option or flag named what. It returns a nil
// listener and no error when ctx ended first. An address in use gets an
// error that names the way out: another sluice on this machine has the
// default port.
func listen(ctx context.Context, addr, what string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	switch {
	case err == nil:
		return ln, nil
	case ctx.Err() != nil:
		return nil, nil // stopped before it started
	case errors.Is(err, syscall.EADDRINUSE) && what == "metrics.listen":
		return nil, fmt.Errorf("metrics.listen: %w (another process, perhaps another sluice, listens there: "+
			"give this one a free port with --metrics-listen 127.0.0.1:0, or set metrics.listen)", err)
	case errors.Is(err, syscall.EADDRINUSE):
		return nil, fmt.Errorf("%s: %w (another process listens there: give a free port such as 127.0.0.1:0)", what, err)
	}
	return nil, fmt.Errorf("%s: %w", what, err)
}

// ServeHTTP serves h on ln until ctx is done, then shuts the server down,
// giving requests in flight up to 5 s. Requests see ctx as their base
// context, so long-lived streams end with it. Errors are prefixed with
// what (the flag or option that named the address).
func ServeHTTP(ctx context.Context, ln net.Listener, h http.Handler, log *slog.Logger, what string) error {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("%s: %w", what, err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), httpShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("%s: shutdown: %w", what, err)
	}
	return nil
}

// opsHandler routes the runtime endpoints.
func opsHandler(cfg opsConfig, g prometheus.Gatherer, ready func(context.Context) error, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:            slog.NewLogLogger(log.Handler(), slog.LevelWarn),
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: 4,
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if ready != nil {
			ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
			defer cancel()
			if err := ready(ctx); err != nil {
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprintf(w, "not ready: %v\n", err)
				return
			}
		}
		io.WriteString(w, "ok\n")
	})
	if cfg.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	if cfg.state != nil {
		mux.HandleFunc("GET /state", serveState(cfg.state))
	}
	if cfg.uiListen == "" {
		mountUI(mux, cfg, log)
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "sluice "+cfg.version+"\n/metrics\n/healthz\n/readyz\n")
		if cfg.state != nil {
			io.WriteString(w, "/state\n")
		}
		if cfg.Pprof {
			io.WriteString(w, "/debug/pprof/\n")
		}
		if cfg.live != nil && cfg.uiListen == "" {
			io.WriteString(w, uiPrefix+"/\n")
		}
	})
	return mux
}

// allReady combines readiness checks: ready when every one is, else the
// first error.
func allReady(checks ...func(context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		for _, c := range checks {
			if err := c(ctx); err != nil {
				return err
			}
		}
		return nil
	}
}

// targetResolves is a readiness check: ready when the target URL's host is
// an IP address or resolves with lookup (nil means net.DefaultResolver). Its
// errors name the host only, never the rest of the URL.
func targetResolves(target string, lookup func(ctx context.Context, host string) ([]string, error)) func(context.Context) error {
	if lookup == nil {
		lookup = net.DefaultResolver.LookupHost
	}
	u, err := url.Parse(target)
	host := ""
	if err == nil {
		host = u.Hostname()
	}
	return func(ctx context.Context) error {
		if host == "" {
			return errors.New("target has no host")
		}
		if net.ParseIP(host) != nil {
			return nil
		}
		addrs, err := lookup(ctx, host)
		if err != nil {
			var dnsErr *net.DNSError
			if errors.As(err, &dnsErr) {
				err = errors.New(dnsErr.Err)
			}
			return fmt.Errorf("target host %q does not resolve: %v", host, err)
		}
		if len(addrs) == 0 {
			return fmt.Errorf("target host %q does not resolve: no addresses", host)
		}
		return nil
	}
}

// sourceReady is a readiness check for the source. A source that can tell
// whether it can store and hand out jobs (sources.Healther) is asked; else
// one that can tell whether it is connected (sources.Connector); one that
// reports stats is ready while it can read them (which needs the
// connection and the consumer); any other source is ready once opened.
func sourceReady(src sources.Source) func(context.Context) error {
	return func(ctx context.Context) error {
		if h, ok := src.(sources.Healther); ok {
			if err := h.Healthy(ctx); err != nil {
				return fmt.Errorf("source not ready: %w", err)
			}
			return nil
		}
		if c, ok := src.(sources.Connector); ok {
			if !c.Connected() {
				return errors.New("source not connected")
			}
			return nil
		}
		if ss, ok := src.(sources.StatsSource); ok {
			if _, err := ss.Stats(ctx); err != nil {
				return fmt.Errorf("source not ready: %w", err)
			}
		}
		return nil
	}
}

// targetAnswers is a readiness check: not ready once every call to the
// target has failed for after (ops.target_unready_after; 0: always ready),
// as health, the worker's, says at now().
func targetAnswers(health func() worker.TargetHealth, after time.Duration, now func() time.Time) func(context.Context) error {
	return func(context.Context) error {
		h := health()
		if t := now(); h.Down(t, after) {
			return fmt.Errorf("target failing: every call for %s (%d calls: no answer or a 5xx)",
				t.Sub(h.FailingSince).Round(time.Second), h.Failures)
		}
		return nil
	}
}

// RegisterOpsMetrics registers, on reg, the metrics that are not part of a
// library package's metrics struct:
//
//   - sluice_build_info{version,goversion}: always 1;
//   - sluice_budget_saturation: sat's fraction of the last minute during
//     which jobs waited for units (omitted when sat is nil);
//   - sluice_source_* gauges read from src on each scrape, when src
//     implements sources.StatsSource (see sourceStatsCollector);
//   - the Go runtime and process collectors (go_*, process_*).
func RegisterOpsMetrics(reg prometheus.Registerer, sat *limiter.Saturation, src sources.Source, version string, log *slog.Logger) error {
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "sluice_build_info",
			Help:        "Always 1; the labels give the version of sluice and of Go it was built with.",
			ConstLabels: prometheus.Labels{"version": version, "goversion": runtime.Version()},
		}, func() float64 { return 1 }),
	}
	if sat != nil {
		cs = append(cs, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "sluice_budget_saturation",
			Help: "Fraction of the last minute during which jobs waited in the limiter for units (0 to 1). Near 1: the API budget is the bottleneck and more workers will not help.",
		}, func() float64 { return sat.FractionAt(time.Now()) }))
	}
	if ss, ok := src.(sources.StatsSource); ok {
		cs = append(cs, newSourceStatsCollector(ss, sourceStatsTimeout, log))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return fmt.Errorf("metrics: %w", err)
		}
	}
	return nil
}

// sourceStatsCollector reads the queue's state from the source on each
// scrape. Every replica reports the same queue, so aggregate with max(), not
// sum(). When the read fails, sluice_source_up is 0 and the other gauges are
// left out of that scrape.
type sourceStatsCollector struct {
	src     sources.StatsSource
	timeout time.Duration
	log     *slog.Logger

	up, pending, ackPending, redelivered, deadLetters, oldest *prometheus.Desc
	now                                                       func() time.Time
}

func newSourceStatsCollector(src sources.StatsSource, timeout time.Duration, log *slog.Logger) *sourceStatsCollector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &sourceStatsCollector{
		src:     src,
		timeout: timeout,
		log:     log,
		up: prometheus.NewDesc("sluice_source_up",
			"1 when the last scrape could read the queue's state from the source, else 0.", nil, nil),
		pending: prometheus.NewDesc("sluice_source_pending",
			"Jobs waiting in the queue to be delivered (the backlog).", nil, nil),
		ackPending: prometheus.NewDesc("sluice_source_ack_pending",
			"Jobs delivered and not yet settled: held by a worker, or handed back and not yet received again.", nil, nil),
		redelivered: prometheus.NewDesc("sluice_source_redelivered",
			"Jobs delivered more than once and not yet settled.", nil, nil),
		deadLetters: prometheus.NewDesc("sluice_source_dead_letters",
			"Dead-letter records held by the source's dead-letter store (absent when the source cannot tell).", nil, nil),
		oldest: prometheus.NewDesc("sluice_oldest_pending_age_seconds",
			"Age of the oldest job not yet finished (waiting or in flight), from its publish time; 0 when there is none, absent when the source cannot tell.", nil, nil),
		now: time.Now,
	}
}

func (c *sourceStatsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.up
	ch <- c.pending
	ch <- c.ackPending
	ch <- c.redelivered
	ch <- c.deadLetters
	ch <- c.oldest
}

func (c *sourceStatsCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st, err := c.src.Stats(ctx)
	if err != nil {
		c.log.Warn("reading source stats for metrics", "err", err)
		ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 0)
		return
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, 1)
	ch <- prometheus.MustNewConstMetric(c.pending, prometheus.GaugeValue, float64(st.Pending))
	ch <- prometheus.MustNewConstMetric(c.ackPending, prometheus.GaugeValue, float64(st.AckPending))
	ch <- prometheus.MustNewConstMetric(c.redelivered, prometheus.GaugeValue, float64(st.Redelivered))
	if st.DeadLetters >= 0 {
		ch <- prometheus.MustNewConstMetric(c.deadLetters, prometheus.GaugeValue, float64(st.DeadLetters))
	}
	// Sources that count jobs done (Done >= 0) also know the oldest job's
	// publish time; with none held, the age is 0.
	switch {
	case !st.Oldest.IsZero():
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, max(c.now().Sub(st.Oldest), 0).Seconds())
	case st.Done >= 0:
		ch <- prometheus.MustNewConstMetric(c.oldest, prometheus.GaugeValue, 0)
	}
}

// OpsHandler is the handler of the runtime endpoints that `sluice run`
// serves on metrics.listen, without the live page: /metrics from g,
// /healthz, /readyz from ready (nil: always ready) and, with m.Pprof,
// /debug/pprof.
func OpsHandler(m config.Metrics, g prometheus.Gatherer, ready func(context.Context) error, log *slog.Logger) http.Handler {
	return opsHandler(opsConfig{Metrics: m}, g, ready, log)
}
