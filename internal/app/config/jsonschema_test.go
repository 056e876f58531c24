package config_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/internal/app/config"
	"github.com/sluicehq/sluice/internal/schema"
	"github.com/sluicehq/sluice/worker"
)

// The schema is checked with santhosh-tekuri/jsonschema, a validator of
// draft 2020-12 that sluice does not own: what it accepts is what an
// editor's YAML language server accepts.

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
	c.DefaultDraft(jsonschema.Draft2020)
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
	return jsonValue(t, v)
}

func jsonValue(t *testing.T, v any) any {
	t.Helper()
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
// for editors, and its Pub/Sub variant are valid against it.
func TestSchemaValidatesExample(t *testing.T) {
	s := compileSchema(t)
	if !bytes.HasPrefix(sluice.ExampleConfig, []byte("# yaml-language-server: $schema="+config.SchemaFile+"\n")) {
		t.Errorf("config.example.yaml does not name %s on its first line", config.SchemaFile)
	}
	if err := s.Validate(instance(t, string(sluice.ExampleConfig))); err != nil {
		t.Fatalf("config.example.yaml: %v", err)
	}
	pubsub, err := config.PubSubExample(sluice.ExampleConfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(instance(t, string(pubsub))); err != nil {
		t.Fatalf("the Pub/Sub example: %v", err)
	}
}

// A snippet is a fenced YAML block of a Markdown page.
type snippet struct {
	src   string // the block, without its fence and indent
	under string // a fragment's path ("limiter.share"); "" for a whole file
	other bool   // another program's file (a Helm values file, a Prometheus config)
}

var (
	fence    = regexp.MustCompile("(?ms)^( *)```ya?ml[^\n]*\n(.*?)^ *```")
	fragment = regexp.MustCompile(`^# under ([a-z_.]+):`)
)

// snippets finds the YAML blocks of a page and tells what each is. The rule:
//
//   - a block whose first line is "# under PATH:" (such as "# under
//     limiter.share:") is a fragment of the config file, checked as the
//     value of PATH;
//   - a block whose top-level keys are all sections of the config file
//     (source:, limiter:, …) is a config file, checked whole;
//   - any other block is another program's file and is not checked, unless
//     one of its top-level keys is a section or within an edit or two of
//     one: that is a config file with a misspelled section, and is checked
//     whole (so it fails).
func snippets(t *testing.T, page string, sections map[string]any) []snippet {
	var out []snippet
	for _, m := range fence.FindAllStringSubmatch(page, -1) {
		indent, body := m[1], m[2]
		var lines []string
		for l := range strings.SplitSeq(body, "\n") {
			lines = append(lines, strings.TrimPrefix(l, indent))
		}
		sn := snippet{src: strings.Join(lines, "\n")}
		if f := fragment.FindStringSubmatch(sn.src); f != nil {
			sn.under = f[1]
			out = append(out, sn)
			continue
		}
		var top map[string]any
		if err := yaml.Unmarshal([]byte(sn.src), &top); err != nil {
			t.Errorf("a YAML block that does not parse: %v\n%s", err, sn.src)
			continue
		}
		sn.other = true
		for k := range top {
			if nearSection(k, sections) {
				sn.other = false
			}
		}
		out = append(out, sn)
	}
	return out
}

// nearSection: key is a section, or a likely misspelling of one.
func nearSection(key string, sections map[string]any) bool {
	for s := range sections {
		maxD := 2
		if len(s) < 5 {
			maxD = 1
		}
		if schema.EditDistance(key, s) <= maxD {
			return true
		}
	}
	return false
}

// validateSnippet checks a snippet, a fragment as the value of its path.
func validateSnippet(t *testing.T, s *jsonschema.Schema, sn snippet) error {
	var v any
	if err := yaml.Unmarshal([]byte(sn.src), &v); err != nil {
		return err
	}
	if sn.under != "" {
		keys := strings.Split(sn.under, ".")
		for i := len(keys) - 1; i >= 0; i-- {
			v = map[string]any{keys[i]: v}
		}
	}
	return s.Validate(jsonValue(t, v))
}

// TestSchemaValidatesDocSnippets: every config snippet of the README and
// docs/ (see snippets for which blocks are config) is valid against the
// schema, so an unknown key, a wrong type or a misspelled value in the
// docs fails here.
func TestSchemaValidatesDocSnippets(t *testing.T) {
	s := compileSchema(t)
	sections := config.JSONSchema()["properties"].(map[string]any)
	files, _ := filepath.Glob("../../../docs/*.md")
	files = append(files, "../../../README.md")
	checked := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, sn := range snippets(t, string(data), sections) {
			if sn.other {
				t.Logf("%s: not a config: %.40q", f, sn.src)
				continue
			}
			checked++
			if err := validateSnippet(t, s, sn); err != nil {
				t.Errorf("%s: snippet\n%s\n%v", f, sn.src, err)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no config snippet found in the docs")
	}
	t.Logf("%d config snippets checked", checked)
}

// TestSnippetRule: the rule of snippets on blocks of each kind, so that a
// fragment is checked under its path and a misspelled section is not
// taken for another program's file.
func TestSnippetRule(t *testing.T) {
	s := compileSchema(t)
	sections := config.JSONSchema()["properties"].(map[string]any)
	page := "```yaml\n# under limiter.share:\nmode: members\n```\n" +
		"```yaml\n# under limiter.share:\nmode: member\n```\n" +
		"  ```yaml\n  worker:\n    max_in_flight: 8\n  ```\n" +
		"```yaml\nlimitr:\n  burst: 5s\n```\n" +
		"```yaml\nscrape_configs:\n  - job_name: sluice\n```\n"
	got := snippets(t, page, sections)
	if len(got) != 5 {
		t.Fatalf("%d snippets, want 5", len(got))
	}
	for i, want := range []struct {
		other, valid bool
	}{{false, true}, {false, false}, {false, true}, {false, false}, {true, false}} {
		if got[i].other != want.other {
			t.Errorf("snippet %d %q: other %v, want %v", i, got[i].src, got[i].other, want.other)
			continue
		}
		if want.other {
			continue
		}
		if err := validateSnippet(t, s, got[i]); (err == nil) != want.valid {
			t.Errorf("snippet %d %q: %v, want valid=%v", i, got[i].src, err, want.valid)
		}
	}
}

// parse runs what `sluice config validate` runs, with an empty environment.
func parse(doc string) error {
	_, err := config.Parse([]byte(doc), config.Options{Lookup: func(string) (string, bool) { return "", false }, NoTarget: true})
	return err
}

// TestSchemaAgreesWithDecoder: documents of the wrong shape are refused by
// the schema and by the decoder alike, and documents the decoder accepts
// (an environment reference standing for a number or a value of a closed
// set among them) pass the schema.
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
		{"source:\n  kind: ${KIND:-jetstream}", true},
		{"log: {level: ''}", true},
		{"limiter: {controller: cubic}", true},
		{"limiter:\n  controller:", true},
		{"log: {level: WARN}", true},
		{"log: {level: warning}", true},
		{"target: {retry_after_headers: [{name: X-Wait, unit: MS}]}", true},
		{"jobs: {types: {a: {method: propfind}}}", true},
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
		{"source: {kind: jetstrem}", false},
		{"limiter: {controller: aimdd}", false},
		{"limiter: {controller: AIMD}", false},
		{"log: {level: verbose}", false},
		{"log: {format: yaml}", false},
		{"limiter: {share: {mode: lease}}", false},
		{"target: {rate_limit_headers: ietff}", false},
		{"target: {retry_after_headers: [{name: X-Wait, unit: minutes}]}", false},
		{"jobs: {envelope: xml}", false},
		{"dead_letters: {kind: file}", false},
	} {
		schemaErr := s.Validate(instance(t, tc.doc))
		decodeErr := parse(tc.doc)
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

// TestSchemaRefusesMisspelledValues: a misspelled source kind, controller
// and log level fail the schema, and the error names the key.
func TestSchemaRefusesMisspelledValues(t *testing.T) {
	s := compileSchema(t)
	for doc, path := range map[string]string{
		"source:\n  kind: jetstrem\n":        "/source/kind",
		"limiter:\n  controller: aimdd\n":    "/limiter/controller",
		"log:\n  level: verbose\n":           "/log/level",
		"limiter:\n  share: {mode: lease}\n": "/limiter/share/mode",
	} {
		err := s.Validate(instance(t, doc))
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%q passes the schema: %v", doc, err)
			continue
		}
		if !strings.Contains(err.Error(), path) {
			t.Errorf("%q: the error does not name %s:\n%v", doc, path, err)
		}
	}
}

// closedSets are the options whose values are a closed set; each must have
// an enum tag (a new one belongs here).
var closedSets = []string{
	"source.kind", "target.rate_limit_headers", "target.rate_limit_reset",
	"target.retry_after_headers[].unit", "jobs.envelope", "limiter.controller",
	"limiter.share.mode", "results.kind", "dead_letters.kind", "log.format", "log.level",
}

// consistent are the other values a value of a closed set needs so that
// the rules across sections accept it.
var consistent = map[string]string{
	"results.kind=pubsub":          "source: {kind: pubsub, pubsub: {project: p}}\n",
	"dead_letters.kind=pubsub":     "source: {kind: pubsub, pubsub: {project: p}}\n",
	"target.rate_limit_reset=unix": "target: {rate_limit_headers: x-ratelimit}\n",
}

// TestEnumsAgreeWithChecks: for every closed set, the schema and the checks
// of `sluice config validate` agree on each value of the enum, the value
// in upper case, the empty string and a misspelling: the enum is the set
// the code accepts, no more and no less on these.
func TestEnumsAgreeWithChecks(t *testing.T) {
	s := compileSchema(t)
	byPath := map[string]schema.Option{}
	for _, o := range config.Reference() {
		byPath[o.Path] = o
	}
	for _, path := range closedSets {
		o := byPath[path]
		if o.Enum == nil || o.Enum.Open {
			t.Errorf("%s: no closed enum tag", path)
			continue
		}
		candidates := []string{"", "bogus", o.Enum.Values[0] + "x"}
		for _, v := range o.Enum.Values {
			candidates = append(candidates, v, strings.ToUpper(v))
		}
		for _, v := range candidates {
			doc := docSetting(path, v)
			schemaOK := s.Validate(instance(t, doc)) == nil
			problems := problemsAt(parse(consistent[path+"="+v]+doc), strings.ReplaceAll(path, "[]", "[0]"))
			if schemaOK != (problems == "") {
				t.Errorf("%s = %q: schema ok=%v, config validate: %q", path, v, schemaOK, problems)
			}
		}
	}
}

// docSetting is a config file that sets path to the string v; an item of a
// list ([]) is the list's first, with a valid name.
func docSetting(path, v string) string {
	var value any = v
	keys := strings.Split(path, ".")
	for i := len(keys) - 1; i >= 0; i-- {
		k := keys[i]
		if name, ok := strings.CutSuffix(k, "[]"); ok {
			item := value.(map[string]any)
			item["name"] = "X-Wait"
			value = map[string]any{name: []any{item}}
			continue
		}
		value = map[string]any{k: value}
	}
	out, err := yaml.Marshal(value)
	if err != nil {
		panic(err)
	}
	return string(out)
}

// problemsAt is the problems of err on the option path.
func problemsAt(err error, path string) string {
	var out []string
	for _, e := range unwrap(err) {
		var p *config.Problem
		if errors.As(e, &p) && p.Field == path {
			out = append(out, p.Reason)
		}
	}
	return strings.Join(out, "; ")
}

func unwrap(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err == nil {
		return nil
	}
	return []error{err}
}

// TestEveryOptionDescribed: every option of the file has a description and
// every value option a default, in the schema and in the option tables. An
// option without one fails here: give its field a doc tag (see
// internal/schema) such as doc:"What it does. Empty: what is used then.".
func TestEveryOptionDescribed(t *testing.T) {
	opts := config.Reference()
	leaves, enums := 0, 0
	for _, o := range opts {
		if o.Doc == "" {
			t.Errorf("%s: no description: add a doc tag to its field", o.Path)
		}
		if o.Type == "section" {
			continue
		}
		leaves++
		if o.Enum != nil {
			enums++
		}
		if !o.HasDefault {
			t.Errorf("%s: no default", o.Path)
		}
	}
	// The schema carries them: count descriptions, enums and defaults in it.
	var descriptions, schemaEnums, defaults, props int
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if p, ok := v["properties"].(map[string]any); ok {
				for _, c := range p {
					props++
					c := c.(map[string]any)
					if c["description"] != nil {
						descriptions++
					}
					if c["default"] != nil {
						defaults++
					}
				}
			}
			if _, ok := v["enum"]; ok {
				schemaEnums++
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(jsonRoundTrip(t, config.JSONSchema()))
	if descriptions != props || schemaEnums != enums {
		t.Errorf("schema: %d properties, %d descriptions, %d enums (want %d)", props, descriptions, schemaEnums, enums)
	}
	t.Logf("%d options (%d with a value), %d enums; schema: %d properties, %d descriptions, %d defaults", len(opts), leaves, enums, props, descriptions, defaults)
}

func jsonRoundTrip(t *testing.T, v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestDefaultsAreTheCodes: the defaults the schema gives where the Go
// value is not the default itself are what the code does: a job type with
// nothing set, and the classifier's statuses.
func TestDefaultsAreTheCodes(t *testing.T) {
	defaults := map[string]any{}
	for _, o := range config.Reference() {
		defaults[o.Path] = o.Default
	}
	cfg, err := config.Parse([]byte("jobs: {types: {a: {}}}"), config.Options{NoTarget: true})
	if err != nil {
		t.Fatal(err)
	}
	d, err := worker.NewDecoder(cfg.WorkerConfig(time.Minute).Jobs)
	if err != nil {
		t.Fatal(err)
	}
	job, err := d.Decode("1", nil, []byte(`{"type": "a"}`))
	if err != nil {
		t.Fatal(err)
	}
	if job.Method != defaults["jobs.types.NAME.method"] || job.Path != defaults["jobs.types.NAME.path"] || job.Cost != defaults["jobs.types.NAME.cost"] {
		t.Errorf("a job of a type with nothing set: %s %s cost %v; the schema says %v %v cost %v", job.Method, job.Path, job.Cost,
			defaults["jobs.types.NAME.method"], defaults["jobs.types.NAME.path"], defaults["jobs.types.NAME.cost"])
	}

	// Default's statuses classify as the classifier's own defaults (nil).
	hc, err := cfg.HTTPConfig()
	if err != nil {
		t.Fatal(err)
	}
	zero := hc.Classifier
	zero.ThrottleStatuses, zero.ThrottleStatusesWithWait = nil, nil
	now := time.Unix(0, 0)
	for status := 400; status < 600; status++ {
		for _, h := range []http.Header{nil, {"Retry-After": {"1"}}} {
			if got, want := hc.Classifier.Classify(status, h, now).Kind, zero.Classify(status, h, now).Kind; got != want {
				t.Errorf("status %d, header %v: %v, the classifier's default %v", status, h, got, want)
			}
		}
	}
}

// TestSchemaFileIsCurrent: the config.schema.json of the repository, which
// config.example.yaml names, is what `sluice config schema` prints.
func TestSchemaFileIsCurrent(t *testing.T) {
	want, err := config.SchemaJSON()
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../../" + config.SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go generate ./internal/app/config", config.SchemaFile)
	}
}

// TestOptionTablesAreCurrent: the option tables of docs/configuration.md
// are what the code generates from the config's doc tags.
func TestOptionTablesAreCurrent(t *testing.T) {
	got, err := os.ReadFile("../../../" + config.OptionsFile)
	if err != nil {
		t.Fatal(err)
	}
	want, err := config.WithOptionTables(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		gl, wl := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("%s differs from the code at line %d:\n got: %s\nwant: %s\nrun go generate ./internal/app/config", config.OptionsFile, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("%s differs from the code in length: run go generate ./internal/app/config", config.OptionsFile)
	}
}
