package run

import (
	"os"
	"regexp"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// stateRowRe finds the JSON example in the /state row of the endpoints
// table of docs/operations.md.
var stateRowRe = regexp.MustCompile("(?m)^\\| `/state` \\|[^`\n]*`(\\{[^`]*\\})`")

// The /state example of docs/operations.md is what GET /state answers:
// every key is a field of WorkerState, every field it always writes is
// shown, and paused_until is there when paused is true, as the row says.
func TestDocsStateExample(t *testing.T) {
	b, err := os.ReadFile("../../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	m := stateRowRe.FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/operations.md: the /state row of the endpoints table shows no JSON example")
	}
	var s WorkerState
	if err := testkit.CheckJSONExample(string(m[1]), &s); err != nil {
		t.Fatalf("docs/operations.md, the /state example: %v", err)
	}
	if s.Paused == s.PausedUntil.IsZero() {
		t.Errorf("docs/operations.md, the /state example: paused %v with paused_until %v; the worker writes paused_until only while paused", s.Paused, s.PausedUntil)
	}
}
