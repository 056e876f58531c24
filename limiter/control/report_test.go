package control

import (
	"math"
	"testing"
	"time"
)

// A refusal a worker reported to a fleet is checked before the law
// decides: an accepted rate that is not finite is no measure, and a window
// is capped at MaxWindow, like a learned one, and counts only in startup.
func TestLawReportedRefusal(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 10, 0, time.UTC)
	l := NewLaw(DefaultConfig(), 1000, 1, 1e6)
	if !l.ReportedRefusal(now, now.Add(-time.Second), 0, math.Inf(1), 10*time.Hour) {
		t.Fatal("the first refusal did not cut")
	}
	if l.rate != lawMargin*500 || l.bound != 500 || l.window != MaxWindow || l.open != LawRetryAfter {
		t.Fatalf("after the cut: rate %v bound %v window %v open %v; want %v, 500 (half the rate: no measure), %v, %v",
			l.rate, l.bound, l.window, l.open, lawMargin*500, MaxWindow, LawRetryAfter)
	}
	if a, w := l.MeasureRefusal(0, 0); a != -1 || w != 0 {
		t.Fatalf("a refusal the cut answered measured %v, %v; want -1, 0", a, w)
	}
	l.window = 0
	l.ReportedRefusal(now.Add(time.Minute), now.Add(50*time.Second), time.Second, 100, time.Minute)
	if l.window != 0 {
		t.Fatalf("out of startup a reported window set W to %v", l.window)
	}
}
