package gcppubsub

import (
	"fmt"
	"testing"
	"time"
)

func TestDeliveries(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := newDeliveries(time.Hour, 10)
	steps := []struct {
		at   time.Duration
		id   string
		want int
	}{
		{0, "a", 1},
		{time.Second, "a", 2},
		{2 * time.Second, "b", 1},
		{time.Hour, "a", 3},                   // seen 59m59s ago: kept
		{2*time.Hour + 2*time.Second, "b", 1}, // not seen for over an hour: restarts
	}
	for _, s := range steps {
		if got := d.observe(s.id, t0.Add(s.at)); got != s.want {
			t.Fatalf("at %v observe(%s) = %d, want %d", s.at, s.id, got, s.want)
		}
	}
	d.forget("b")
	if got := d.observe("b", t0.Add(3*time.Hour)); got != 1 {
		t.Fatalf("after forget: %d, want 1", got)
	}
}

func TestDeliveriesBounded(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	d := newDeliveries(time.Hour, 10)
	for i := range 11 {
		d.observe(fmt.Sprint(i), t0.Add(time.Duration(i)*time.Second))
	}
	// Past 10 entries, the least recently seen go, down to 9.
	if n := d.len(); n != 9 {
		t.Fatalf("%d entries tracked, want 9", n)
	}
	if got := d.observe("10", t0.Add(20*time.Second)); got != 2 {
		t.Errorf("newest entry lost: count %d, want 2", got)
	}
	if got := d.observe("0", t0.Add(21*time.Second)); got != 1 {
		t.Errorf("oldest entry kept: count %d, want 1", got)
	}
	// Expired entries go at the next sweep.
	d.observe("x", t0.Add(3*time.Hour))
	if n := d.len(); n != 1 {
		t.Errorf("%d entries after all expired, want 1", n)
	}
}
