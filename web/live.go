package web

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"sync/atomic"
	"time"
)

// LiveSnapshot is a running worker at an instant, as the live page shows
// it. Unknown figures are NaN (a source that cannot tell its backlog, say).
type LiveSnapshot struct {
	// The limiter.
	Rate     float64 // units per minute: the rate it sends at
	Accepted float64 // units the API accepted from it in the last minute; NaN: not measured
	// Estimate is what the limiter estimates the API accepts from it,
	// units per minute; NaN: none, and NoEstimate says why (a short
	// code: not_yet, slow_start_off, fleet, disabled).
	Estimate   float64
	NoEstimate string
	Burst      float64       // units it would send at once now (limiter.Stats.Burst)
	Tokens     float64       // units in the bucket (below zero after an oversized grant)
	Capacity   float64       // the bucket's size
	Queue      int           // requests waiting for units
	Paused     bool          // in a Retry-After pause
	PauseLeft  time.Duration // until the pause ends
	Instances  int           // instances sharing the budget (0 with a fractional share)
	Share      float64       // this worker's fraction of the budget
	Disabled   bool          // the limiter only records

	// Counters since the worker started.
	Units      float64            // units granted
	Throttles  map[string]float64 // throttled responses by status
	Rejections map[string]float64 // limiter rejections by reason
	Jobs       map[string]float64 // settled jobs by outcome

	InFlight float64 // jobs held by the worker
	Backlog  float64 // jobs waiting in the queue

	// Members are the workers sharing the budget, this one included, when
	// membership is on; nil otherwise.
	Members []Member
}

// Member is one worker of a shared budget.
type Member struct {
	ID       string
	Rate     float64 // units per minute
	Accepted float64 // units the API accepted from it in the last minute
	Share    float64
	Self     bool
}

// LiveSource reads a snapshot of the worker. It is called once per frame of
// each stream, so it must be cheap and safe for concurrent use.
type LiveSource func(ctx context.Context) (LiveSnapshot, error)

// LiveConfig configures a LiveHandler.
type LiveConfig struct {
	// Interval is the time between two frames. Default 500ms.
	Interval time.Duration
	// MaxStreams bounds the pages streaming at once. Default 8.
	MaxStreams int
	// Timeout bounds one call of the source. Default 2s.
	Timeout time.Duration
	// Title names the worker on the page (its id). Default "worker".
	Title string
	// Log reports failures to read the source. Default: discard.
	Log *slog.Logger
}

// DefaultLiveConfig returns the defaults.
func DefaultLiveConfig() LiveConfig {
	return LiveConfig{Interval: 500 * time.Millisecond, MaxStreams: 8, Timeout: 2 * time.Second, Title: "worker"}
}

// Validate reports every field that breaks its rule.
func (c LiveConfig) Validate() error {
	var errs []error
	if c.Interval <= 0 {
		errs = append(errs, fmt.Errorf("web: interval: must be > 0, got %v", c.Interval))
	}
	if c.MaxStreams < 1 {
		errs = append(errs, fmt.Errorf("web: max_streams: must be >= 1, got %d", c.MaxStreams))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("web: timeout: must be > 0, got %v", c.Timeout))
	}
	return errors.Join(errs...)
}

// LiveHandler serves the live page of a running worker: GET / (the page),
// GET /static/… (its files) and GET /events (its frames as Server-Sent
// Events). Mount it under a prefix with http.StripPrefix.
type LiveHandler struct {
	cfg     LiveConfig
	src     LiveSource
	log     *slog.Logger
	mux     *http.ServeMux
	streams atomic.Int32
	start   time.Time
}

// NewLiveHandler returns a LiveHandler reading src.
func NewLiveHandler(src LiveSource, cfg LiveConfig) (*LiveHandler, error) {
	if src == nil {
		return nil, errors.New("web: live source is nil")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	h := &LiveHandler{cfg: cfg, src: src, log: cfg.Log, start: time.Now()}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.mux = http.NewServeMux()
	h.mux.Handle("GET /{$}", page("live.html"))
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", files()))
	h.mux.HandleFunc("GET /events", h.events)
	return h, nil
}

func (h *LiveHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

type liveFrame struct {
	T          num          `json:"t"`             // seconds since the handler started
	Title      string       `json:"title"`         // the worker
	Error      string       `json:"error"`         // reading the source failed
	Rate       num          `json:"rate"`          // units per minute
	Accepted   num          `json:"accepted"`      // units per minute (the last minute); null: not measured
	Estimate   num          `json:"estimate"`      // units per minute; null: none
	NoEstimate string       `json:"estimate_none"` // why there is none; "" when there is one or nothing is known
	Burst      num          `json:"burst"`         // units; null: no bound (disabled)
	Tokens     num          `json:"tokens"`        // units
	Capacity   num          `json:"capacity"`
	Queue      int          `json:"queue"`
	Paused     bool         `json:"paused"`
	PauseLeft  num          `json:"pause_left"` // seconds
	Instances  int          `json:"instances"`
	Share      num          `json:"share"`
	Disabled   bool         `json:"disabled"`
	Units      num          `json:"units"`
	Throttles  []count      `json:"throttles"`
	Rejected   []count      `json:"rejections"`
	Jobs       []count      `json:"jobs"`
	InFlight   num          `json:"in_flight"`
	Backlog    num          `json:"backlog"`
	Members    []liveMember `json:"members"`
}

type count struct {
	Name  string `json:"name"`
	Value num    `json:"value"`
}

type liveMember struct {
	ID       string `json:"id"`
	Rate     num    `json:"rate"`
	Accepted num    `json:"accepted"`
	Share    num    `json:"share"`
	Self     bool   `json:"self"`
}

func counts(m map[string]float64) []count {
	out := make([]count, 0, len(m))
	for k, v := range m {
		out = append(out, count{k, round3(v)})
	}
	slices.SortFunc(out, func(a, b count) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

func (h *LiveHandler) frame(ctx context.Context) liveFrame {
	cctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	s, err := h.src(cctx)
	f := liveFrame{T: round3(time.Since(h.start).Seconds()), Title: h.cfg.Title}
	if err != nil {
		h.log.Warn("live page: reading the worker", "err", err)
		f.Error = err.Error()
		f.Rate, f.Tokens, f.Capacity, f.Share, f.Units = num(math.NaN()), num(math.NaN()), num(math.NaN()), num(math.NaN()), num(math.NaN())
		f.Accepted, f.Estimate, f.Burst = num(math.NaN()), num(math.NaN()), num(math.NaN())
		f.PauseLeft, f.InFlight, f.Backlog = num(math.NaN()), num(math.NaN()), num(math.NaN())
		return f
	}
	f.Rate, f.Tokens, f.Capacity = round3(s.Rate), round3(s.Tokens), round3(s.Capacity)
	f.Accepted, f.Burst = round3(s.Accepted), round3(s.Burst)
	f.Estimate, f.NoEstimate = round3(s.Estimate), s.NoEstimate
	if !(s.Estimate > 0) {
		f.Estimate = num(math.NaN()) // none: null, never a 0 that reads as an API that accepts nothing
	}
	f.Queue, f.Paused, f.PauseLeft = s.Queue, s.Paused, round3(s.PauseLeft.Seconds())
	f.Instances, f.Share, f.Disabled = s.Instances, round3(s.Share), s.Disabled
	f.Units = round3(s.Units)
	f.Throttles, f.Rejected, f.Jobs = counts(s.Throttles), counts(s.Rejections), counts(s.Jobs)
	f.InFlight, f.Backlog = round3(s.InFlight), round3(s.Backlog)
	for _, m := range s.Members {
		f.Members = append(f.Members, liveMember{ID: m.ID, Rate: round3(m.Rate), Accepted: round3(m.Accepted), Share: round3(m.Share), Self: m.Self})
	}
	return f
}

// events streams frames until the client goes or the request's context
// ends.
func (h *LiveHandler) events(w http.ResponseWriter, r *http.Request) {
	if n := h.streams.Add(1); int(n) > h.cfg.MaxStreams {
		h.streams.Add(-1)
		w.Header().Set("Retry-After", "10")
		http.Error(w, "too many live pages open; try again later", http.StatusServiceUnavailable)
		return
	}
	defer h.streams.Add(-1)
	es, err := newEventStream(w, 2*time.Second)
	if err != nil {
		return
	}
	ctx := r.Context()
	tick := time.NewTicker(h.cfg.Interval)
	defer tick.Stop()
	for {
		if es.send("frame", h.frame(ctx)) != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
