package web

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// pipeWriter is a ResponseWriter whose body the test reads as it is
// written, as a browser reads an event stream.
type pipeWriter struct {
	h    http.Header
	w    *io.PipeWriter
	mu   sync.Mutex
	code int
}

func newPipeWriter() (*pipeWriter, *bufio.Reader) {
	r, w := io.Pipe()
	return &pipeWriter{h: http.Header{}, w: w}, bufio.NewReader(r)
}

func (p *pipeWriter) Header() http.Header { return p.h }
func (p *pipeWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	if p.code == 0 {
		p.code = http.StatusOK
	}
	p.mu.Unlock()
	return p.w.Write(b)
}
func (p *pipeWriter) WriteHeader(code int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.code = code
}
func (p *pipeWriter) Flush() {}

// readEvent reads the next event: its name and data.
func readEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var name, data string
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the stream: %v", err)
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && name != "":
			return name, data
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = strings.TrimPrefix(line, "data: ")
		}
	}
}

type testFrame struct {
	T         float64  `json:"t"`
	Mode      string   `json:"mode"`
	Paused    bool     `json:"paused"`
	Speed     float64  `json:"speed"`
	BaseQuota float64  `json:"base_quota"`
	Quota     float64  `json:"quota"`
	DropEnds  *float64 `json:"drop_ends"`
	Demand    float64  `json:"demand"`
	Used      float64  `json:"used"`
	SumRate   *float64 `json:"sum_rate"`
	Throttled int      `json:"throttled"`
	Instances []struct {
		I    int      `json:"i"`
		Rate *float64 `json:"rate"`
	} `json:"instances"`
	Calls []struct {
		T  float64 `json:"t"`
		C  float64 `json:"c"`
		OK bool    `json:"ok"`
	} `json:"calls"`
}

func frame(t *testing.T, r *bufio.Reader) testFrame {
	t.Helper()
	name, data := readEvent(t, r)
	if name != "frame" {
		t.Fatalf("event %q, want frame", name)
	}
	var f testFrame
	if err := json.Unmarshal([]byte(data), &f); err != nil {
		t.Fatalf("frame %s: %v", data, err)
	}
	return f
}

// control posts a control to srv and returns the status and body.
func control(srv http.Handler, body string) (int, string) {
	rec := httptest.NewRecorder()
	srv.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/api/control", strings.NewReader(body)))
	return rec.Code, rec.Body.String()
}

// TestSimStream: a stream gets its own session, frames at the frame
// interval with virtual time at speed × real time, the controls change the
// session between frames, and the session ends with the request.
func TestSimStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultSimConfig()
		cfg.Speed = 10
		srv, err := NewSimServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		pw, r := newPipeWriter()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.ServeHTTP(pw, httptest.NewRequest(http.MethodGet, "/api/stream", nil).WithContext(ctx))
		}()
		name, data := readEvent(t, r)
		var info struct{ Session string }
		if err := json.Unmarshal([]byte(data), &info); name != "session" || err != nil || len(info.Session) != 32 {
			t.Fatalf("first event %s %s (%v), want a session", name, data, err)
		}
		if ct := pw.h.Get("Content-Type"); ct != "text/event-stream" {
			t.Errorf("Content-Type %q", ct)
		}
		f0 := frame(t, r)
		if f0.T != 0 || f0.Mode != "aimd" || len(f0.Instances) != 2 || f0.BaseQuota != 3000 || f0.Demand != 2000 {
			t.Fatalf("first frame %+v, want t 0, aimd, 2 instances, quota 3000, demand 2000", f0)
		}
		checkStreamPace(t, r)

		st := &simStream{t: t, srv: srv, r: r, session: info.Session}
		checkStreamControls(st)
		checkStreamRefusesBadControls(st)

		cancel()
		// The handler may be writing a frame: keep reading until it ends.
		go io.Copy(io.Discard, r)
		<-done
		pw.w.Close()
		if n := srv.Sessions(); n != 0 {
			t.Errorf("%d sessions after the stream ended", n)
		}
		if code, _ := control(srv, `{"session":"`+info.Session+`","op":"reset"}`); code != 404 {
			t.Errorf("control of an ended session: %d, want 404", code)
		}
	})
}

// checkStreamPace reads one second of real time of the stream at speed 10:
// 12 frames (80ms apart), 10 virtual seconds; then calls in the next 10
// frames.
func checkStreamPace(t *testing.T, r *bufio.Reader) {
	t.Helper()
	start := time.Now()
	var last testFrame
	n := 0
	for time.Since(start) < time.Second {
		last = frame(t, r)
		n++
	}
	if n < 10 {
		t.Errorf("%d frames in a second, want 10 or more", n)
	}
	if math.Abs(last.T-10*time.Since(start).Seconds()) > 1e-6 {
		t.Errorf("virtual time %v after %v of real time at speed 10", last.T, time.Since(start))
	}
	calls := 0
	for range 10 {
		calls += len(frame(t, r).Calls)
	}
	if calls == 0 {
		t.Error("no calls in 8 virtual seconds")
	}
}

// simStream is an open event stream of a SimServer and its session.
type simStream struct {
	t       *testing.T
	srv     *SimServer
	r       *bufio.Reader
	session string
}

// post sends a control (ID in body stands for the session) while reading
// frames, as a browser does, and reads the frame right after it: a control
// is applied between two frames and shows in the next.
func (st *simStream) post(body string) (int, string) {
	t, srv, r := st.t, st.srv, st.r
	var code int
	var out string
	got := make(chan struct{})
	go func() {
		code, out = control(srv, strings.ReplaceAll(body, "ID", st.session))
		close(got)
	}()
	for {
		select {
		case <-got:
			frame(t, r) // the frame right after the control
			return code, out
		default:
			frame(t, r)
		}
	}
}

// checkStreamControls applies each control and checks that it shows in
// the next frame.
func checkStreamControls(st *simStream) {
	t, r, post := st.t, st.r, st.post
	t.Helper()
	if code, body := post(`{"session":"ID","op":"drop","value":true}`); code != 200 {
		t.Fatalf("drop: %d %s", code, body)
	}
	if f := frame(t, r); f.DropEnds == nil || f.Quota != 1500 {
		t.Errorf("after drop: quota %v, drop ends %v", f.Quota, f.DropEnds)
	}
	if code, body := post(`{"session":"ID","op":"drop","value":true}`); code != 400 || !strings.Contains(body, "already dropped") {
		t.Errorf("second drop: %d %s", code, body)
	}
	if code, _ := post(`{"session":"ID","op":"pause","value":true}`); code != 200 {
		t.Fatal("pause failed")
	}
	a, b := frame(t, r), frame(t, r)
	if !a.Paused || a.T != b.T {
		t.Errorf("paused, yet the clock went %v → %v", a.T, b.T)
	}
	post(`{"session":"ID","op":"pause","value":false}`)
	post(`{"session":"ID","op":"add","value":true}`)
	if f := frame(t, r); len(f.Instances) != 3 {
		t.Errorf("after add: %d instances", len(f.Instances))
	}
	post(`{"session":"ID","op":"scenario","value":"no-limiter"}`)
	if f := frame(t, r); f.Mode != "none" || f.T > 5 || len(f.Instances) != 3 || f.SumRate != nil || f.Instances[0].Rate != nil {
		t.Errorf("after no-limiter: %+v, want mode none restarted with 3 instances and no rates", f)
	}
	post(`{"session":"ID","op":"quota","value":5000}`)
	post(`{"session":"ID","op":"demand","value":100}`)
	post(`{"session":"ID","op":"speed","value":50}`)
	if f := frame(t, r); f.BaseQuota != 5000 || f.Demand != 100 || f.Speed != 50 {
		t.Errorf("after quota, demand, speed: %v %v %v", f.BaseQuota, f.Demand, f.Speed)
	}
	post(`{"session":"ID","op":"scenario","value":"first-throttle"}`)
	if f := frame(t, r); f.Mode != "aimd" || f.BaseQuota != 3000 || f.Demand != 2000 || len(f.Instances) != 2 {
		t.Errorf("after first-throttle: %+v, want the reference run", f)
	}
}

// checkStreamRefusesBadControls checks that a bad control gets a 400 with
// the reason, an unknown session a 404 and an unknown field a 400.
func checkStreamRefusesBadControls(st *simStream) {
	t, srv, post := st.t, st.srv, st.post
	t.Helper()
	for _, bad := range []string{
		`{"session":"ID","op":"quota","value":0}`,
		`{"session":"ID","op":"quota","value":"x"}`,
		`{"session":"ID","op":"speed","value":1000}`,
		`{"session":"ID","op":"mode","value":"fast"}`,
		`{"session":"ID","op":"instances","value":17}`,
		`{"session":"ID","op":"scenario","value":"ramp"}`,
		`{"session":"ID","op":"explode"}`,
	} {
		if code, body := post(bad); code != 400 || !strings.Contains(body, "web: ") {
			t.Errorf("%s: %d %s, want 400 with the reason", bad, code, body)
		}
	}
	if code, _ := control(srv, `{"session":"nope","op":"reset"}`); code != 404 {
		t.Errorf("unknown session: %d, want 404", code)
	}
	if code, _ := control(srv, `{"session":"x","op":"reset","extra":1}`); code != 400 {
		t.Errorf("unknown field: %d, want 400", code)
	}
}

// TestSimSessionsBounded: streams beyond MaxSessions are refused.
func TestSimSessionsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultSimConfig()
		cfg.MaxSessions = 1
		srv, err := NewSimServer(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		pw, r := newPipeWriter()
		done := make(chan struct{})
		go func() {
			defer close(done)
			srv.ServeHTTP(pw, httptest.NewRequest(http.MethodGet, "/api/stream", nil).WithContext(ctx))
		}()
		readEvent(t, r)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/api/stream", nil))
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("second stream: %d, want 503 with Retry-After", rec.Code)
		}
		cancel()
		go io.Copy(io.Discard, r)
		<-done
		pw.w.Close()
	})
}

func TestSimConfigValidate(t *testing.T) {
	c := DefaultSimConfig()
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	c.Speed = 0
	c.FrameInterval = 200 * time.Millisecond
	c.MaxSessions = 0
	c.Start.Quota = -1
	err := c.Validate()
	for _, want := range []string{"speed", "frame_interval", "max_sessions", "start: sim: quota"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate: %v, want it to name %s", err, want)
		}
	}
}

// TestLiveStream: the live page streams the source's snapshot every
// interval, with unknown figures as null, and bounds its streams.
func TestLiveStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls int
		src := func(ctx context.Context) (LiveSnapshot, error) {
			calls++
			return LiveSnapshot{
				Rate: 600, Accepted: math.NaN(), Estimate: math.NaN(), NoEstimate: "not_yet", Burst: 0, Tokens: 3.5, Capacity: 100, Queue: 2, Paused: true, PauseLeft: 4 * time.Second,
				Instances: 2, Share: 0.5, Units: 42, Throttles: map[string]float64{"429": 3},
				Jobs:     map[string]float64{"succeeded": 40, "dead_lettered": 1},
				InFlight: 5, Backlog: math.NaN(),
				Members: []Member{{ID: "a", Rate: 600, Accepted: 590, Share: 0.5, Self: true}, {ID: "b", Rate: 580, Accepted: 575.5, Share: 0.5}},
			}, nil
		}
		cfg := DefaultLiveConfig()
		cfg.MaxStreams = 1
		cfg.Title = "w1"
		h, err := NewLiveHandler(src, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		pw, r := newPipeWriter()
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.ServeHTTP(pw, httptest.NewRequest(http.MethodGet, "/events", nil).WithContext(ctx))
		}()
		start := time.Now()
		var data string
		for range 3 {
			_, data = readEvent(t, r)
		}
		if d := time.Since(start); d != time.Second {
			t.Errorf("3 frames took %v, want 1s (every 500ms)", d)
		}
		var f map[string]any
		if err := json.Unmarshal([]byte(data), &f); err != nil {
			t.Fatal(err)
		}
		if f["rate"] != 600.0 || f["backlog"] != nil || f["pause_left"] != 4.0 || f["title"] != "w1" || len(f["members"].([]any)) != 2 {
			t.Errorf("frame %s", data)
		}
		// Sending and accepted side by side; an accepted rate not measured
		// is null, not 0; a paused limiter has no burst to send.
		if _, ok := f["accepted"]; !ok || f["accepted"] != nil || f["burst"] != 0.0 {
			t.Errorf("accepted %v, burst %v; want null, 0: %s", f["accepted"], f["burst"], data)
		}
		// No estimate yet: null, not 0, and why.
		if _, ok := f["estimate"]; !ok || f["estimate"] != nil || f["estimate_none"] != "not_yet" {
			t.Errorf("estimate %v (%v); want null, not_yet: %s", f["estimate"], f["estimate_none"], data)
		}
		if !strings.Contains(data, `{"id":"b","rate":580,"accepted":575.5,"share":0.5,"self":false}`) {
			t.Errorf("members without their accepted rates: %s", data)
		}
		if !strings.Contains(data, `"jobs":[{"name":"dead_lettered","value":1},{"name":"succeeded","value":40}]`) {
			t.Errorf("jobs not sorted by outcome in %s", data)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/events", nil))
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("second stream: %d, want 503", rec.Code)
		}
		cancel()
		go io.Copy(io.Discard, r)
		<-done
		pw.w.Close()
		if calls != 3 {
			t.Errorf("source read %d times for 3 frames", calls)
		}
	})
	if _, err := NewLiveHandler(nil, DefaultLiveConfig()); err == nil {
		t.Error("NewLiveHandler(nil): no error")
	}
}

// TestPagesServed: both pages and their files are served from the
// embedded assets, with a policy that lets them load nothing from
// elsewhere, and no file refers to another site.
func TestPagesServed(t *testing.T) {
	sim, err := NewSimServer(DefaultSimConfig())
	if err != nil {
		t.Fatal(err)
	}
	live, err := NewLiveHandler(func(context.Context) (LiveSnapshot, error) { return LiveSnapshot{}, nil }, DefaultLiveConfig())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		h          http.Handler
		path, want string
	}{
		{sim, "/", "text/html"},
		{sim, "/static/sim.js", "text/javascript"},
		{sim, "/static/chart.js", "text/javascript"},
		{sim, "/static/style.css", "text/css"},
		{live, "/", "text/html"},
		{live, "/static/live.js", "text/javascript"},
	} {
		rec := httptest.NewRecorder()
		tc.h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if rec.Code != 200 || !strings.HasPrefix(rec.Header().Get("Content-Type"), tc.want) {
			t.Errorf("%s: %d %s, want 200 %s", tc.path, rec.Code, rec.Header().Get("Content-Type"), tc.want)
		}
		if csp := rec.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'self'") {
			t.Errorf("%s: Content-Security-Policy %q", tc.path, csp)
		}
	}
	rec := httptest.NewRecorder()
	sim.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/static/nope.js", nil))
	if rec.Code != 404 {
		t.Errorf("a missing file: %d", rec.Code)
	}
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	fs.WalkDir(Assets(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := fs.ReadFile(Assets(), path)
		if m := external.Find(b); m != nil {
			t.Errorf("%s refers to another site: %s", path, m)
		}
		return nil
	})
}

// TestLiveFrameEstimate: the frame carries the limiter's estimate of what
// the API accepts beside the two rates: its value when there is one, else
// null (never a 0, which would read as an API that accepts nothing) with
// the reason the source gave.
func TestLiveFrameEstimate(t *testing.T) {
	for _, c := range []struct {
		est  float64
		none string
		want string
	}{
		{2940.12345, "", `"estimate":2940.123,"estimate_none":""`},
		{math.NaN(), "fleet", `"estimate":null,"estimate_none":"fleet"`},
		{0, "", `"estimate":null,"estimate_none":""`},
	} {
		src := func(context.Context) (LiveSnapshot, error) {
			return LiveSnapshot{Rate: 2881.3, Accepted: 2900, Estimate: c.est, NoEstimate: c.none, Backlog: math.NaN()}, nil
		}
		h, err := NewLiveHandler(src, DefaultLiveConfig())
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(h.frame(t.Context()))
		if err != nil {
			t.Fatal(err)
		}
		if want := `"rate":2881.3,"accepted":2900,` + c.want; !strings.Contains(string(b), want) {
			t.Errorf("estimate %v (%q): frame %s, want %s", c.est, c.none, b, want)
		}
	}
	// The source failed: nothing is known.
	h, err := NewLiveHandler(func(context.Context) (LiveSnapshot, error) { return LiveSnapshot{}, errors.New("gone") }, DefaultLiveConfig())
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(h.frame(t.Context())); !strings.Contains(string(b), `"estimate":null`) {
		t.Errorf("a failed read: %s, want the estimate null", b)
	}
}
