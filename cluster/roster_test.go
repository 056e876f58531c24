package cluster

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/field"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func TestRosterLiveness(t *testing.T) {
	r := newRoster[int](15*time.Second, "", 0)
	r.put("m.a", 1, 0, at(0))
	r.put("m.b", 2, 0, at(5))
	steps := []struct {
		now  float64
		live []string
		n    int // count with self "m.a"
	}{
		{0, []string{"m.a", "m.b"}, 2},      // m.b seen "in the future" of a lagging caller still counts
		{14.999, []string{"m.a", "m.b"}, 2}, // just inside the TTL
		{15, []string{"m.b"}, 2},            // m.a's last write is TTL old: gone, but self always counts
		{19.999, []string{"m.b"}, 2},
		{20, []string{}, 1},
	}
	for _, s := range steps {
		if got := r.live(at(s.now)); !slices.Equal(got, s.live) {
			t.Errorf("live at %v: %v, want %v", s.now, got, s.live)
		}
		if got := count(r, "m.a", at(s.now)); got != s.n {
			t.Errorf("count at %v: %d, want %d", s.now, got, s.n)
		}
	}
	r.put("m.a", 3, 0, at(16)) // refreshed after the server dropped it: live again
	if got := count(r, "m.a", at(20)); got != 1 {
		t.Errorf("count at 20 after refresh = %d, want 1 (m.b expired)", got)
	}
	r.remove("m.a")
	if got := r.live(at(20)); len(got) != 0 {
		t.Errorf("after delete: %v", got)
	}
}

func TestRosterNextExpiry(t *testing.T) {
	r := newRoster[int](10*time.Second, "", 0)
	if _, ok := r.nextExpiry(at(0)); ok {
		t.Error("empty roster has an expiry")
	}
	r.put("a", 1, 0, at(1))
	r.put("b", 1, 0, at(3))
	if got, ok := r.nextExpiry(at(4)); !ok || !got.Equal(at(11)) {
		t.Errorf("nextExpiry(4) = %v %v, want 11", got.Sub(t0), ok)
	}
	if got, ok := r.nextExpiry(at(11)); !ok || !got.Equal(at(13)) {
		t.Errorf("nextExpiry(11) = %v %v, want 13 (a is gone)", got.Sub(t0), ok)
	}
	r.prune(at(11))
	if _, ok := r.entries["a"]; ok {
		t.Error("prune(11) kept a")
	}
}

// When this member's own echo is overdue, keys stop ageing; when it comes
// back, the deaf time does not count.
func TestRosterDeaf(t *testing.T) {
	// TTL 15 s, refresh 5 s: the clock stops 7.5 s after the last echo.
	r := newRoster[int](15*time.Second, "m.self", 7500*time.Millisecond)
	r.put("m.self", 1, 0, at(0))
	r.put("m.a", 1, 0, at(1))
	r.put("m.b", 1, 0, at(5))
	if got, ok := r.nextExpiry(at(7)); !ok || !got.Equal(at(15)) {
		t.Errorf("nextExpiry(7) = %v %v, want 15 (m.self)", got.Sub(t0), ok)
	}
	// No echo after 0: the clock stops at 7.5.
	if _, ok := r.nextExpiry(at(8)); ok {
		t.Error("a deaf roster schedules an expiry")
	}
	for _, s := range []float64{7.5, 16, 30, 100} {
		if got := count(r, "m.self", at(s)); got != 3 {
			t.Errorf("deaf since 7.5, count at %v = %d, want 3", s, got)
		}
	}
	// The echo is back at 100: 92.5 s of deafness do not count. m.a was
	// 6.5 s old when the clock stopped, m.b 2.5 s.
	r.put("m.self", 2, 0, at(100))
	r.put("m.self", 2, 0, at(104))
	for _, c := range []struct {
		now  float64
		want int
	}{{108.499, 3}, {108.5, 2}, {112.499, 2}, {112.5, 1}} {
		r.put("m.self", 3, 0, at(c.now)) // echoes keep coming, less than 7.5 s apart
		if got := count(r, "m.self", at(c.now)); got != c.want {
			t.Errorf("count at %v = %d, want %d", c.now, got, c.want)
		}
	}
	// An entry heard while deaf (before the echo) is not pushed into the
	// future.
	r.put("m.c", 1, 0, at(125))
	r.put("m.self", 4, 0, at(126)) // 6 s after 112.5 + 7.5
	if e := r.entries["m.c"]; !e.seen.Equal(at(126)) {
		t.Errorf("m.c seen at %v, want 126", e.seen.Sub(t0))
	}
	// A roster without a self key never stops.
	plain := newRoster[int](15*time.Second, "", 0)
	plain.put("m.a", 1, 0, at(0))
	if got := plain.live(at(15)); len(got) != 0 {
		t.Errorf("plain roster at 15: %v", got)
	}
}

func TestRefreshDue(t *testing.T) {
	const every = 5 * time.Second
	for _, c := range []struct {
		last, now float64
		zero      bool
		want      bool
	}{
		{zero: true, now: 0, want: true},
		{last: 0, now: 4.999, want: false},
		{last: 0, now: 5, want: true},
		{last: 10, now: 12, want: false},
	} {
		last := at(c.last)
		if c.zero {
			last = time.Time{}
		}
		if got := refreshDue(last, at(c.now), every); got != c.want {
			t.Errorf("refreshDue(%v, %v) = %v, want %v", c.last, c.now, got, c.want)
		}
	}
}

func TestPlan(t *testing.T) {
	for _, c := range []struct {
		name             string
		in               planInput
		acquire, release int
	}{
		{"alone takes all", planInput{partitions: 16, members: []string{"a"}, self: "a", held: 0, taken: 0}, 16, 0},
		{"alone, some still held by a dead member", planInput{partitions: 16, members: []string{"a"}, self: "a", held: 10, taken: 14, others: map[string]int{"x": 4}}, 2, 0},
		{"second member, nothing free: wait", planInput{partitions: 16, members: []string{"a", "b"}, self: "b", held: 0, taken: 16, others: map[string]int{"a": 16}}, 0, 0},
		{"first member gives way to the second", planInput{partitions: 16, members: []string{"a", "b"}, self: "a", held: 16, taken: 16, others: map[string]int{}}, 0, 8},
		{"second member takes what is free", planInput{partitions: 16, members: []string{"a", "b"}, self: "b", held: 0, taken: 8, others: map[string]int{"a": 8}}, 8, 0},
		{"three: the 16th partition goes to whoever is first", planInput{partitions: 16, members: []string{"a", "b", "c"}, self: "c", held: 5, taken: 15, others: map[string]int{"a": 5, "b": 5}}, 1, 0},
		{"three: balanced", planInput{partitions: 16, members: []string{"a", "b", "c"}, self: "a", held: 6, taken: 16, others: map[string]int{"b": 5, "c": 5}}, 0, 0},
		{"five: ⌈16/5⌉ is 4 but a newcomer needs 3", planInput{partitions: 16, members: []string{"a", "b", "c", "d", "e"}, self: "a", held: 4, taken: 16, others: map[string]int{"b": 4, "c": 4, "d": 4}}, 0, 1},
		{"extra only beyond what others need", planInput{partitions: 16, members: []string{"a", "b", "c", "d", "e"}, self: "a", held: 3, taken: 13, others: map[string]int{"b": 3, "c": 3, "d": 3, "e": 1}}, 1, 0},
		{"extra: nothing beyond what others need", planInput{partitions: 16, members: []string{"a", "b", "c", "d", "e"}, self: "a", held: 3, taken: 14, others: map[string]int{"b": 4, "c": 3, "d": 3, "e": 1}}, 0, 0},
		{"more members than partitions", planInput{partitions: 2, members: []string{"a", "b", "c"}, self: "c", held: 0, taken: 2, others: map[string]int{"a": 1, "b": 1}}, 0, 0},
		{"more members than partitions, one free", planInput{partitions: 2, members: []string{"a", "b", "c"}, self: "c", held: 0, taken: 1, others: map[string]int{"a": 1}}, 1, 0},
		{"keeps ⌈P/N⌉ when nobody needs", planInput{partitions: 16, members: []string{"a", "b", "c"}, self: "a", held: 6, taken: 16, others: map[string]int{"b": 6, "c": 4}}, 0, 1},
	} {
		a, r := plan(c.in)
		if a != c.acquire || r != c.release {
			t.Errorf("%s: plan = acquire %d, release %d; want %d, %d", c.name, a, r, c.acquire, c.release)
		}
	}
}

// Whatever each member sees, if all see the same, repeated rounds reach
// shares of ⌊P/N⌋ or ⌈P/N⌉ that add up to P.
func TestPlanConverges(t *testing.T) {
	for _, p := range []int{1, 2, 7, 16, 64} {
		for n := 1; n <= 9; n++ {
			members := make([]string, n)
			held := make(map[string]int, n)
			for i := range members {
				members[i] = string(rune('a' + i))
			}
			held["a"] = p // the first member holds everything
			for round := 0; round < 50; round++ {
				for _, self := range members {
					others := map[string]int{}
					taken := 0
					for _, k := range members {
						taken += held[k]
						if k != self {
							others[k] = held[k]
						}
					}
					acq, rel := plan(planInput{partitions: p, members: members, self: self, held: held[self], others: others, taken: taken})
					held[self] += acq - rel
				}
			}
			sum, lo, hi := 0, p/n, (p+n-1)/n
			for _, k := range members {
				sum += held[k]
				if held[k] < lo || held[k] > hi {
					t.Errorf("P=%d N=%d: %s holds %d, want %d..%d (%v)", p, n, k, held[k], lo, hi, held)
				}
			}
			if sum != p {
				t.Errorf("P=%d N=%d: %d held in all, want %d (%v)", p, n, sum, p, held)
			}
		}
	}
}

func TestShareOf(t *testing.T) {
	if got := shareOf(0, 16); got != IdleShare {
		t.Errorf("shareOf(0) = %v", got)
	}
	if got := shareOf(4, 16); got != 0.25 {
		t.Errorf("shareOf(4, 16) = %v", got)
	}
	if got := leaseLife(15 * time.Second); got != 12*time.Second {
		t.Errorf("leaseLife(15s) = %v", got)
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{Bucket: "b"}).Validate(); err != nil {
		t.Errorf("minimal config: %v", err)
	}
	err := Config{Bucket: "a.b", TTL: 10 * time.Millisecond, Refresh: time.Hour, Partitions: -1}.Validate()
	if err := (Config{Bucket: "b", TTL: 3 * time.Second, Refresh: 1001 * time.Millisecond}).Validate(); err == nil {
		t.Error("refresh above ttl/3 accepted")
	}
	var names []string
	for _, fe := range field.Flatten(err) {
		names = append(names, fe.Field)
	}
	if got := strings.Join(names, " "); got != "bucket ttl refresh partitions" {
		t.Errorf("error %v names fields %q, want bucket ttl refresh partitions", err, got)
	}
	if got := BucketName("api.example.com:443"); got != "api_example_com_443" {
		t.Errorf("BucketName = %q", got)
	}
	c := Config{Bucket: "b"}.withDefaults()
	if c.TTL != DefaultTTL || c.Refresh != DefaultTTL/3 || c.Partitions != DefaultPartitions || c.ID == "" {
		t.Errorf("defaults: %+v", c)
	}
}
