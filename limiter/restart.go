package limiter

import "time"

// The restart after a pause (docs/limiter.md, "Slow start", rule 5): with
// slow_start, when a pause that the limiter's own throttle ordered ends,
// the units in flight grow from one request and double with every round
// trip (each answered success adds its units), as TCP restarts after a
// timeout. An API that still refuses then costs a few 429s per pause, not
// everything the full rate sends in one round trip.
type restartState struct {
	on       bool
	from     time.Duration // the end of the pause: requests sent from then on count
	until    time.Duration // it ends by itself then (the end of the pause + max_pause)
	window   float64       // units that may be in flight; 0 before the first grant
	inflight float64       // units granted since from and not answered yet
	// thresh is half the window at which a request of a restart was last
	// throttled; above it the window grows by one request per round trip.
	// It outlives the restart, until one ends by covering a round trip.
	thresh float64
	// hit: a throttle answered a request of this restart. streak counts
	// the restarts in a row that one did; it outlives the restart, until
	// one ends without (restartBackoff).
	hit    bool
	streak int
}

// startRestart starts a restart at the end of a pause.
func (c *Core) startRestart(end time.Duration) {
	if c.cfg.SlowStart {
		c.restart = restartState{on: true, from: end, until: end + c.cfg.MaxPause, thresh: c.restart.thresh, streak: c.restart.streak}
	}
}

// restartHolds reports whether the restart holds back a request of u
// units at t: other units are in flight and u would pass the window.
func (c *Core) restartHolds(t time.Duration, u float64) bool {
	rs := &c.restart
	return rs.on && t < rs.until && rs.inflight > 0 && rs.inflight+u > rs.window+unitEps
}

// headHeld reports whether the restart holds the head of the queue at t.
func (c *Core) headHeld(t time.Duration) bool {
	return c.qh < len(c.q) && c.restartHolds(t, c.q[c.qh].units)
}

// restartGrant counts a grant of u units at t in flight.
func (c *Core) restartGrant(t time.Duration, u float64) {
	rs := &c.restart
	if !rs.on {
		return
	}
	if t >= rs.until {
		rs.end()
		return
	}
	rs.inflight += u
	rs.window = max(rs.window, u)
}

// restartAnswer applies the outcome at t of a request of u units sent at
// sent: a request sent during the restart leaves the flight. A success
// widens the window by its units below the threshold, and above it by u
// per window's worth of units (one request per round trip); a throttle
// sets the threshold to half the window. The restart ends once the window
// holds what the rate grants in that request's round trip.
func (c *Core) restartAnswer(t, sent time.Duration, u float64, ok, throttled bool) {
	rs := &c.restart
	if !rs.on || sent < rs.from || !(u > 0) {
		return
	}
	rs.inflight = max(0, rs.inflight-u)
	if throttled {
		rs.thresh = max(rs.window/2, u)
		if !rs.hit {
			rs.hit = true
			rs.streak++
		}
	}
	if !ok {
		return
	}
	if rs.thresh == 0 || rs.window < rs.thresh {
		rs.window += u
	} else {
		rs.window += u * u / rs.window
	}
	if rs.window >= c.adapt.Rate/60*(t-sent).Seconds() {
		rs.on, rs.thresh, rs.streak = false, 0, 0
	} else if t >= rs.until {
		rs.end()
	}
}

// restartBackoff returns the wait that a throttle of a request sent at
// sent orders, for a Retry-After of retryAfter: when the request was sent
// during a restart, the API still refused after the pause it asked for,
// and the wait doubles with each restart in a row that a throttle
// interrupted (streak), up to max_pause; else retryAfter. A restart that
// ends by covering a round trip, or that reaches max_pause after its
// pause without a throttle, ends the streak.
func (c *Core) restartBackoff(sent, retryAfter time.Duration) time.Duration {
	rs := &c.restart
	if !rs.on || sent < rs.from || rs.streak == 0 || retryAfter <= 0 || retryAfter >= c.cfg.MaxPause {
		return retryAfter
	}
	w := retryAfter
	for range rs.streak {
		if w >= c.cfg.MaxPause/2 { // doubling no further: no overflow whatever max_pause is
			return c.cfg.MaxPause
		}
		w *= 2
	}
	return w
}

// end ends the restart at its time limit: a restart that no throttle
// interrupted ends the streak.
func (rs *restartState) end() {
	rs.on = false
	if !rs.hit {
		rs.streak = 0
	}
}
