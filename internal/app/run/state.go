package run

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/internal/app/config"
)

// WorkerState is what GET /state on metrics.listen answers: the worker's
// own view, which the queue cannot give (`sluice status` shows it beside
// the queue's counts).
type WorkerState struct {
	ID       string `json:"id"`
	InFlight int64  `json:"in_flight"`
	// Paused is true while a Retry-After pause holds every grant, until
	// PausedUntil.
	Paused      bool      `json:"paused"`
	PausedUntil time.Time `json:"paused_until,omitzero"`
	// Rate is the rate the limiter sends at, units per minute.
	Rate float64 `json:"rate_units_per_minute"`
	// Accepted is the units the API accepted from this worker in the last
	// minute; null when the limiter does not measure it (limiter.slow_start
	// off, or disabled).
	Accepted *float64 `json:"accepted_units_per_minute"`
	// Estimate is what the limiter's adaptive law estimates the API
	// accepts from this worker, units per minute; null when it has none,
	// and then NoEstimate says why.
	Estimate   *float64   `json:"estimate_units_per_minute"`
	NoEstimate NoEstimate `json:"estimate_none,omitempty"`
	// Burst is the units the limiter would send at once now; null when it
	// is disabled (no bound).
	Burst *float64 `json:"burst_units"`
	// Disabled is true when the limiter only records (limiter.disabled).
	Disabled bool `json:"limiter_disabled,omitempty"`
}

// workerState reads the state of the worker that p probes.
func workerState(p Probe, id string) WorkerState {
	st, ws, pace := p.Limiter(), p.Worker(), p.Pace()
	s := WorkerState{ID: id, InFlight: ws.InFlight, Paused: st.Paused, Rate: pace.Sending,
		Accepted: finite(pace.Accepted), Estimate: finite(pace.Estimate), NoEstimate: pace.NoEstimate,
		Burst: finite(pace.Burst), Disabled: st.Disabled}
	if st.Paused {
		s.PausedUntil = st.PausedUntil.UTC()
	}
	return s
}

// Pace is the pace the worker reported: NaN for a figure it did not report
// (an older worker reports none of them), and no bound to the burst of a
// disabled limiter.
func (s WorkerState) Pace() Pace {
	p := Pace{Sending: s.Rate, Accepted: math.NaN(), Estimate: math.NaN(), NoEstimate: s.NoEstimate, Burst: math.NaN()}
	if s.Accepted != nil {
		p.Accepted = *s.Accepted
	}
	if s.Estimate != nil {
		p.Estimate = *s.Estimate
	}
	switch {
	case s.Disabled:
		p.Burst = math.Inf(1)
	case s.Burst != nil:
		p.Burst = *s.Burst
	}
	return p
}

// finite returns &v, or nil when v is NaN or infinite (null in JSON).
func finite(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// serveState answers GET /state with state() as JSON.
func serveState(state func() WorkerState) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		json.NewEncoder(w).Encode(state())
	}
}

// stateTimeout bounds ReadWorkerState.
const stateTimeout = time.Second

// ReadWorkerState asks the worker whose ops endpoints listen on m.Listen
// for its state (GET /state). It returns nil and no error when there is
// nothing to ask: metrics.listen is off or a free port (":0"), or no
// worker answers there. An address of every interface is asked on
// localhost.
func ReadWorkerState(ctx context.Context, m config.Metrics) (*WorkerState, error) {
	host, port, err := net.SplitHostPort(m.Listen)
	if m.Listen == config.OpsListenOff || err != nil || port == "0" {
		return nil, nil
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	ctx, cancel := context.WithTimeout(ctx, stateTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(host, port)+"/state", nil)
	if err != nil {
		return nil, nil
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil // no worker there
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil // not a sluice worker, or an older one
	}
	var s WorkerState
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&s); err != nil {
		return nil, fmt.Errorf("status: the worker on %s answered /state with %v", m.Listen, err)
	}
	return &s, nil
}
