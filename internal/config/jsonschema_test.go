package config_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/config"
)

// compileSchema compiles the generated schema with a JSON Schema validator.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(config.JSONSchema())
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("sluice.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("sluice.schema.json")
	if err != nil {
		t.Fatalf("the generated schema does not compile: %v", err)
	}
	return s
}

// instance reads a YAML document as the JSON value a schema validates.
func instance(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatalf("%v in\n%s", err, src)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return inst
}

// TestSchemaValidatesExample: config.example.yaml, which names the schema
// for editors, is valid against it.
func TestSchemaValidatesExample(t *testing.T) {
	s := compileSchema(t)
	if !bytes.HasPrefix(sluice.ExampleConfig, []byte("# yaml-language-server: $schema=")) {
		t.Errorf("config.example.yaml does not name its schema on its first line")
	}
	if err := s.Validate(instance(t, string(sluice.ExampleConfig))); err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
}

var fence = regexp.MustCompile("(?ms)^( *)```ya?ml\n(.*?)^ *```")

// TestSchemaValidatesDocSnippets: every YAML block of the README and docs/
// whose top-level keys include a config section is a config snippet, and
// is valid against the schema (so an unknown key or a wrong type in the
// docs fails here).
func TestSchemaValidatesDocSnippets(t *testing.T) {
	s := compileSchema(t)
	sections := config.JSONSchema()["properties"].(map[string]any)
	files, _ := filepath.Glob("../../docs/*.md")
	files = append(files, "../../README.md")
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range fence.FindAllStringSubmatch(string(data), -1) {
			indent, body := m[1], m[2]
			var lines []string
			for l := range strings.SplitSeq(body, "\n") {
				lines = append(lines, strings.TrimPrefix(l, indent))
			}
			src := strings.Join(lines, "\n")
			var top map[string]any
			if yaml.Unmarshal([]byte(src), &top) != nil {
				continue // not a mapping: not a config
			}
			isConfig := false
			for k := range top {
				if _, ok := sections[k]; ok {
					isConfig = true
				}
			}
			if !isConfig {
				continue
			}
			checked++
			if err := s.Validate(instance(t, src)); err != nil {
				t.Errorf("%s: snippet\n%s\n%v", f, src, err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no config snippet found in the docs")
	}
	t.Logf("%d config snippets checked", checked)
}

// TestSchemaAgreesWithDecoder: documents of the wrong shape are refused by
// the schema and by the decoder alike, and documents the decoder accepts
// (an environment reference standing for a number among them) pass the
// schema.
func TestSchemaAgreesWithDecoder(t *testing.T) {
	s := compileSchema(t)
	for _, tc := range []struct {
		doc string
		ok  bool
	}{
		{"worker: {max_in_flight: 8}", true},
		{"worker:\n  max_in_flight: ${N:-8}", true},
		{"limiter: {burst: 1m30s}", true},
		{"target: {headers: {Authorization: Bearer x}}", true},
		{"worker:", true},
		{"worker: {max_in_flight: lots}", false},
		{"worker: {max_in_flight: 1.5}", false},
		{"limiter: {burst: 5}", false},
		{"limiter: {burst: soon}", false},
		{"target: {timeout: true}", false},
		{"worker: {max_inflight: 8}", false},
		{"nonsense: 1", false},
		{"source: {jetstream: {subjects: a.b}}", false},
		{"jobs: {types: {a: {cost: cheap}}}", false},
		{"log: [json]", false},
	} {
		schemaErr := s.Validate(instance(t, tc.doc))
		_, decodeErr := config.Parse([]byte(tc.doc), config.Options{Lookup: func(string) (string, bool) { return "", false }, NoTarget: true})
		if (schemaErr == nil) != tc.ok {
			t.Errorf("schema on %q: %v, want ok=%v", tc.doc, schemaErr, tc.ok)
		}
		if !tc.ok && decodeErr == nil {
			t.Errorf("the decoder accepts %q, which the schema refuses", tc.doc)
		}
		if tc.ok && decodeErr != nil {
			t.Errorf("the decoder refuses %q: %v", tc.doc, decodeErr)
		}
	}
}

// TestSchemaFileIsCurrent: the config.schema.json of the repository, which
// config.example.yaml names, is what `sluice config schema` prints
// (regenerate it with `go run ./cmd/sluice config schema > config.schema.json`).
func TestSchemaFileIsCurrent(t *testing.T) {
	want, err := json.MarshalIndent(config.JSONSchema(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../" + config.SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace(got), want) {
		t.Fatalf("%s is stale: run go run ./cmd/sluice config schema > %s", config.SchemaFile, config.SchemaFile)
	}
}
