package web

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/sim"
)

// Bounds of the simulator page's controls.
const (
	MinSpeed = 0.25 // virtual seconds per real second
	MaxSpeed = 100
	// DropFraction and DropFor are the noisy neighbour of the "Drop the
	// quota" button: another client takes half of the quota for 60 s.
	DropFraction = 0.5
	DropFor      = time.Minute
	// Bounds of the sliders: the quota in units per window, the demand in
	// units per minute.
	MinQuota  = 100
	MaxQuota  = 20000
	MaxDemand = 20000
)

// SimConfig configures a SimServer.
type SimConfig struct {
	// Start is the run a new session starts with; Reset keeps its options
	// and events and takes the mode, quota, demand and instance count from
	// the controls. Default: sim.Scenario("first-throttle").
	Start sim.Config
	// Speed is how much faster than real time a new session runs. Default
	// 10, in [MinSpeed, MaxSpeed].
	Speed float64
	// FrameInterval is the real time between two frames of a stream.
	// Default 80ms (12.5 frames a second); at most 100ms.
	FrameInterval time.Duration
	// MaxStep is the most real time one frame accounts for, so that a
	// stalled stream does not jump ahead. Default 250ms.
	MaxStep time.Duration
	// MaxSessions bounds the sessions (streams) running at once. Default 8.
	MaxSessions int
	// Log reports sessions opening and closing. Default: discard.
	Log *slog.Logger
}

// DefaultSimConfig returns the defaults.
func DefaultSimConfig() SimConfig {
	start, _ := sim.Scenario(sim.ScenarioFirstThrottle)
	return SimConfig{
		Start:         start,
		Speed:         10,
		FrameInterval: 80 * time.Millisecond,
		MaxStep:       250 * time.Millisecond,
		MaxSessions:   8,
	}
}

// Validate reports every field that breaks its rule.
func (c SimConfig) Validate() error {
	var errs []error
	if err := c.Start.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("web: start: %w", err))
	}
	if !(c.Speed >= MinSpeed && c.Speed <= MaxSpeed) {
		errs = append(errs, fmt.Errorf("web: speed: must be in [%v, %v], got %v", MinSpeed, MaxSpeed, c.Speed))
	}
	if c.FrameInterval <= 0 || c.FrameInterval > 100*time.Millisecond {
		errs = append(errs, fmt.Errorf("web: frame_interval: must be in (0, 100ms] (10 frames a second or more), got %v", c.FrameInterval))
	}
	if c.MaxStep < c.FrameInterval {
		errs = append(errs, fmt.Errorf("web: max_step: must be >= frame_interval (%v), got %v", c.FrameInterval, c.MaxStep))
	}
	if c.MaxSessions < 1 {
		errs = append(errs, fmt.Errorf("web: max_sessions: must be >= 1, got %d", c.MaxSessions))
	}
	return errors.Join(errs...)
}

// SimServer serves the simulator page: GET / (the page), GET /static/…
// (its files), GET /api/stream (a session's frames as Server-Sent Events)
// and POST /api/control (a control, applied to a session). See the package
// documentation.
type SimServer struct {
	cfg SimConfig
	log *slog.Logger
	mux *http.ServeMux

	mu       sync.Mutex
	sessions map[string]*session
}

// NewSimServer returns a SimServer for cfg.
func NewSimServer(cfg SimConfig) (*SimServer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &SimServer{cfg: cfg, log: cfg.Log, sessions: map[string]*session{}}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux = http.NewServeMux()
	s.mux.Handle("GET /{$}", page("sim.html"))
	s.mux.Handle("GET /static/", http.StripPrefix("/static/", files()))
	s.mux.HandleFunc("GET /api/stream", s.stream)
	s.mux.HandleFunc("POST /api/control", s.control)
	return s, nil
}

func (s *SimServer) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Sessions returns the number of sessions running.
func (s *SimServer) Sessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.sessions)
}

// session is one page's simulation. Its stream's goroutine owns everything
// but id, cmds and done.
type session struct {
	id   string
	cmds chan command
	done chan struct{}

	base   sim.Config // what Reset restarts from
	live   *sim.Live
	speed  float64
	paused bool
	calls  []sim.Request
}

type command struct {
	Session string          `json:"session"`
	Op      string          `json:"op"`
	Value   json.RawMessage `json:"value"`
	reply   chan error
}

func (s *SimServer) open() (*session, error) {
	var b [16]byte
	rand.Read(b[:])
	live, err := sim.NewLive(s.cfg.Start)
	if err != nil {
		return nil, err
	}
	ss := &session{
		id:    hex.EncodeToString(b[:]),
		cmds:  make(chan command),
		done:  make(chan struct{}),
		base:  s.cfg.Start,
		live:  live,
		speed: s.cfg.Speed,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.sessions) >= s.cfg.MaxSessions {
		return nil, errBusy
	}
	s.sessions[ss.id] = ss
	return ss, nil
}

var errBusy = errors.New("web: too many simulator sessions")

func (s *SimServer) close(ss *session) {
	s.mu.Lock()
	delete(s.sessions, ss.id)
	s.mu.Unlock()
	close(ss.done)
}

// stream runs one session for as long as its client listens.
func (s *SimServer) stream(w http.ResponseWriter, r *http.Request) {
	ss, err := s.open()
	if errors.Is(err, errBusy) {
		w.Header().Set("Retry-After", "10")
		http.Error(w, "too many simulator sessions; try again later", http.StatusServiceUnavailable)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer s.close(ss)
	s.log.Debug("simulator session open", "session", ss.id[:8])
	defer s.log.Debug("simulator session closed", "session", ss.id[:8])

	es, err := newEventStream(w, 2*time.Second)
	if err != nil {
		return
	}
	if err := es.send("session", sessionInfo{
		Session: ss.id, Modes: sim.Modes, MaxInstances: sim.MaxLiveInstances,
		MinSpeed: MinSpeed, MaxSpeed: MaxSpeed, MinQuota: MinQuota, MaxQuota: MaxQuota, MaxDemand: MaxDemand,
		FrameInterval: s.cfg.FrameInterval.Seconds(),
	}); err != nil {
		return
	}
	if es.send("frame", ss.frame()) != nil {
		return
	}
	tick := time.NewTicker(s.cfg.FrameInterval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case c := <-ss.cmds:
			c.reply <- ss.apply(c, s.cfg)
		case now := <-tick.C:
			step := min(now.Sub(last), s.cfg.MaxStep)
			last = now
			if !ss.paused {
				ss.live.Advance(time.Duration(float64(step) * ss.speed))
			}
		}
		if es.send("frame", ss.frame()) != nil {
			return
		}
	}
}

type sessionInfo struct {
	Session       string     `json:"session"`
	Modes         []sim.Mode `json:"modes"`
	MaxInstances  int        `json:"max_instances"`
	MinSpeed      float64    `json:"min_speed"`
	MaxSpeed      float64    `json:"max_speed"`
	MinQuota      float64    `json:"min_quota"`
	MaxQuota      float64    `json:"max_quota"`
	MaxDemand     float64    `json:"max_demand"`
	FrameInterval float64    `json:"frame_interval"`
}

// control hands a control to its session and answers with the result.
func (s *SimServer) control(w http.ResponseWriter, r *http.Request) {
	securityHeaders(w.Header())
	var c command
	dec := json.NewDecoder(io.LimitReader(r.Body, 4096))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		writeJSONError(w, http.StatusBadRequest, fmt.Errorf("web: control: %w", err))
		return
	}
	s.mu.Lock()
	ss := s.sessions[c.Session]
	s.mu.Unlock()
	if ss == nil {
		writeJSONError(w, http.StatusNotFound, errors.New("web: no such session (the page's stream has ended; reload)"))
		return
	}
	c.reply = make(chan error, 1)
	select {
	case ss.cmds <- c:
	case <-ss.done:
		writeJSONError(w, http.StatusNotFound, errors.New("web: the session has ended"))
		return
	case <-r.Context().Done():
		return
	}
	if err := <-c.reply; err != nil {
		writeJSONError(w, http.StatusBadRequest, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	io.WriteString(w, `{"ok":true}`+"\n")
}

func writeJSONError(w http.ResponseWriter, code int, err error) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
}

// apply runs one control on the session.
func (ss *session) apply(c command, cfg SimConfig) error {
	number := func(lo, hi float64) (float64, error) {
		var v float64
		if err := json.Unmarshal(c.Value, &v); err != nil {
			return 0, fmt.Errorf("web: %s: value must be a number, got %s", c.Op, c.Value)
		}
		if !(v >= lo && v <= hi) {
			return 0, fmt.Errorf("web: %s: must be in [%v, %v], got %v", c.Op, lo, hi, v)
		}
		return v, nil
	}
	text := func() (string, error) {
		var v string
		if err := json.Unmarshal(c.Value, &v); err != nil {
			return "", fmt.Errorf("web: %s: value must be a string, got %s", c.Op, c.Value)
		}
		return v, nil
	}
	switch c.Op {
	case "pause":
		var v bool
		if err := json.Unmarshal(c.Value, &v); err != nil {
			return fmt.Errorf("web: pause: value must be true or false, got %s", c.Value)
		}
		ss.paused = v
		return nil
	case "speed":
		v, err := number(MinSpeed, MaxSpeed)
		if err == nil {
			ss.speed = v
		}
		return err
	case "reset":
		return ss.restart(ss.settings())
	case "mode":
		v, err := text()
		if err != nil {
			return err
		}
		m, err := sim.ParseMode(v)
		if err != nil {
			return fmt.Errorf("web: mode: %w", err)
		}
		c := ss.settings()
		c.Mode = m
		return ss.restart(c)
	case "quota":
		v, err := number(MinQuota, MaxQuota)
		if err != nil {
			return err
		}
		return ss.live.SetQuota(v) // units per window, as the model API counts
	case "demand":
		v, err := number(0, MaxDemand)
		if err != nil {
			return err
		}
		return ss.live.SetDemand(v)
	case "instances":
		v, err := number(1, sim.MaxLiveInstances)
		if err != nil {
			return err
		}
		return ss.live.SetInstances(int(v))
	case "add":
		return ss.live.SetInstances(min(ss.live.Instances()+1, sim.MaxLiveInstances))
	case "remove":
		return ss.live.SetInstances(max(ss.live.Instances()-1, 1))
	case "drop":
		return ss.live.DropQuota(DropFraction, DropFor)
	case "scenario":
		v, err := text()
		if err != nil {
			return err
		}
		return ss.scenario(v, cfg)
	default:
		return fmt.Errorf("web: op: unknown control %q", c.Op)
	}
}

// scenario runs one of the reference simulator's "Try these".
func (ss *session) scenario(name string, cfg SimConfig) error {
	switch name {
	case sim.ScenarioFirstThrottle:
		// Reset to the reference run: two instances, a quota of 3000 and a
		// demand of 2000 each, AIMD from 1500.
		c, _ := sim.Scenario(sim.ScenarioFirstThrottle)
		c.Seed = cfg.Start.Seed
		ss.base = c
		return ss.restart(c)
	case sim.ScenarioNoisyNeighbor:
		return ss.live.DropQuota(DropFraction, DropFor)
	case sim.ScenarioThreeInstances:
		return ss.live.SetInstances(min(ss.live.Instances()+1, sim.MaxLiveInstances))
	case sim.ScenarioNoLimiter:
		c := ss.settings()
		c.Mode = sim.ModeNone
		return ss.restart(c)
	default:
		return fmt.Errorf("web: scenario: must be one of %s, %s, %s or %s, got %q",
			sim.ScenarioFirstThrottle, sim.ScenarioNoisyNeighbor, sim.ScenarioThreeInstances, sim.ScenarioNoLimiter, name)
	}
}

// settings is the base run with the mode, quota, demand and instances the
// controls set now.
func (ss *session) settings() sim.Config {
	now := ss.live.Config()
	c := ss.base
	c.Mode = now.Mode
	c.Quota = now.Quota
	c.Demand = now.Demand
	c.Instances = now.Instances
	return c
}

func (ss *session) restart(c sim.Config) error {
	live, err := sim.NewLive(c)
	if err != nil {
		return fmt.Errorf("web: %w", err)
	}
	ss.live = live
	ss.calls = ss.calls[:0]
	return nil
}

// maxFrameCalls and maxFrameQueue bound what a frame lists.
const (
	maxFrameCalls = 300
	maxFrameQueue = 100
)

type simFrame struct {
	T         num         `json:"t"` // virtual seconds
	Mode      sim.Mode    `json:"mode"`
	Paused    bool        `json:"paused"`
	Speed     num         `json:"speed"`
	Window    num         `json:"window"`     // seconds
	BaseQuota num         `json:"base_quota"` // the hidden quota, units per window
	Quota     num         `json:"quota"`      // the part left to the simulated clients
	DropEnds  num         `json:"drop_ends"`  // null when the quota is not dropped
	Demand    num         `json:"demand"`     // units per minute per instance
	Used      num         `json:"used"`       // units accepted in the trailing window
	UsedBy    []costUnits `json:"used_by_cost"`
	Sent      num         `json:"sent"` // units that reached the API in the trailing window
	Instances []simInst   `json:"instances"`
	SumRate   num         `json:"sum_rate"` // null in mode none
	Queue     int         `json:"queue"`
	Requests  int         `json:"requests"`
	Throttled int         `json:"throttled"`
	Rejected  int         `json:"rejected"`
	GaveUp    int         `json:"gave_up"`
	P95Wait   num         `json:"p95_wait"` // seconds
	Calls     []simCall   `json:"calls"`
	LeftOut   int         `json:"calls_left_out"`
	Costs     []num       `json:"costs"`
}

type costUnits struct {
	Cost  num `json:"cost"`
	Units num `json:"units"`
}

type simInst struct {
	Index       int   `json:"i"`
	Rate        num   `json:"rate"`
	Tokens      num   `json:"tokens"`
	Capacity    num   `json:"capacity"`
	Paused      bool  `json:"paused"`
	PausedUntil num   `json:"paused_until"`
	Queue       int   `json:"queue"`
	QueueCosts  []num `json:"queue_costs"` // the first few in line
}

type simCall struct {
	T    num  `json:"t"`
	I    int  `json:"i"`
	Cost num  `json:"c"`
	OK   bool `json:"ok"`
}

// frame reads the session's state now.
func (ss *session) frame() simFrame {
	st := ss.live.State()
	f := simFrame{
		T:         round3(st.T.Seconds()),
		Mode:      st.Mode,
		Paused:    ss.paused,
		Speed:     num(ss.speed),
		Window:    num(st.Window.Seconds()),
		BaseQuota: round3(st.BaseQuota),
		Quota:     round3(st.Quota),
		DropEnds:  num(math.NaN()),
		Demand:    num(st.Demand),
		Used:      round3(st.Used),
		Sent:      round3(st.Sent),
		SumRate:   round3(st.SumRate),
		Queue:     st.Queue,
		Requests:  st.Requests,
		Throttled: st.Throttled,
		Rejected:  st.Rejected,
		GaveUp:    st.GaveUp,
		P95Wait:   round3(st.P95Wait.Seconds()),
	}
	if st.DropEnds > 0 {
		f.DropEnds = round3(st.DropEnds.Seconds())
	}
	for _, u := range st.UsedByCost {
		f.UsedBy = append(f.UsedBy, costUnits{num(u.Cost), round3(u.Units)})
		f.Costs = append(f.Costs, num(u.Cost))
	}
	f.Instances = make([]simInst, 0, len(st.Instances))
	for _, in := range st.Instances {
		si := simInst{
			Index: in.Index, Rate: round3(in.Rate), Tokens: round3(in.Tokens), Capacity: round3(in.Capacity),
			Paused: in.Paused, PausedUntil: num(math.NaN()), Queue: len(in.Queue),
		}
		if in.Paused {
			si.PausedUntil = round3(in.PausedUntil.Seconds())
		}
		for _, c := range in.Queue[:min(len(in.Queue), maxFrameQueue)] {
			si.QueueCosts = append(si.QueueCosts, num(c))
		}
		f.Instances = append(f.Instances, si)
	}
	ss.calls = ss.live.Requests(ss.calls[:0])
	calls := ss.calls
	if len(calls) > maxFrameCalls {
		f.LeftOut = len(calls) - maxFrameCalls
		calls = calls[len(calls)-maxFrameCalls:]
	}
	f.Calls = make([]simCall, 0, len(calls))
	for _, c := range calls {
		f.Calls = append(f.Calls, simCall{T: round3(c.At.Seconds()), I: c.Instance, Cost: num(c.Cost), OK: c.OK})
	}
	return f
}
