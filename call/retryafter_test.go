package call_test

import (
	"fmt"
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/call"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	capped := call.DefaultMaxRetryAfter
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"0", 0, true},
		{"1", time.Second, true},
		{"120", 2 * time.Minute, true},
		{" 7\t", 7 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"0.001", time.Millisecond, true},
		{"0.0000000019", 1 * time.Nanosecond, true}, // digits past the ninth dropped
		{"007", 7 * time.Second, true},
		{"86400", 24 * time.Hour, true},
		{"86401", capped, true},
		{"99999999999999999999999999999999", capped, true},
		{"18446744073709551615", capped, true},
		{"18446744073709551616", capped, true},
		{"9223372036854775807", capped, true},
		// HTTP-dates, the three formats of RFC 9110.
		{"Sun, 01 Mar 2026 12:00:30 GMT", 30 * time.Second, true},
		{"Sunday, 01-Mar-26 12:01:00 GMT", time.Minute, true},
		{"Sun Mar  1 12:00:05 2026", 5 * time.Second, true},
		{"Sat, 28 Feb 2026 12:00:00 GMT", 0, true},      // in the past
		{"Fri, 31 Dec 9999 23:59:59 GMT", capped, true}, // far future
		{"Mon, 01 Jan 0001 00:00:00 GMT", 0, true},      // far past
		// Garbage.
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"-0", 0, false},
		{"+5", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"1e3", 0, false},
		{"0x10", 0, false},
		{"1.", 0, false},
		{".5", 0, false},
		{"1.2.3", 0, false},
		{"5 s", 0, false},
		{"1,000", 0, false},
		{"１２", 0, false}, // full-width digits
		{"tomorrow", 0, false},
		{"Sun, 01 Mar 2026 12:00:30", 0, false},
		{"\x00", 0, false},
	}
	for _, tt := range tests {
		got, ok := call.ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestParseHeaderUnit(t *testing.T) {
	for _, u := range []call.HeaderUnit{call.UnitSeconds, call.UnitMilliseconds, call.UnitUnixTime} {
		got, err := call.ParseHeaderUnit(u.String())
		if err != nil || got != u {
			t.Errorf("ParseHeaderUnit(%q) = %v, %v; want %v", u.String(), got, err, u)
		}
	}
	for in, want := range map[string]call.HeaderUnit{"ms": call.UnitMilliseconds, "S": call.UnitSeconds, "unix_seconds": call.UnitUnixTime} {
		if got, err := call.ParseHeaderUnit(in); err != nil || got != want {
			t.Errorf("ParseHeaderUnit(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	if _, err := call.ParseHeaderUnit("minutes"); err == nil {
		t.Error("ParseHeaderUnit(minutes): no error")
	}
	if s := call.HeaderUnit(9).String(); s != "HeaderUnit(9)" {
		t.Errorf("HeaderUnit(9).String() = %q", s)
	}
}

// FuzzParseRetryAfter checks that no input panics, that the result is in
// [0, DefaultMaxRetryAfter], that garbage reads as 0, and that plain
// integers read exactly.
func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "1.5", "-1", "NaN", "1e309", "99999999999999999999",
		"Sun, 01 Mar 2026 12:00:30 GMT", "Sunday, 01-Mar-26 12:01:00 GMT", "Sun Mar  1 12:00:05 2026", ""} {
		f.Add(s, int64(1772366400))
	}
	f.Fuzz(func(t *testing.T, v string, nowUnix int64) {
		now := time.Unix(nowUnix%(1<<36), 0) // years -2000 .. 4000
		d, ok := call.ParseRetryAfter(v, now)
		if d < 0 || d > call.DefaultMaxRetryAfter {
			t.Fatalf("ParseRetryAfter(%q) = %v, out of [0, %v]", v, d, call.DefaultMaxRetryAfter)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v, false; want 0 when not ok", v, d)
		}
		if n, err := strconv.ParseUint(v, 10, 64); err == nil {
			want := call.DefaultMaxRetryAfter
			if n <= uint64(math.MaxInt64/int64(time.Second)) && time.Duration(n)*time.Second < want {
				want = time.Duration(n) * time.Second
			}
			if !ok || d != want {
				t.Fatalf("ParseRetryAfter(%q) = %v, %v; want %v, true", v, d, ok, want)
			}
		}
	})
}

func ExampleParseRetryAfter() {
	now := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	for _, v := range []string{"120", "Wed, 21 Oct 2015 07:29:30 GMT", "-5", "99999999999"} {
		d, ok := call.ParseRetryAfter(v, now)
		fmt.Println(d, ok)
	}
	// Output:
	// 2m0s true
	// 1m30s true
	// 0s false
	// 24h0m0s true
}
