package run

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// TestLogDurationsAndRates: a duration is seconds in JSON and a Go duration
// in text, also inside a group; a rate has no float noise in either.
func TestLogDurationsAndRates(t *testing.T) {
	log := func(format string) string {
		var b bytes.Buffer
		l, err := NewLogger(&b, format, "info")
		if err != nil {
			t.Fatal(err)
		}
		tenth, fifth := 0.1, 0.2 // not constants: their sum is 0.30000000000000004
		l.Info("m", "wait", 1500*time.Millisecond, "latency", 1234567891*time.Nanosecond,
			"to", 2000.0/3, "from", tenth+fifth, "big", 1234567.891, "units", 0.000123456789,
			slog.Group("cfg", slog.Duration("timeout", 100*time.Second)))
		return b.String()
	}

	var got struct {
		Wait, Latency, To, From, Big, Units float64
		Cfg                                 struct{ Timeout float64 }
	}
	js := log("json")
	if err := json.Unmarshal([]byte(js), &got); err != nil {
		t.Fatalf("%v: %s", err, js)
	}
	want := []struct {
		name     string
		got, exp float64
	}{
		{"wait", got.Wait, 1.5}, {"latency", got.Latency, 1.234568}, {"cfg.timeout", got.Cfg.Timeout, 100},
		{"to", got.To, 666.667}, {"from", got.From, 0.3}, {"big", got.Big, 1234568}, {"units", got.Units, 0.000123457},
	}
	for _, w := range want {
		if w.got != w.exp {
			t.Errorf("json %s = %v, want %v in %s", w.name, w.got, w.exp, js)
		}
	}
	for _, s := range []string{`"wait":1.5,`, `"to":666.667,`, `"from":0.3,`} {
		if !strings.Contains(js, s) {
			t.Errorf("json line lacks %s: %s", s, js)
		}
	}

	txt := log("text")
	for _, s := range []string{" wait=1.5s ", " latency=1.234567891s ", " to=666.667 ", " from=0.3 ", " big=1234568 ", " units=0.000123457 ", " cfg.timeout=1m40s"} {
		if !strings.Contains(txt, s) {
			t.Errorf("text line lacks %q: %s", s, txt)
		}
	}
}
