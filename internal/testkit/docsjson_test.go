package testkit

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

type record struct {
	ID     string    `json:"id"`
	Type   string    `json:"type,omitempty"`
	At     time.Time `json:"at"`
	Until  time.Time `json:"until,omitzero"`
	Plain  int
	Hidden int `json:"-"`
}

// The example check fails on a key the type does not have (a field renamed
// in the docs), on an always-written field the example lacks (a field added
// to the type), and on a value of the wrong type.
func TestCheckJSONExample(t *testing.T) {
	if got := strings.Join(AlwaysWritten(reflect.TypeFor[record]()), " "); got != "id at Plain" {
		t.Errorf("AlwaysWritten = %q, want id at Plain", got)
	}
	const good = `{"id": "a", "at": "2026-01-02T03:04:05Z", "Plain": 1}`
	if err := CheckJSONExample(good, &record{}); err != nil {
		t.Errorf("good example: %v", err)
	}
	for _, c := range []struct{ example, want string }{
		{`{"id": "a", "at": "2026-01-02T03:04:05Z", "Plain": 1, "typ": "x"}`, `unknown field "typ"`},
		{`{"id": "a", "Plain": 1}`, `lacks ["at"]`},
		{`{"id": 1, "at": "2026-01-02T03:04:05Z", "Plain": 1}`, `does not decode`},
		{good + good, `more than one JSON value`},
	} {
		err := CheckJSONExample(c.example, &record{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.example, err, c.want)
		}
	}
}

func TestBlockAfter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.md")
	doc := "# A\n\n```json\n{\"a\": 1}\n```\n\n## B\n\ntext\n\n```json\n{\"b\": 2}\n```\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if got := BlockAfter(t, path, "## B"); got != "{\"b\": 2}\n" {
		t.Errorf("block after ## B: %q", got)
	}
	if same, err := SameJSON([]byte(`{"a": [1, 2]}`), []byte(`{"a":[1,2]}`)); !same || err != nil {
		t.Errorf("SameJSON: %v, %v", same, err)
	}
}
