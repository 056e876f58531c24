package faults

import (
	"slices"
	"strings"
	"testing"
)

func TestAccepted(t *testing.T) {
	got, err := Accepted(strings.NewReader("a\nb\n\na\n  c  \n"))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"a": 2, "b": 1, "c": 1}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d calls, want %d", k, got[k], v)
		}
	}
}

func TestParseDeadLetter(t *testing.T) {
	d, err := ParseDeadLetter([]byte(`{"id":"j1","reason":"bad_json","detail":"syntax error at byte 5","attempts":0}`))
	if err != nil || d.ID != "j1" || d.Reason != "bad_json" {
		t.Fatalf("got %+v, %v", d, err)
	}
	for _, bad := range []string{`{"id":"j1"}`, `{"reason":"x"}`, `not json`} {
		if _, err := ParseDeadLetter([]byte(bad)); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestCheck(t *testing.T) {
	published := []string{"a", "b", "c", "d", "e", "f"}
	accepted := map[string]int{"a": 1, "b": 3, "c": 1, "f": 1, "zz": 1}
	dead := []DeadLetter{{ID: "d", Reason: "bad_json"}, {ID: "f", Reason: "max_deliveries"}}
	a := Check(published, accepted, dead)

	if !slices.Equal(a.Lost, []string{"e"}) {
		t.Errorf("lost = %v, want [e]", a.Lost)
	}
	if !slices.Equal(a.Duplicates, []string{"b"}) || a.ExtraCalls != 2 {
		t.Errorf("duplicates = %v (%d extra calls), want [b] (2)", a.Duplicates, a.ExtraCalls)
	}
	if len(a.Dead) != 2 || a.Dead["d"] != "bad_json" || a.Dead["f"] != "max_deliveries" {
		t.Errorf("dead = %v", a.Dead)
	}
	if got := a.ReasonsText(); got != "bad_json=1 max_deliveries=1" {
		t.Errorf("reasons = %q", got)
	}
	wantAnomalies := []string{
		"job f reached the target and was dead-lettered (max_deliveries)",
		"the target accepted job zz, which was never published",
	}
	if !slices.Equal(a.Anomalies, wantAnomalies) {
		t.Errorf("anomalies = %q, want %q", a.Anomalies, wantAnomalies)
	}
}

func TestCheckDeadTwiceAndUnknown(t *testing.T) {
	a := Check([]string{"a"}, nil, []DeadLetter{{ID: "a", Reason: "r"}, {ID: "a", Reason: "r"}, {ID: "q", Reason: "r"}})
	if len(a.Lost) != 0 {
		t.Errorf("lost = %v", a.Lost)
	}
	if len(a.Anomalies) != 2 {
		t.Errorf("anomalies = %q, want a double dead letter and an unknown id", a.Anomalies)
	}
}

func TestCheckAllDone(t *testing.T) {
	a := Check([]string{"a", "b"}, map[string]int{"a": 1, "b": 1}, nil)
	if len(a.Lost)+len(a.Duplicates)+len(a.Dead)+len(a.Anomalies) != 0 {
		t.Errorf("a clean run audits as %+v", a)
	}
}
