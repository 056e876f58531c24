package sim

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

// takeStep is a call of units at an instant and the model's answer.
type takeStep struct {
	at    time.Duration
	units float64
	ok    bool
	wait  time.Duration
}

func runSteps(t *testing.T, name string, m quotaModel, steps []takeStep) {
	t.Helper()
	for i, st := range steps {
		ok, wait := m.Take(epoch.Add(st.at), st.units)
		if ok != st.ok || wait != st.wait {
			t.Fatalf("%s, step %d (%v units at %v): %v, wait %v; want %v, wait %v", name, i, st.units, st.at, ok, wait, st.ok, st.wait)
		}
	}
}

const ms = time.Millisecond

// The fixed window opens at the first call after the last one ended, holds
// Quota units, and resets all at once Span after it opened; a refusal waits
// for the reset.
func TestFixed(t *testing.T) {
	f := &Fixed{Span: 10 * time.Second, Quota: 5}
	runSteps(t, "fixed", f, []takeStep{
		{time.Second, 2, true, 0}, // opens the window [1s, 11s)
		{2 * time.Second, 3, true, 0},
		{3 * time.Second, 1, false, 8 * time.Second},
		{10999 * ms, 1, false, ms},
		{11 * time.Second, 0, true, 0},
		{11 * time.Second, 6, false, -1}, // above the quota: never fits
		{11 * time.Second, 4, true, 0},   // the window [11s, 21s)
		{20 * time.Second, 2, false, time.Second},
		{35 * time.Second, 5, true, 0}, // nothing from 21s to 35s: [35s, 45s)
	})
	st := f.State(epoch.Add(37 * time.Second))
	if st.Remaining != 0 || st.Reset != 8*time.Second || st.Limit != 5 || st.Window != 10*time.Second {
		t.Fatalf("state at 37s: %+v", st)
	}
	if st := f.State(epoch.Add(45 * time.Second)); st.Remaining != 5 || st.Reset != 0 {
		t.Fatalf("state at 45s, no window open: %+v", st)
	}
	if got := f.Used(epoch.Add(44 * time.Second)); got != 5 {
		t.Fatalf("used at 44s = %v, want 5", got)
	}

	// Refused calls count: 4 + 2 (refused) leaves no room for 1 more.
	cr := &Fixed{Span: 10 * time.Second, Quota: 5, CountRefused: true}
	runSteps(t, "fixed, refused count", cr, []takeStep{
		{0, 4, true, 0},
		{time.Second, 2, false, 9 * time.Second},
		{2 * time.Second, 1, false, 8 * time.Second},
		{10 * time.Second, 5, true, 0},
	})
	plain := &Fixed{Span: 10 * time.Second, Quota: 5}
	runSteps(t, "fixed", plain, []takeStep{
		{0, 4, true, 0},
		{time.Second, 2, false, 9 * time.Second},
		{2 * time.Second, 1, true, 0},
	})
}

// Envoy's bucket: full at Origin, Quota × FillInterval / Span tokens at
// every fill, never above Burst; a refusal waits for the fill that makes
// room.
func TestBucket(t *testing.T) {
	b := &Bucket{Span: time.Minute, Quota: 120, Burst: 5, FillInterval: time.Second, Origin: epoch} // 2 tokens a second
	runSteps(t, "bucket", b, []takeStep{
		{0, 5, true, 0},
		{500 * ms, 1, false, 500 * ms},   // the fill at 1s
		{500 * ms, 5, false, 2500 * ms},  // three fills: at 3s
		{999 * ms, 1, false, ms},         // still no fill
		{time.Second, 2, true, 0},        // the fill at 1s
		{1999 * ms, 1, false, ms},        // the next at 2s
		{10 * time.Second, 6, false, -1}, // above the bucket: never fits
		{10 * time.Second, 5, true, 0},   // 9 fills, capped at 5
		{10 * time.Second, 1, false, time.Second},
	})
	b.setQuota(epoch.Add(10500*ms), 60) // 1 token a fill from the fill at 11s
	runSteps(t, "bucket at 60/min", b, []takeStep{
		{11 * time.Second, 2, false, time.Second},
		{12 * time.Second, 2, true, 0},
	})
	if got := b.Tokens(epoch.Add(15 * time.Second)); got != 3 {
		t.Fatalf("tokens at 15s = %v, want 3", got)
	}
	// With no Origin the first call starts it, full.
	late := &Bucket{Quota: 60, Burst: 2}
	runSteps(t, "bucket from its first call", late, []takeStep{
		{5500 * ms, 2, true, 0},
		{6 * time.Second, 1, false, 500 * ms},
		{6500 * ms, 1, true, 0},
	})
}

// The weighted counter reads curr + prev × the share of the period left; a
// refusal waits until prev's weight, or in the next period curr's, has run
// down far enough; two idle periods start it afresh.
func TestWeighted(t *testing.T) {
	w := &Weighted{Span: 10 * time.Second, Quota: 10}
	runSteps(t, "weighted", w, []takeStep{
		{0, 8, true, 0},                               // the period [0s, 10s)
		{time.Second, 4, false, 11500 * ms},           // in [10s, 20s) once 8 × (1 − x/10s) ≤ 6: at 12.5s
		{12500 * ms, 4, true, 0},                      // 8 × 0.75 + 4 = 10
		{13 * time.Second, 2, false, 2 * time.Second}, // 4 + 8 × (1 − x/10s) ≤ 8 from 15s
		{15 * time.Second, 2, true, 0},
		{15 * time.Second, 11, false, -1}, // above the quota: never fits
		{35 * time.Second, 10, true, 0},   // two periods idle: [35s, 45s) with nothing before
	})
	for _, c := range []struct {
		at   time.Duration
		want float64
	}{{44 * time.Second, 10}, {45 * time.Second, 10}, {50 * time.Second, 5}, {55 * time.Second, 0}} {
		if got := w.Count(epoch.Add(c.at)); got != c.want {
			t.Fatalf("count at %v = %v, want %v", c.at, got, c.want)
		}
	}

	// Refused calls count: the refused 4 make 12 to weigh down to 6, and
	// the refused 3 at 16s leave no room before the next period.
	for _, c := range []struct {
		refused bool
		steps   []takeStep
	}{
		{false, []takeStep{
			{0, 8, true, 0},
			{time.Second, 4, false, 11500 * ms},
			{12500 * ms, 4, true, 0},
			{13 * time.Second, 3, false, 3250 * ms}, // 4 + 8 × (1 − x/10s) ≤ 7 from 16.25s
		}},
		{true, []takeStep{
			{0, 8, true, 0},
			{time.Second, 4, false, 14 * time.Second}, // 12 × (1 − x/10s) ≤ 6 from 15s
			{15 * time.Second, 4, true, 0},            // 12 × 0.5 + 4 = 10
			{16 * time.Second, 3, false, 4 * time.Second},
			{20 * time.Second, 3, true, 0}, // the 7 of [10s, 20s) weigh 7 at 20s
		}},
	} {
		runSteps(t, "weighted", &Weighted{Span: 10 * time.Second, Quota: 10, CountRefused: c.refused}, c.steps)
	}
}

// With CountRefused a refused call's units enter the window, and its wait
// counts them until they leave.
func TestWindowCountRefused(t *testing.T) {
	for _, c := range []struct {
		refused bool
		steps   []takeStep
		used    float64 // at 10s, after the steps
	}{
		{false, []takeStep{
			{0, 2, true, 0},
			{time.Second, 2, false, 9 * time.Second}, // the 2 units at 0s leave at 10s
			{10 * time.Second, 3, true, 0},
		}, 3},
		{true, []takeStep{
			{0, 2, true, 0},
			{time.Second, 2, false, 10 * time.Second},      // and its own 2 units at 11s
			{10 * time.Second, 2, false, 10 * time.Second}, // 2 refused at 1s and its own 2: 3 must leave
			{10 * time.Second, 4, false, -1},
		}, 4},
	} {
		w := &Window{Span: 10 * time.Second, Quota: 3, CountRefused: c.refused}
		runSteps(t, "window", w, c.steps)
		if got := w.Used(epoch.Add(10 * time.Second)); got != c.used {
			t.Fatalf("refused counted %v: used %v, want %v", c.refused, got, c.used)
		}
	}
}

func TestAPIValidate(t *testing.T) {
	for _, c := range []struct {
		spec apiSpec
		want string
	}{
		{apiSpec{api: "token"}, `unknown api "token"`},
		{apiSpec{api: APILeaky, burst: -1}, "burst_units"},
		{apiSpec{api: APILeaky, countRefused: true}, "count_refused"},
		{apiSpec{api: APIBucket, countRefused: true, quota: 60, span: time.Minute, fill: time.Second, burst: 1}, "count_refused"},
		{apiSpec{api: APIBucket, quota: 600, span: time.Minute, fill: time.Second, burst: 9}, "at least one fill's tokens (quota × fill_interval / window = 10)"},
		{apiSpec{api: APIBucket, quota: 600, span: time.Minute, burst: 10}, "fill_interval"},
		{apiSpec{api: APIBucket, quota: 600, span: time.Minute, fill: time.Second, burst: 10, headers: call.RateLimitHeaders{Format: call.RateLimitIETF}}, "headers"},
		{apiSpec{api: APIWeighted, countRefused: true, headers: call.RateLimitHeaders{Format: call.RateLimitX}}, "headers"},
		{apiSpec{api: APIWindow, delay: true}, "delay"},
		{apiSpec{api: APIBucket, delay: true, quota: 600, span: time.Minute, fill: time.Second, burst: 10}, "delay"},
	} {
		errs := c.spec.validate()
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), c.want) {
			t.Errorf("%+v: %v, want one error naming %q", c.spec, errs, c.want)
		}
	}
	for _, ok := range []apiSpec{
		{api: APIFixed, countRefused: true, headers: call.RateLimitHeaders{Format: call.RateLimitX}},
		{api: APIWeighted, countRefused: true},
		{api: APILeaky, delay: true},
		{api: APIBucket, quota: 600, span: time.Minute, fill: time.Second, burst: 10},
		{},
	} {
		if errs := ok.validate(); len(errs) != 0 {
			t.Errorf("%+v: %v", ok, errs)
		}
	}
}

// With Delay the leaky bucket holds an accepted call for its excess over
// the rate, as nginx limit_req without nodelay delays a request; a refused
// call leaves the last hold as it was, and without Delay nothing is held.
func TestLeakyDelay(t *testing.T) {
	l := &Leaky{Span: time.Second, Quota: 10, Burst: 3, Delay: true} // 10 units/s
	for i, st := range []struct {
		at   time.Duration
		ok   bool
		held time.Duration
	}{
		{0, true, 100 * ms},
		{0, true, 200 * ms},
		{0, true, 300 * ms},
		{0, false, 300 * ms},       // 4 units ahead: refused, the last hold stands
		{250 * ms, true, 150 * ms}, // 3 − 2.5 + 1 = 1.5 ahead
		{5 * time.Second, true, 0}, // leaked out: on schedule
		{5 * time.Second, true, 100 * ms},
	} {
		if ok, _ := l.Take(epoch.Add(st.at), 1); ok != st.ok || l.Held() != st.held {
			t.Fatalf("step %d at %v: %v, held %v; want %v, held %v", i, st.at, ok, l.Held(), st.ok, st.held)
		}
	}
	l.Delay = false
	if l.Held() != 0 {
		t.Fatalf("without Delay: held %v", l.Held())
	}
}
