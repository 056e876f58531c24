package schema

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

type tagged struct {
	Mode  string            `yaml:"mode" enum:"a,b" doc:"The mode."`
	Level string            `yaml:"level" enum:"low,high;anycase;empty" doc:"The level."`
	Verb  string            `yaml:"verb" enum:"GET,POST;open" doc:"The verb."`
	Units []string          `yaml:"units" enum:"s,ms" doc:"Units."`
	Items map[string]item   `yaml:"items" doc:"Items."`
	Tags  map[string]string `yaml:"tags" doc:"Tags."`
}

type item struct {
	Method string   `yaml:"method" default:"POST" doc:"The method."`
	Cost   *float64 `yaml:"cost" default:"1" doc:"The cost."`
}

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	v := tagged{Mode: "a"}
	raw, err := json.Marshal(JSONSchema(&v, ""))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("t.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("t.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestEnumTags: each form of the enum tag accepts what it says, and
// nothing else.
func TestEnumTags(t *testing.T) {
	s := compile(t)
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{`{"mode": "a"}`, true},
		{`{"mode": "c"}`, false},
		{`{"mode": "A"}`, false},
		{`{"mode": ""}`, false},
		{`{"mode": "${MODE}"}`, true},
		{`{"mode": null}`, true},
		{`{"level": "HiGh"}`, true},
		{`{"level": ""}`, true},
		{`{"level": "higher"}`, false},
		{`{"verb": "PROPFIND"}`, true},
		{`{"units": ["s", "ms"]}`, true},
		{`{"units": ["m"]}`, false},
		{`{"units": "s"}`, false},
	} {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(tc.doc)))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(inst); (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.doc, err, tc.ok)
		}
	}
}

// TestReference: the options in field order, with their types, defaults
// (a map entry's from its default tags) and tags.
func TestReference(t *testing.T) {
	v := tagged{Mode: "a", Tags: map[string]string{"k": "v"}}
	got := map[string]Option{}
	var order []string
	for _, o := range Reference(&v) {
		got[o.Path] = o
		order = append(order, o.Path)
	}
	want := []string{"mode", "level", "verb", "units", "items", "items.NAME.method", "items.NAME.cost", "tags"}
	if len(order) != len(want) {
		t.Fatalf("paths %v, want %v", order, want)
	}
	for i := range want {
		if order[i] != want[i] {
			t.Fatalf("paths %v, want %v", order, want)
		}
	}
	for path, w := range map[string]struct {
		typ string
		def any
	}{
		"mode": {"string", "a"}, "level": {"string", ""}, "units": {"list of strings", []any{}},
		"items": {"map of sections", map[string]any{}}, "items.NAME.method": {"string", "POST"},
		"items.NAME.cost": {"number", 1.0}, "tags": {"map of strings", map[string]any{"k": "v"}},
	} {
		o := got[path]
		gotDef, _ := json.Marshal(o.Default)
		wantDef, _ := json.Marshal(w.def)
		if o.Type != w.typ || !o.HasDefault || string(gotDef) != string(wantDef) || o.Doc == "" {
			t.Errorf("%s: %+v, want type %s, default %s", path, o, w.typ, wantDef)
		}
	}
	if e := got["level"].Enum; e == nil || !e.AnyCase || !e.Empty || e.Open || len(e.Values) != 2 {
		t.Errorf("level's enum: %+v", e)
	}
}
