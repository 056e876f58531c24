package limiter

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/call"
	"github.com/sluicehq/sluice/limiter/control"
	"github.com/sluicehq/sluice/limiter/fleet"
)

// TestEstimateReadsTheLaw: Core.Estimate is the law's bound and nothing
// else. There is none (0) in startup; after a 429 it is what the API was
// seen to accept, here one request in three sent at 600 a minute (about
// 200 a minute); a quota header makes it the quota. Reading it changes
// nothing.
func TestEstimateReadsTheLaw(t *testing.T) {
	c, err := NewCore(DefaultConfig(), t0)
	if err != nil {
		t.Fatal(err)
	}
	ok := call.Outcome{Kind: call.Success, Status: 200}
	for k := 1; k <= 300; k++ { // 30 s at 600 a minute: one unit every 100 ms, none waits
		now := at(float64(k) / 10)
		d := c.Acquire(now, 1)
		if d.Status != Granted {
			t.Fatalf("unit %d at %v: %v, want granted at once", k, secs(now), d.Status)
		}
		if k%3 == 0 {
			c.Observe(now.Add(50*time.Millisecond), d.At, 1, ok)
		}
	}
	if got := c.Estimate(); got != 0 || !c.Adapt().SlowStart || c.Rate() != 600 {
		t.Fatalf("in startup: estimate %v (rate %v, slow start %v), want none, 600, true", got, c.Rate(), c.Adapt().SlowStart)
	}
	d := c.Acquire(at(30.1), 1)
	c.Observe(at(30.15), d.At, 1, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
	got := c.Estimate()
	if got != c.law.Bound() || got < 190 || got > 250 {
		t.Fatalf("after the 429: estimate %v, law's bound %v; want the bound, about 200 (the API accepted 1 in 3 of 600 a minute)", got, c.law.Bound())
	}
	if rate := c.Rate(); rate != lawMargin*got {
		t.Errorf("rate %v, want the law's margin under the estimate %v", rate, got)
	}
	if c.Estimate() != got || c.law.Bound() != got {
		t.Error("reading the estimate changed it")
	}

	// A quota header of 450 a minute, a minute after the 429 (a 429 that
	// no header explained holds the headers' raise back that long): the
	// estimate is the quota.
	d = c.Acquire(at(95), 1)
	c.Observe(at(95.05), d.At, 1, call.Outcome{Kind: call.Success, Status: 200,
		Quota: call.Quota{Limit: 450, Window: time.Minute}})
	if got := c.Estimate(); got != 450 {
		t.Errorf("after a quota header of 450 a minute: estimate %v, want 450", got)
	}

	// Following a fleet, the estimate is the fleet's bound times the
	// share (here the whole budget), and the rate the fleet's; leading
	// again, the law goes on from the fleet's state it followed last.
	fleet := fleet.State{Adapt: control.Adapt{Rate: 392}, Law: &control.LawState{Rate: 392, Bound: 400, Ceil: 400, Moved: at(90), Cut: at(90), Open: at(91)}}
	c.Follow(at(96), fleet, time.Time{})
	if got := c.Estimate(); got != 400 || !c.Following() || c.Rate() != 392 {
		t.Errorf("following a fleet: estimate %v, rate %v, following %v; want the fleet's 400, 392, true", got, c.Rate(), c.Following())
	}
	c.Lead(at(97))
	if got := c.Estimate(); got != 400 || c.Rate() != 392 || c.Following() {
		t.Errorf("leading again: estimate %v, rate %v; want the fleet's 400 and 392 it leads from", got, c.Rate())
	}
}

// TestEstimateNone: the classic rules and disabled mode keep no estimate,
// whatever the API answers.
func TestEstimateNone(t *testing.T) {
	for name, f := range map[string]func(*Config){
		"classic":  func(c *Config) { c.SlowStart = false },
		"disabled": func(c *Config) { c.Disabled = true },
	} {
		c, err := NewCore(cfgWith(f), t0)
		if err != nil {
			t.Fatal(err)
		}
		d := c.Acquire(at(1), 1)
		c.Observe(at(1.1), d.At, 1, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second,
			Quota: call.Quota{Limit: 450, Window: time.Minute}})
		if got := c.Estimate(); got != 0 {
			t.Errorf("%s: estimate %v after a 429 and a quota header, want none (0)", name, got)
		}
	}
}

// TestStatsEstimate: a Limiter's snapshot carries the Core's estimate
// and whether it follows a fleet.
func TestStatsEstimate(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newTestLimiter(t, func(c *Config) { c.SlowStart = true })
		if st := l.Stats(); st.Estimate != 0 || st.Following {
			t.Fatalf("at the start: estimate %v, following %v; want none, false", st.Estimate, st.Following)
		}
		tk, err := l.Wait(t.Context(), 1)
		if err != nil {
			t.Fatal(err)
		}
		l.Observe(tk, call.Outcome{Kind: call.Throttle, Status: 429, RetryAfter: time.Second})
		st := l.Stats()
		l.mu.Lock()
		want := l.core.law.Bound()
		l.mu.Unlock()
		if st.Estimate != want || want <= 0 {
			t.Errorf("after a 429: Stats.Estimate %v, want the law's bound %v", st.Estimate, want)
		}
		l.Follow(fleet.State{Adapt: control.Adapt{Rate: 882}, Law: &control.LawState{Rate: 882, Bound: 900, Ceil: 900}}, time.Time{})
		if st, want := l.Stats(), l.Part().Of(900); st.Estimate != want || !st.Following {
			t.Errorf("following: estimate %v, following %v; want the fleet's bound's part %v, true", st.Estimate, st.Following, want)
		}
	})
}
