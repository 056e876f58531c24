package call

import (
	"flag"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rlNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func TestParseIETF(t *testing.T) {
	ietf := RateLimitHeaders{Format: RateLimitIETF}
	tests := []struct {
		name string
		h    http.Header
		want Quota
	}{
		{"none", hdr(), Quota{}},
		{"policy and ratelimit", hdr("RateLimit-Policy", `"default";q=100;w=60`, "RateLimit", `"default";r=50;t=30`),
			Quota{Limit: 100, Window: sec(60), Remaining: 50, HasRemaining: true, Reset: sec(30)}},
		{"token names, spaces, extra params", hdr("RateLimit-Policy", `default;q=100;w=60;qu="requests";pk=:YWJj:`, "RateLimit", `default;r=50;t=30;pk=:YWJj:`),
			Quota{Limit: 100, Window: sec(60), Remaining: 50, HasRemaining: true, Reset: sec(30)}},
		{"older policy form", hdr("RateLimit-Policy", `10;w=1, 50;w=60`),
			Quota{Limit: 50, Window: sec(60)}},
		{"most restrictive of several", hdr(
			"RateLimit-Policy", `"burst";q=100;w=60, "day";q=1000;w=3600`,
			"RateLimit", `"burst";r=80;t=10, "day";r=40;t=3000`),
			Quota{Limit: 1000, Window: sec(3600), Remaining: 40, HasRemaining: true, Reset: sec(3000)}},
		{"policy field over two lines", hdr("RateLimit-Policy", `"a";q=600;w=60`, "RateLimit-Policy", `"b";q=60;w=60`),
			Quota{Limit: 60, Window: sec(60)}},
		{"ratelimit without policy", hdr("RateLimit", `"x";r=5;t=2`),
			Quota{Remaining: 5, HasRemaining: true, Reset: sec(2)}},
		{"legacy triple", hdr("RateLimit-Limit", "100", "RateLimit-Remaining", "7", "RateLimit-Reset", "12"),
			Quota{Limit: 100, Remaining: 7, HasRemaining: true, Reset: sec(12)}},
		{"legacy limit with policies", hdr("RateLimit-Limit", "50, 10;w=1, 50;w=60", "RateLimit-Remaining", "7", "RateLimit-Reset", "12"),
			Quota{Limit: 50, Window: sec(60), Remaining: 7, HasRemaining: true, Reset: sec(12)}},
		{"malformed policy ignored whole", hdr("RateLimit-Policy", `"a";q=100;w=60,`, "RateLimit", `"a";r=5;t=3`),
			Quota{Remaining: 5, HasRemaining: true, Reset: sec(3)}},
		{"malformed ratelimit", hdr("RateLimit-Policy", `"a";q=100;w=60`, "RateLimit", `"a";r=5;t=3 garbage`),
			Quota{Limit: 100, Window: sec(60)}},
		{"negative values", hdr("RateLimit-Policy", `"a";q=-100;w=-60`, "RateLimit", `"a";r=-5;t=-3`), Quota{}},
		{"reset years ahead", hdr("RateLimit", `"a";r=5;t=999999999999`), Quota{}},
		{"too many digits", hdr("RateLimit", `"a";r=1234567890123456;t=3`), Quota{}},
		{"NaN and exponents", hdr("RateLimit-Limit", "NaN", "RateLimit-Remaining", "1e308", "RateLimit-Reset", "Inf"), Quota{}},
		{"absurd limit", hdr("RateLimit-Policy", `"a";q=999999999999999;w=1`), Quota{}},
		{"largest limit", hdr("RateLimit-Policy", `"a";q=1000000000000;w=60`), Quota{Limit: MaxQuotaUnits, Window: sec(60)}},
		{"absurd limit loses to a sane one", hdr("RateLimit-Policy", `"a";q=10;w=60, "b";q=999999999999999;w=1`),
			Quota{Limit: 10, Window: sec(60)}},
		{"window under a second", hdr("RateLimit-Policy", `"a";q=10;w=0.001`), Quota{Limit: 10}},
		{"window of a second", hdr("RateLimit-Policy", `"a";q=10;w=1`), Quota{Limit: 10, Window: sec(1)}},
		{"sub-second window does not win", hdr("RateLimit-Policy", `"a";q=1;w=0.5, "b";q=100;w=60`),
			Quota{Limit: 100, Window: sec(60)}},
		{"absurd remaining", hdr("RateLimit", `"a";r=999999999999999;t=3`), Quota{Reset: sec(3)}},
		{"remaining above limit", hdr("RateLimit-Policy", `"a";q=10;w=60`, "RateLimit", `"a";r=50;t=3`),
			Quota{Limit: 10, Window: sec(60), Remaining: 10, HasRemaining: true, Reset: sec(3)}},
		{"decimal reset", hdr("RateLimit", `"a";r=5;t=1.5`), Quota{Remaining: 5, HasRemaining: true, Reset: sec(1.5)}},
		{"zero remaining", hdr("RateLimit", `"a";r=0;t=30`), Quota{HasRemaining: true, Reset: sec(30)}},
		{"x headers are not read", hdr("X-RateLimit-Limit", "100"), Quota{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ietf.Parse(tt.h, rlNow); got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestParseXRateLimit(t *testing.T) {
	delta := RateLimitHeaders{Format: RateLimitX}
	unix := RateLimitHeaders{Format: RateLimitX, Reset: UnitUnixTime}
	at := func(d time.Duration) string { return formatUnix(rlNow.Add(d)) }
	tests := []struct {
		name string
		r    RateLimitHeaders
		h    http.Header
		want Quota
	}{
		{"none", delta, hdr(), Quota{}},
		{"delta", delta, hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "4999", "X-RateLimit-Reset", "60"),
			Quota{Limit: 5000, Remaining: 4999, HasRemaining: true, Reset: sec(60)}},
		{"github unix", unix, hdr("X-RateLimit-Limit", "5000", "X-RateLimit-Remaining", "12", "X-RateLimit-Reset", at(30*time.Minute)),
			Quota{Limit: 5000, Remaining: 12, HasRemaining: true, Reset: 30 * time.Minute}},
		{"unix in the past", unix, hdr("X-RateLimit-Remaining", "12", "X-RateLimit-Reset", at(-time.Minute)),
			Quota{Remaining: 12, HasRemaining: true}},
		{"unix years ahead", unix, hdr("X-RateLimit-Remaining", "12", "X-RateLimit-Reset", at(3*365*24*time.Hour)),
			Quota{Remaining: 12, HasRemaining: true}},
		{"unix read as delta is absurd", delta, hdr("X-RateLimit-Remaining", "12", "X-RateLimit-Reset", at(time.Hour)),
			Quota{Remaining: 12, HasRemaining: true}},
		{"envoy window", delta, hdr("X-RateLimit-Limit", "10, 10;w=60", "X-RateLimit-Remaining", "3", "X-RateLimit-Reset", "20"),
			Quota{Limit: 10, Window: sec(60), Remaining: 3, HasRemaining: true, Reset: sec(20)}},
		{"decimals", delta, hdr("X-RateLimit-Remaining", "3.5", "X-RateLimit-Reset", "0.25"),
			Quota{Remaining: 3.5, HasRemaining: true, Reset: sec(0.25)}},
		{"negative", delta, hdr("X-RateLimit-Limit", "-1", "X-RateLimit-Remaining", "-3", "X-RateLimit-Reset", "-20"), Quota{}},
		{"garbage", delta, hdr("X-RateLimit-Limit", "lots", "X-RateLimit-Remaining", "NaN", "X-RateLimit-Reset", "1e308"), Quota{}},
		{"huge", delta, hdr("X-RateLimit-Limit", "1"+strings.Repeat("0", 41), "X-RateLimit-Remaining", "99999999999999999999999999", "X-RateLimit-Reset", "99999999999999999999"),
			Quota{}},
		{"1e308 limit", delta, hdr("X-RateLimit-Limit", "1"+strings.Repeat("0", 308), "X-RateLimit-Remaining", "5"),
			Quota{Remaining: 5, HasRemaining: true}},
		{"largest limit", delta, hdr("X-RateLimit-Limit", "1000000000000"), Quota{Limit: MaxQuotaUnits}},
		{"envoy window under a second", delta, hdr("X-RateLimit-Limit", "10, 10;w=0.001"), Quota{Limit: 10}},
		{"beyond float range", delta, hdr("X-RateLimit-Limit", "1"+strings.Repeat("0", 400), "X-RateLimit-Remaining", "5"),
			Quota{Remaining: 5, HasRemaining: true}},
		{"zero reset", delta, hdr("X-RateLimit-Remaining", "0", "X-RateLimit-Reset", "0"),
			Quota{HasRemaining: true}},
		{"ietf headers are not read", delta, hdr("RateLimit", `"a";r=5;t=3`), Quota{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.r.Parse(tt.h, rlNow); got != tt.want {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func formatUnix(t time.Time) string { return strconv.FormatInt(t.Unix(), 10) }

func TestRateLimitHeadersValidate(t *testing.T) {
	for _, ok := range []RateLimitHeaders{{}, {Format: RateLimitIETF}, {Format: RateLimitX}, {Format: RateLimitX, Reset: UnitUnixTime}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("%+v: %v", ok, err)
		}
	}
	for _, bad := range []RateLimitHeaders{{Format: 7}, {Format: RateLimitX, Reset: UnitMilliseconds}, {Format: RateLimitIETF, Reset: UnitUnixTime}} {
		if err := bad.Validate(); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
	if _, err := ParseRateLimitFormat("github"); err == nil {
		t.Error("ParseRateLimitFormat(github): no error")
	}
	for _, f := range []RateLimitFormat{RateLimitNone, RateLimitIETF, RateLimitX} {
		if g, err := ParseRateLimitFormat(f.String()); err != nil || g != f {
			t.Errorf("round trip of %v: %v, %v", f, g, err)
		}
	}
}

func TestClassifyReadsQuota(t *testing.T) {
	c := Classifier{RateLimitHeaders: RateLimitHeaders{Format: RateLimitIETF}}
	h := hdr("RateLimit", `"a";r=0;t=7`, "Retry-After", "7")
	for _, status := range []int{200, 429} {
		o := c.Classify(status, h, rlNow)
		if !o.Quota.HasRemaining || o.Quota.Reset != sec(7) {
			t.Errorf("status %d: quota %+v", status, o.Quota)
		}
	}
	if o := (Classifier{}).Classify(200, h, rlNow); o.Quota.Present() {
		t.Errorf("zero Classifier read a quota: %+v", o.Quota)
	}
}

func FuzzParseRateLimit(f *testing.F) {
	f.Add(`"default";q=100;w=60`, `"default";r=50;t=30`, "100", "50", "30")
	f.Add(`10;w=1, 50;w=60`, `"a";r=5;t=1.5, "b";r=0;t=2`, "10, 10;w=60", "-3", "1767225600")
	f.Add(`(1 2);a, ?1;b=@123`, `%"x%41";r=1`, "NaN", "1e308", "99999999999999999999")
	// Large fields, for the mutator to grow from: the report's 40,000
	// parameters, and as many policies and RateLimit members as a list holds.
	name := func(i int) string { return fmt.Sprintf(`"p%d";q=%d;w=60`, i, i+1) }
	f.Add(manyParams(`"a"`, 40000), manyMembers(maxSFMembers, name), manyMembers(maxSFMembers, name), "1", "1")
	bound := fuzzTimeBound()
	f.Fuzz(func(t *testing.T, policy, rl, limit, remaining, reset string) {
		h := hdr("RateLimit-Policy", policy, "RateLimit", rl,
			"RateLimit-Limit", limit, "RateLimit-Remaining", remaining, "RateLimit-Reset", reset,
			"X-RateLimit-Limit", limit, "X-RateLimit-Remaining", remaining, "X-RateLimit-Reset", reset)
		formats := []RateLimitHeaders{{Format: RateLimitIETF}, {Format: RateLimitX}, {Format: RateLimitX, Reset: UnitUnixTime}}
		for _, r := range formats {
			q := r.Parse(h, rlNow)
			if q != q.Sanitized() {
				t.Fatalf("%v: not sanitized: %+v", r.Format, q)
			}
			if q.Reset < 0 || q.Reset > MaxQuotaSpan || q.Window < 0 || q.Window > MaxQuotaSpan {
				t.Fatalf("%v: span out of range: %+v", r.Format, q)
			}
			if q.Window != 0 && q.Window < MinQuotaWindow {
				t.Fatalf("%v: window under %v: %+v", r.Format, MinQuotaWindow, q)
			}
			if q.Limit < 0 || q.Limit > MaxQuotaUnits || (q.HasRemaining && (q.Remaining < 0 || q.Remaining > MaxQuotaUnits)) {
				t.Fatalf("%v: negative or absurd: %+v", r.Format, q)
			}
		}
		for _, v := range []string{policy, rl, limit} {
			if items, err := parseSFList([]string{v}); err == nil {
				if len(items) > maxSFMembers {
					t.Fatalf("%d members kept, want at most %d", len(items), maxSFMembers)
				}
				for _, it := range items {
					if len(it.params) > maxSFParams {
						t.Fatalf("%d parameters kept, want at most %d", len(it.params), maxSFParams)
					}
				}
			}
		}
		if bound == nil {
			return
		}
		n := len(policy) + len(rl) + len(limit) + len(remaining) + len(reset)
		parse := func() {
			for _, r := range formats {
				r.Parse(h, rlNow)
			}
		}
		// Twice over the budget, twice in a row: a pause of the machine
		// once is not a failure; a quadratic parse of a large input is.
		if d := bound(n, parse); d > 0 {
			if d2 := bound(n, parse); d2 > 0 {
				t.Fatalf("%d bytes of headers took %v over the budget of %v + %v per byte", n, min(d, d2), fuzzBaseBudget, fuzzByteBudget)
			}
		}
	})
}

// The time budget of one fuzz input: fuzzBaseBudget and fuzzByteBudget
// per byte of input, two orders of magnitude above what a linear parse
// takes. A quadratic parse of the report's 269 KB field took 2.6 s.
const (
	fuzzBaseBudget = 20 * time.Millisecond
	fuzzByteBudget = time.Microsecond
)

// fuzzTimeBound returns, when the test binary is fuzzing (-test.fuzz), a
// function that runs parse and returns by how much it went over the budget
// of an input of n bytes (0 or less within it); nil under plain go test,
// which asserts no duration.
func fuzzTimeBound() func(n int, parse func()) time.Duration {
	if f := flag.Lookup("test.fuzz"); f == nil || f.Value.String() == "" {
		return nil
	}
	return func(n int, parse func()) time.Duration {
		start := time.Now()
		parse()
		return time.Since(start) - fuzzBaseBudget - time.Duration(n)*fuzzByteBudget
	}
}
