// Package replay runs a trace of limiter events through a limiter.Core in
// virtual time and prints the Core's state after each event: the format
// of `sluice limiter replay` (docs/limiter.md, "sluice limiter replay").
//
// It is a user of the Core, not part of it: it drives the Core through its
// exported API alone (NewCore, Advance, Drain, Acquire, Observe, Cancel,
// SetInstanceCount) and reads the state it prints through the Core's
// accessors, so what a trace shows is what any caller of the Core gets.
package replay

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter"
)

// Replayer drives a limiter.Core through a trace in virtual time: the
// format of `sluice limiter replay` (docs/limiter.md, "sluice limiter
// replay").
//
// Input is JSON lines. The first is {"options": {...}}, which Decode turns
// into the limiter.Config of the replay. Each later line is an event with
// "at" in seconds from the start, never decreasing, and an "op":
//
//	{"at": 0, "op": "acquire", "id": "r1", "units": 2}      units default to 1
//	{"at": 3.5, "op": "throttle", "id": "r1", "retry_after": 4, "sent_at": 3.0}
//	{"at": 4, "op": "success", "id": "r1"}
//	{"at": 4, "op": "client_error", "id": "r1"}              counts as a success
//	{"at": 4, "op": "server_error", "id": "r1"}              changes nothing
//	{"at": 4, "op": "network_error", "id": "r1"}             changes nothing
//	{"at": 5, "op": "instances", "count": 3}
//	{"at": 6, "op": "cancel", "id": "r3"}
//	{"at": 7, "op": "tick"}
//
// Any outcome but network_error may carry a quota hint (see traceQuota):
//
//	{"at": 4, "op": "success", "id": "r1", "quota": {"limit": 600, "remaining": 40, "reset": 12, "window": 60}}
//
// A throttle's sent_at defaults to the request's grant time; retry_after is
// in seconds. Outcomes are accepted only for granted requests. An id may be
// acquired again (a retry) once its previous request no longer waits; later
// events then name the new request. Blank lines are skipped; unknown fields
// of an event are ignored.
//
// For each event Run writes one line, after the Core has done everything
// due up to and including at, then the event, then what the event made due
// at at:
//
//	{"at": 3.5, "op": "throttle", "rate": 420, "tokens": 0, "queue": 2, "paused_until": 7.5, "granted": [{"id": "r4", "at": 3.2}], "rejected": [{"id": "r9", "at": 3.4, "reason": "max_wait"}]}
//
// rate is this instance's rate in units per minute, tokens the bucket's
// level, paused_until null when not paused; once a quota hint was applied
// the line also has budget, budget_until and ceiling (null when none); and granted and rejected list
// the decisions since the previous line with their exact virtual times.
// Times are exact to the nanosecond; rate and tokens are rounded to 12
// significant digits.
type Replayer struct {
	// Decode turns the "options" object of the first line into a
	// limiter.Config. `sluice limiter replay` passes DecodeOptions, the config file's
	// decoder, so the names are those of the file's limiter section. A nil
	// Decode accepts only an empty object (or null) and replays with
	// limiter.DefaultConfig.
	Decode func(options []byte) (limiter.Config, error)
}

// Replay runs a trace with the default Replayer: its options must be empty.
func Replay(r io.Reader, w io.Writer) error { return Replayer{}.Run(r, w) }

// LineError is an error in a trace, at a line (counted from 1).
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("limiter: trace line %d: %v", e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

type traceEvent struct {
	At         *json.Number `json:"at"`
	Op         string       `json:"op"`
	ID         *string      `json:"id"`
	Units      *json.Number `json:"units"`
	RetryAfter *json.Number `json:"retry_after"`
	BeyondCap  *bool        `json:"beyond_cap"` // throttle: the wait asked for was beyond the cap
	SentAt     *json.Number `json:"sent_at"`
	Count      *json.Number `json:"count"`
	Quota      *traceQuota  `json:"quota"`
}

type traceReq struct {
	name    string
	id      uint64
	units   float64
	status  limiter.Status
	grantAt time.Time
}

// traceStart is the virtual instant that "at": 0 stands for.
var traceStart = time.Unix(0, 0).UTC()

// Run replays the trace read from r and writes the output lines to w. It
// stops at the first bad line with a *LineError; the lines before it have
// been written.
func (p Replayer) Run(r io.Reader, w io.Writer) error {
	bw := bufio.NewWriter(w)
	decode := p.Decode
	if decode == nil {
		decode = defaultOptions
	}
	err := p.run(r, bw, decode)
	if ferr := bw.Flush(); err == nil {
		err = ferr
	}
	return err
}

// state is the state of one Run.
type state struct {
	core    *limiter.Core
	line    int
	last    time.Duration
	byName  map[string]*traceReq
	byID    map[uint64]*traceReq
	decs    []limiter.Decision
	out     []byte
	granted []limiter.Decision
	reject  []limiter.Decision
}

func (p Replayer) run(r io.Reader, w *bufio.Writer, decode func([]byte) (limiter.Config, error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	rp := &state{byName: map[string]*traceReq{}, byID: map[uint64]*traceReq{}}
	for sc.Scan() {
		rp.line++
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		if rp.core == nil {
			cfg, err := decodeOptionsLine(text, decode)
			if err != nil {
				return &LineError{Line: rp.line, Err: err}
			}
			if rp.core, err = limiter.NewCore(cfg, traceStart); err != nil {
				return &LineError{Line: rp.line, Err: err}
			}
			continue
		}
		if err := rp.event(text); err != nil {
			return err
		}
		if _, err := w.Write(rp.out); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &LineError{Line: rp.line + 1, Err: err}
	}
	if rp.core == nil {
		return &LineError{Line: rp.line + 1, Err: errors.New(`missing the {"options": {...}} line`)}
	}
	return nil
}

func (rp *state) fail(format string, args ...any) error {
	return &LineError{Line: rp.line, Err: fmt.Errorf(format, args...)}
}

// event applies one event line and leaves its output line in rp.out.
func (rp *state) event(text []byte) error {
	var ev traceEvent
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&ev); err != nil {
		return rp.fail("bad JSON: %v", err)
	}
	if dec.More() {
		return rp.fail("bad JSON: more than one value on the line")
	}
	if ev.At == nil {
		return rp.fail(`missing "at"`)
	}
	atD, err := seconds(*ev.At)
	if err != nil || atD < 0 {
		return rp.fail(`"at": must be a number of seconds >= 0, got %s`, *ev.At)
	}
	if atD < rp.last {
		return rp.fail(`"at": %s is before the previous event (%v)`, *ev.At, rp.last.Seconds())
	}
	rp.last = atD
	now := traceStart.Add(atD)

	rp.granted, rp.reject = rp.granted[:0], rp.reject[:0]
	rp.core.Advance(now)
	rp.drain()
	if err := rp.apply(ev, now); err != nil {
		return err
	}
	rp.drain()
	rp.out = appendLine(rp.out[:0], ev, atD, rp.core, now, rp.granted, rp.reject, rp.byID)
	return nil
}

// note records a decision for the request it is about and the output.
func (rp *state) note(d limiter.Decision) {
	rq := rp.byID[d.ID]
	rq.status = d.Status
	if d.Status == limiter.Granted {
		rq.grantAt = d.At
		rp.granted = append(rp.granted, d)
	} else {
		rp.reject = append(rp.reject, d)
	}
}

func (rp *state) drain() {
	rp.decs = rp.core.Drain(rp.decs[:0])
	for _, d := range rp.decs {
		rp.note(d)
	}
}

func (rp *state) needID(ev traceEvent) (*traceReq, error) {
	if ev.ID == nil {
		return nil, rp.fail(`%s: missing "id"`, ev.Op)
	}
	rq, ok := rp.byName[*ev.ID]
	if !ok {
		return nil, rp.fail("%s: unknown id %q (never acquired)", ev.Op, *ev.ID)
	}
	return rq, nil
}

// apply performs the event's op at now.
func (rp *state) apply(ev traceEvent, now time.Time) error {
	switch ev.Op {
	case "acquire":
		return rp.acquire(ev, now)
	case "throttle":
		return rp.outcome(ev, now, call.Outcome{Kind: call.Throttle, Status: 429})
	case "success":
		return rp.outcome(ev, now, call.Outcome{Kind: call.Success, Status: 200})
	case "client_error":
		return rp.outcome(ev, now, call.Outcome{Kind: call.ClientError, Status: 400})
	case "server_error":
		return rp.outcome(ev, now, call.Outcome{Kind: call.ServerError, Status: 500})
	case "network_error":
		return rp.outcome(ev, now, call.Outcome{Kind: call.NetworkError})
	case "cancel":
		rq, err := rp.needID(ev)
		if err == nil {
			if d, ok := rp.core.Cancel(now, rq.id); ok {
				rp.note(d)
			}
		}
		return err
	case "instances":
		if ev.Count == nil {
			return rp.fail(`instances: missing "count"`)
		}
		f, cerr := ev.Count.Float64()
		n := int(f)
		if cerr != nil || float64(n) != f || n < 1 {
			return rp.fail(`instances: "count": must be an integer >= 1, got %s`, *ev.Count)
		}
		return rp.core.SetInstanceCount(now, n)
	case "tick":
		return nil
	case "":
		return rp.fail(`missing "op"`)
	}
	return rp.fail("unknown op %q", ev.Op)
}

func (rp *state) acquire(ev traceEvent, now time.Time) error {
	if ev.ID == nil {
		return rp.fail(`acquire: missing "id"`)
	}
	if old, dup := rp.byName[*ev.ID]; dup && old.status == limiter.Waiting {
		return rp.fail("acquire: id %q is already waiting", *ev.ID)
	}
	units := 1.0
	if ev.Units != nil {
		var err error
		units, err = ev.Units.Float64()
		if err != nil || units < 0 || math.IsInf(units, 0) {
			return rp.fail(`acquire: "units": must be a number >= 0, got %s`, *ev.Units)
		}
	}
	d := rp.core.Acquire(now, units)
	rq := &traceReq{name: *ev.ID, id: d.ID, units: units, status: limiter.Waiting}
	rp.byName[rq.name], rp.byID[d.ID] = rq, rq
	if d.Status != limiter.Waiting {
		rp.note(d)
	}
	return nil
}

// outcome applies the outcome o of a granted request, with the event's
// retry_after and sent_at (throttles) and quota (any response).
func (rp *state) outcome(ev traceEvent, now time.Time, o call.Outcome) error {
	rq, err := rp.needID(ev)
	if err != nil {
		return err
	}
	if rq.status != limiter.Granted {
		return rp.fail("%s: request %q was not granted (%s)", ev.Op, rq.name, rq.status)
	}
	sent := rq.grantAt
	if o.Kind == call.Throttle {
		o.WaitBeyondCap = ev.BeyondCap != nil && *ev.BeyondCap
		if ev.RetryAfter != nil {
			ra, err := seconds(*ev.RetryAfter)
			if err != nil {
				return rp.fail(`"retry_after": must be a number of seconds, got %s`, *ev.RetryAfter)
			}
			o.RetryAfter = max(ra, 0)
		}
		if ev.SentAt != nil {
			s, err := seconds(*ev.SentAt)
			if err != nil {
				return rp.fail(`"sent_at": must be a number of seconds, got %s`, *ev.SentAt)
			}
			sent = traceStart.Add(s)
		}
	}
	if ev.Quota != nil {
		if o.Kind == call.NetworkError {
			return rp.fail(`network_error: "quota": a network error has no response to carry one`)
		}
		q, err := ev.Quota.quota()
		if err != nil {
			return rp.fail(`%s: "quota": %v`, ev.Op, err)
		}
		o.Quota = q
	}
	rp.core.Observe(now, sent, rq.units, o)
	return nil
}

func decodeOptionsLine(text []byte, decode func([]byte) (limiter.Config, error)) (limiter.Config, error) {
	var first map[string]json.RawMessage
	if err := json.Unmarshal(text, &first); err != nil {
		return limiter.Config{}, fmt.Errorf(`first line must be {"options": {...}}: %v`, err)
	}
	raw, ok := first["options"]
	if !ok {
		return limiter.Config{}, errors.New(`first line must be {"options": {...}}`)
	}
	for k := range first {
		if k != "options" {
			return limiter.Config{}, fmt.Errorf(`first line: unknown key %q (want only "options")`, k)
		}
	}
	return decode(raw)
}

// defaultOptions is the Decode of a Replayer that has none: only empty
// options, and limiter.DefaultConfig.
func defaultOptions(raw []byte) (limiter.Config, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return limiter.Config{}, errors.New("must be an object")
	}
	if len(m) != 0 {
		return limiter.Config{}, errors.New("options need a decoder (Replayer.Decode); without one only {} is accepted")
	}
	return limiter.DefaultConfig(), nil
}

// seconds converts a JSON number of seconds to a Duration, rounded to the
// nanosecond.
func seconds(n json.Number) (time.Duration, error) {
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.Abs(f) > 1e9 {
		return 0, fmt.Errorf("bad number of seconds %s", n)
	}
	return time.Duration(math.Round(f * 1e9)), nil
}

func appendLine(b []byte, ev traceEvent, at time.Duration, c *limiter.Core, now time.Time, granted, rejected []limiter.Decision, byID map[uint64]*traceReq) []byte {
	b = append(b, `{"at": `...)
	b = appendSeconds(b, at)
	b = append(b, `, "op": `...)
	b = strconv.AppendQuote(b, ev.Op)
	b = append(b, `, "rate": `...)
	b = appendValue(b, c.Rate())
	b = append(b, `, "tokens": `...)
	b = appendValue(b, snapZero(c.Tokens(now)))
	b = append(b, `, "queue": `...)
	b = strconv.AppendInt(b, int64(c.QueueLen()), 10)
	b = append(b, `, "paused_until": `...)
	if p, ok := c.PausedUntil(); ok {
		b = appendSeconds(b, p.Sub(traceStart))
	} else {
		b = append(b, "null"...)
	}
	b = appendQuota(b, c)
	b = append(b, `, "granted": `...)
	b = appendDecisions(b, granted, byID)
	b = append(b, `, "rejected": `...)
	b = appendDecisions(b, rejected, byID)
	return append(b, "}\n"...)
}

// appendDecisions writes ds as a JSON list of {"id", "at"} objects, with
// the "reason" of each one that was not granted.
func appendDecisions(b []byte, ds []limiter.Decision, byID map[uint64]*traceReq) []byte {
	b = append(b, '[')
	for i, d := range ds {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = append(b, `{"id": `...)
		b = appendString(b, byID[d.ID].name)
		b = append(b, `, "at": `...)
		b = appendSeconds(b, d.At.Sub(traceStart))
		if d.Status != limiter.Granted {
			b = append(b, `, "reason": `...)
			b = appendString(b, string(d.Reason))
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendString(b []byte, s string) []byte {
	j, _ := json.Marshal(s) // a string always marshals
	return append(b, j...)
}

// appendSeconds writes an exact nanosecond time as seconds.
func appendSeconds(b []byte, d time.Duration) []byte {
	if d < 0 {
		b = append(b, '-')
		d = -d
	}
	b = strconv.AppendInt(b, int64(d/time.Second), 10)
	if ns := int64(d % time.Second); ns != 0 {
		frac := strings.TrimRight(fmt.Sprintf("%09d", ns), "0")
		b = append(b, '.')
		b = append(b, frac...)
	}
	return b
}

// snapZero shows a token level within 1e-7 units of zero as zero: grant
// times are exact to the nanosecond, so the bucket may be a few
// nanoseconds' accrual off zero right after a grant.
func snapZero(v float64) float64 {
	if math.Abs(v) < 1e-7 {
		return 0
	}
	return v
}

// appendValue writes a rate or a token level, rounded to 12 significant
// digits so that floating-point noise (419.99999999999994) does not show.
func appendValue(b []byte, v float64) []byte {
	if math.Abs(v) < 1e-9 {
		v = 0
	}
	r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err == nil {
		v = r
	}
	return strconv.AppendFloat(b, v, 'f', -1, 64)
}
