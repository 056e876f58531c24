package main

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/web"
)

// The live page of `sluice run --ui`: /ui/ on metrics.listen, beside
// /metrics. It reads the worker's limiter directly (its bucket moves
// between events), its metrics for the counters, the source's backlog and
// the jobs, and the membership for the other workers' rates.

// uiPrefix is where the live page is mounted on the ops mux.
const uiPrefix = "/ui"

// checkUI refuses --ui when the ops endpoints are off: the page has no
// address to be served on.
func checkUI(ui bool, uiListen string, ops config.Metrics) error {
	if uiListen != "" {
		return field.Under("--ui-listen", config.Metrics{Listen: uiListen}.Check())
	}
	if ui && ops.Listen == config.OpsListenOff {
		return errors.New(`--ui: the page is served on metrics.listen, which is "off" (serve it on its own address with --ui-listen ADDR)`)
	}
	return nil
}

// serveUI serves the live page alone on ops.uiListen until ctx is done;
// it returns nil at once when the page is not on its own address.
func serveUI(ctx context.Context, ops opsConfig, log *slog.Logger) error {
	if ops.uiListen == "" || ops.live == nil {
		return nil
	}
	ln, err := listen(ctx, ops.uiListen, "--ui-listen")
	if err != nil || ln == nil {
		return err
	}
	log.Info("live page listening", "addr", ln.Addr().String(), "path", uiPrefix+"/")
	mux := http.NewServeMux()
	mountUI(mux, ops, log)
	return serveHTTP(ctx, ln, mux, log, "--ui-listen")
}

// withUI returns ops with the live page's source set when ops.ui is on.
func withUI(ops opsConfig, lim *limiter.Limiter, g prometheus.Gatherer, share *shareRun, id string) opsConfig {
	if !ops.ui {
		return ops
	}
	var members func() []cluster.Member
	self := ""
	if share != nil && share.m != nil {
		members, self = share.m.Members, share.m.Key()
	}
	ops.live = &livePage{src: uiSource(lim, g, members, self), title: id}
	return ops
}

// livePage is what the ops mux needs to serve the live page.
type livePage struct {
	src   web.LiveSource
	title string
}

// mountUI serves the live page under /ui/ on mux when cfg has one.
func mountUI(mux *http.ServeMux, cfg opsConfig, log *slog.Logger) {
	if cfg.live == nil {
		return
	}
	lc := web.DefaultLiveConfig()
	lc.Title = cfg.live.title
	lc.Log = log
	h, err := web.NewLiveHandler(cfg.live.src, lc)
	if err != nil { // the source and the defaults are set above
		panic(err)
	}
	mux.Handle("GET "+uiPrefix+"/", http.StripPrefix(uiPrefix, h))
}

// uiSource reads a snapshot of the worker for the live page: the limiter's
// state, the counters from its metrics, and the members' rates when
// members is not nil (self is this worker's member key).
func uiSource(lim *limiter.Limiter, g prometheus.Gatherer, members func() []cluster.Member, self string) web.LiveSource {
	return func(ctx context.Context) (web.LiveSnapshot, error) {
		st := lim.Stats()
		s := web.LiveSnapshot{
			Rate: st.Rate, Tokens: st.Tokens, Capacity: st.Capacity, Queue: st.Queue,
			Paused: st.Paused, Instances: st.Instances, Share: st.Share, Disabled: st.Disabled,
			Throttles: map[string]float64{}, Rejections: map[string]float64{}, Jobs: map[string]float64{},
			InFlight: math.NaN(), Backlog: math.NaN(),
		}
		if st.Paused {
			s.PauseLeft = max(0, time.Until(st.PausedUntil))
		}
		// Gather reports the families it could read beside the errors of
		// those it could not (the source unreachable, say): use them.
		mfs, err := g.Gather()
		if err != nil && len(mfs) == 0 {
			return s, err
		}
		for _, mf := range mfs {
			switch mf.GetName() {
			case "sluice_limiter_units_total":
				s.Units = sumMetric(mf)
			case "sluice_limiter_throttles_total":
				byLabel(mf, "status", s.Throttles)
			case "sluice_limiter_rejections_total":
				byLabel(mf, "reason", s.Rejections)
			case "sluice_jobs_total":
				byLabel(mf, "outcome", s.Jobs)
			case "sluice_jobs_in_flight":
				s.InFlight = sumMetric(mf)
			case "sluice_source_pending":
				s.Backlog = sumMetric(mf)
			}
		}
		if members != nil {
			for _, m := range members() {
				s.Members = append(s.Members, web.Member{ID: m.ID, Rate: m.Rate, Share: m.Share, Self: m.Key == self})
			}
		}
		return s, ctx.Err()
	}
}

// metricValue is a counter's or a gauge's value.
func metricValue(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

func sumMetric(mf *dto.MetricFamily) float64 {
	var v float64
	for _, m := range mf.GetMetric() {
		v += metricValue(m)
	}
	return v
}

// byLabel adds each metric of mf to out under its label's value.
func byLabel(mf *dto.MetricFamily, label string, out map[string]float64) {
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == label {
				out[lp.GetValue()] += metricValue(m)
			}
		}
	}
}
