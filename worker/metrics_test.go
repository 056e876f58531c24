package worker

import "testing"

func TestStatusClass(t *testing.T) {
	for status, want := range map[int]string{
		0: "error", 99: "error", 100: "1xx", 200: "2xx", 204: "2xx", 302: "3xx",
		404: "4xx", 429: "4xx", 500: "5xx", 599: "5xx", 600: "error", -1: "error",
	} {
		if got := statusClass(status); got != want {
			t.Errorf("statusClass(%d) = %q, want %q", status, got, want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { _ = statusClass(503) }); n != 0 {
		t.Errorf("statusClass allocates %v times", n)
	}
}
