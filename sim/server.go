package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/call"
)

// Request headers the model API reads.
const (
	// CostHeader gives a call's cost in units. It wins over the job type.
	CostHeader = "X-Cost"
	// TypeHeader names the job's type, priced by ServerConfig.TypeCosts.
	// XTypeHeader is read when it is absent.
	TypeHeader  = "Sluice-Type"
	XTypeHeader = "X-Job-Type"
	// JobIDHeader carries the job's id, counted to find duplicates.
	// XJobIDHeader is read when it is absent.
	JobIDHeader  = "Sluice-Job-Id"
	XJobIDHeader = "X-Job-Id"
)

// ServerConfig configures the model API server.
type ServerConfig struct {
	// API is the quota's model: APIWindow (the default when empty), a
	// sliding Window; APILeaky, a gateway's leaky bucket: Quota units per
	// Window leak out at a steady rate and BurstUnits may go ahead;
	// APIFixed, a Fixed window that resets; APIBucket, Envoy's token
	// Bucket of BurstUnits tokens refilled every FillInterval;
	// APIWeighted, HAProxy's Weighted two-period counter.
	API API
	// BurstUnits is, with APILeaky, the units a call may go ahead of the
	// steady rate, >= 0 (default 5); with APIBucket, the bucket's size, at
	// least one fill's tokens.
	BurstUnits   float64
	FillInterval time.Duration      // APIBucket: how often tokens are added; default 1s
	CountRefused bool               // APIWindow, APIFixed, APIWeighted: a refused call counts against the quota too
	Delay        bool               // APILeaky: an accepted call ahead of the steady rate reaches the API and is answered at its turn (nginx without nodelay)
	NoRetryAfter bool               // a 429 names no Retry-After, in its header or its body
	Quota        float64            // units per Window; default 3000
	Window       time.Duration      // default 60s
	DefaultCost  float64            // units of a call with no cost header and no priced type; default 1
	TypeCosts    map[string]float64 // units per job type
	// Headers are the quota headers sent with every call's answer (200 and
	// 429): the window's state after the call (SetQuotaHeaders). The
	// zero value sends none.
	Headers call.RateLimitHeaders
	// Log receives the id of every accepted call that has one, a line
	// each, in the order of acceptance. Nil writes nothing.
	Log io.Writer
	// Logger reports failures to write Log. Default: discard.
	Logger *slog.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
}

// DefaultServerConfig returns a quota of 3000 units per 60 s and a cost of 1
// per call.
func DefaultServerConfig() ServerConfig {
	return ServerConfig{API: APIWindow, BurstUnits: 5, FillInterval: DefaultFillInterval, Quota: 3000, Window: DefaultWindowSpan, DefaultCost: 1}
}

// Validate reports every field that breaks its rule.
func (c ServerConfig) Validate() error {
	var errs []error
	if !(c.Quota > 0) || math.IsInf(c.Quota, 0) {
		errs = append(errs, fmt.Errorf("sim: quota: must be > 0, got %v", c.Quota))
	}
	if c.Window <= 0 {
		errs = append(errs, fmt.Errorf("sim: window: must be > 0, got %v", c.Window))
	}
	if err := c.Headers.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("sim: headers: %w", err))
	}
	errs = append(errs, c.apiSpec().validate()...)
	if !(c.DefaultCost >= 0) || math.IsInf(c.DefaultCost, 0) {
		errs = append(errs, fmt.Errorf("sim: default_cost: must be >= 0, got %v", c.DefaultCost))
	}
	for typ, v := range c.TypeCosts {
		if typ == "" {
			errs = append(errs, errors.New("sim: type_costs: empty type name"))
		}
		if !(v >= 0) || math.IsInf(v, 0) {
			errs = append(errs, fmt.Errorf("sim: type_costs[%s]: must be >= 0, got %v", typ, v))
		}
	}
	return errors.Join(errs...)
}

// Stats is the JSON of GET /stats.
type Stats struct {
	AcceptedUnits    float64  `json:"accepted_units"`
	AcceptedRequests int64    `json:"accepted_requests"`
	Throttled        int64    `json:"throttled"`
	WindowUnits      float64  `json:"window_units"` // units accepted in the trailing window
	Quota            float64  `json:"quota"`
	WindowSeconds    float64  `json:"window_s"`
	TooLarge         int64    `json:"too_large"`    // calls refused with 413: cost above the quota
	BadRequests      int64    `json:"bad_requests"` // calls refused with 400: a bad cost header
	Jobs             JobStats `json:"jobs"`
}

// JobStats counts accepted calls by job id.
type JobStats struct {
	Distinct   int64 `json:"distinct"`   // ids accepted at least once
	Duplicates int64 `json:"duplicates"` // accepted calls whose id had been accepted before
	WithoutID  int64 `json:"without_id"` // accepted calls with no id header
}

// Server is the model API over HTTP: each call costs units from the hidden
// quota of a sliding Window, a leaky bucket, a fixed window or a token
// bucket (ServerConfig.API). A call that fits is answered 200; one that
// does not gets 429 with a Retry-After in whole seconds (rounded up). With ServerConfig.Headers every answer to a call
// carries the quota headers of that format. GET /stats returns Stats and GET /jobs the number
// of accepted calls per job id. Every other request is a call, whatever its
// method and path. The accounting is exact under concurrent calls: one
// mutex orders them.
type Server struct {
	cfg ServerConfig
	now func() time.Time
	log *slog.Logger

	mu    sync.Mutex
	quota quotaModel
	acc   Window // every accepted call, with no quota
	stats Stats
	jobs  map[string]int64
}

var _ http.Handler = (*Server)(nil)

// NewServer returns a model API server.
func NewServer(cfg ServerConfig) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, now: cfg.Now, log: cfg.Logger, jobs: map[string]int64{}}
	if s.now == nil {
		s.now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	spec := cfg.apiSpec()
	s.quota = spec.model(s.now())
	s.acc = Window{Span: cfg.Window, Quota: math.Inf(1)}
	s.stats.Quota = cfg.Quota
	s.stats.WindowSeconds = cfg.Window.Seconds()
	return s, nil
}

type callReply struct {
	Accepted   bool    `json:"accepted"`
	Units      float64 `json:"units"`
	RetryAfter int     `json:"retry_after,omitempty"`
	Error      string  `json:"error,omitempty"`
}

// accept counts a call of cost units with the job id id (none when empty)
// that the API accepted at now, and logs the id. s.mu is held.
func (s *Server) accept(now time.Time, id string, cost float64) {
	s.acc.Take(now, cost)
	s.stats.AcceptedUnits += cost
	s.stats.AcceptedRequests++
	if id == "" {
		s.stats.Jobs.WithoutID++
		return
	}
	s.jobs[id]++
	if s.jobs[id] == 1 {
		s.stats.Jobs.Distinct++
	} else {
		s.stats.Jobs.Duplicates++
	}
	if s.cfg.Log != nil {
		if _, err := io.WriteString(s.cfg.Log, id+"\n"); err != nil {
			s.log.Error("sim: writing the job log", "err", err)
		}
	}
}

func (c ServerConfig) apiSpec() apiSpec {
	return apiSpec{api: c.API, quota: c.Quota, span: c.Window, burst: c.BurstUnits, fill: c.FillInterval, countRefused: c.CountRefused, delay: c.Delay, headers: c.Headers}
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		switch r.URL.Path {
		case "/stats":
			writeJSON(w, http.StatusOK, s.Stats())
			return
		case "/jobs":
			writeJSON(w, http.StatusOK, s.Jobs())
			return
		}
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(r.Body, 1<<20))
	cost, err := s.cost(r.Header)
	if err != nil {
		s.mu.Lock()
		s.stats.BadRequests++
		s.mu.Unlock()
		writeJSON(w, http.StatusBadRequest, callReply{Error: err.Error()})
		return
	}
	id := r.Header.Get(JobIDHeader)
	if id == "" {
		id = r.Header.Get(XJobIDHeader)
	}
	s.mu.Lock()
	now := s.now()
	ok, wait := s.take(now, cost)
	var held time.Duration
	if h, holds := s.quota.(holder); ok && holds {
		held = h.Held()
	}
	if st, has := s.quota.(stater); has {
		SetQuotaHeaders(w.Header(), s.cfg.Headers, st.State(now), now)
	}
	switch {
	case ok && held == 0:
		s.accept(now, id, cost)
	case ok:
	case wait < 0:
		s.stats.TooLarge++
	default:
		s.stats.Throttled++
	}
	s.mu.Unlock()
	if held > 0 {
		// Its turn, as a gateway that delays calls answers: the call
		// reaches the API then, or never if its client gives up first.
		t := time.NewTimer(held)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
		s.mu.Lock()
		s.accept(s.now(), id, cost)
		s.mu.Unlock()
	}
	switch {
	case ok:
		writeJSON(w, http.StatusOK, callReply{Accepted: true, Units: cost})
	case wait < 0:
		writeJSON(w, http.StatusRequestEntityTooLarge, callReply{Units: cost, Error: fmt.Sprintf("cost %v is above what the api ever accepts at once (quota %v)", cost, s.cfg.Quota)})
	case s.cfg.NoRetryAfter:
		writeJSON(w, http.StatusTooManyRequests, callReply{Units: cost, Error: "quota exceeded"})
	default:
		ra := RetryAfterSeconds(wait)
		w.Header().Set("Retry-After", strconv.Itoa(ra))
		writeJSON(w, http.StatusTooManyRequests, callReply{Units: cost, RetryAfter: ra, Error: "quota exceeded"})
	}
}

// take decides a call of cost units at now by the API's rule; a cost
// above the quota (or the bucket's size) never fits: 413.
func (s *Server) take(now time.Time, cost float64) (bool, time.Duration) {
	if cost > s.cfg.Quota+windowEps {
		return false, -1
	}
	return s.quota.Take(now, cost)
}

// cost returns the units of a call: the cost header, else the price of its
// job type, else the default.
func (s *Server) cost(h http.Header) (float64, error) {
	if v := h.Get(CostHeader); v != "" {
		c, err := strconv.ParseFloat(v, 64)
		if err != nil || !(c >= 0) || math.IsInf(c, 0) {
			return 0, fmt.Errorf("sim: %s: want a number >= 0, got %q", CostHeader, v)
		}
		return c, nil
	}
	typ := h.Get(TypeHeader)
	if typ == "" {
		typ = h.Get(XTypeHeader)
	}
	if c, ok := s.cfg.TypeCosts[typ]; ok && typ != "" {
		return c, nil
	}
	return s.cfg.DefaultCost, nil
}

// Stats returns the counters and the units in the window now.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.WindowUnits = s.acc.Used(s.now())
	return st
}

// Jobs returns the number of accepted calls per job id.
func (s *Server) Jobs() map[string]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.jobs)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
