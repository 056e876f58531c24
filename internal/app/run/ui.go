package run

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/cluster"
	"github.com/sluicehq/sluice/field"
	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/limiter"
	"github.com/sluicehq/sluice/sources"
	"github.com/sluicehq/sluice/web"
	"github.com/sluicehq/sluice/worker"
)

// The live page of `sluice run --ui`: /ui/ on metrics.listen, beside
// /metrics. It reads snapshots: the limiter's (its bucket moves between
// events) and the worker's Stats, the source's backlog, and the membership
// for the other workers' rates.

// uiPrefix is where the live page is mounted on the ops mux.
const uiPrefix = "/ui"

// CheckUI refuses --ui when the ops endpoints are off: the page has no
// address to be served on.
func CheckUI(ui bool, uiListen string, ops config.Metrics) error {
	if uiListen != "" {
		return field.Under("--ui-listen", config.Metrics{Listen: uiListen}.Check())
	}
	if ui && ops.Listen == config.OpsListenOff {
		return errors.New(`--ui: the page is served on metrics.listen, which is "off" (serve it on its own address with --ui-listen ADDR)`)
	}
	return nil
}

// serveUI serves the live page alone on ln, the --ui-listen address bound
// by bindOps, until ctx is done; it returns nil at once when ln is nil (the
// page is not on its own address).
func serveUI(ctx context.Context, ln net.Listener, ops opsConfig, log *slog.Logger) error {
	if ln == nil || ops.live == nil {
		return nil
	}
	mux := http.NewServeMux()
	mountUI(mux, ops, log)
	return ServeHTTP(ctx, ln, mux, log, "--ui-listen")
}

// snapshots are what the live page reads of a worker; Probe is one.
type snapshots interface {
	Limiter() limiter.Stats
	Pace() Pace
	Worker() worker.Stats
}

// withUI returns ops with the live page's source set when ops.ui is on:
// st's snapshots, src's backlog and share's members (nil: none).
func withUI(ops opsConfig, st snapshots, src sources.Source, share *shareRun, id string) opsConfig {
	if !ops.ui {
		return ops
	}
	var members func() []cluster.Member
	self := ""
	if share != nil && share.m != nil {
		members, self = share.m.Members, share.m.Key()
	}
	ops.live = &livePage{src: uiSource(st, src, members, self), title: id}
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

// uiSource reads a snapshot of the worker for the live page: the
// limiter's and the worker's own snapshots and the limiter's pace, the
// backlog from the source when it reports stats, and the members' rates,
// sending and accepted, when members is not nil (self is this worker's
// member key; its own figures are read now, not from its heartbeat).
func uiSource(p snapshots, src sources.Source, members func() []cluster.Member, self string) web.LiveSource {
	ss, _ := src.(sources.StatsSource)
	return func(ctx context.Context) (web.LiveSnapshot, error) {
		st, ws, pace := p.Limiter(), p.Worker(), p.Pace()
		s := web.LiveSnapshot{
			Rate: pace.Sending, Accepted: pace.Accepted, Burst: pace.Burst,
			Estimate: pace.Estimate, NoEstimate: string(pace.NoEstimate),
			Tokens: st.Tokens, Capacity: st.Capacity, Queue: st.Queue,
			Paused: st.Paused, Instances: st.Instances, Share: st.Share, Disabled: st.Disabled,
			Units:      st.Units,
			Throttles:  make(map[string]float64, len(st.Throttles)),
			Rejections: make(map[string]float64, len(st.Rejections)),
			Jobs:       make(map[string]float64, len(ws.Jobs)),
			InFlight:   float64(ws.InFlight),
			Backlog:    math.NaN(),
		}
		if st.Paused {
			s.PauseLeft = max(0, time.Until(st.PausedUntil))
		}
		for status, n := range st.Throttles {
			s.Throttles[strconv.Itoa(status)] = float64(n)
		}
		for reason, n := range st.Rejections {
			s.Rejections[string(reason)] = float64(n)
		}
		for outcome, n := range ws.Jobs {
			if n > 0 { // the page lists the outcomes seen ("None yet." before any)
				s.Jobs[outcome.String()] = float64(n)
			}
		}
		if ss != nil {
			sctx, cancel := context.WithTimeout(ctx, sourceStatsTimeout)
			qs, qerr := ss.Stats(sctx)
			cancel()
			if qerr == nil {
				s.Backlog = float64(qs.Pending)
			}
		}
		if members != nil {
			for _, m := range members() {
				wm := web.Member{ID: m.ID, Rate: m.Rate, Accepted: m.Accepted, Share: m.Share, Self: m.Key == self}
				if wm.Self {
					wm.Rate, wm.Accepted = pace.Sending, zeroNaN(pace.Accepted)
				}
				s.Members = append(s.Members, wm)
			}
		}
		return s, ctx.Err()
	}
}
