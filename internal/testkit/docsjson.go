package testkit

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// BlockAfter returns the content of the first fenced block of the
// markdown file at path that starts after the first line holding marker (a
// heading, or the sentence that introduces the example). A missing marker or
// block fails the test.
func BlockAfter(t testing.TB, path, marker string) string {
	t.Helper()
	rest := after(t, path, marker)
	var block []string
	in := false
	for _, l := range strings.Split(rest, "\n") {
		switch {
		case strings.HasPrefix(l, "```") && !in:
			in = true
		case strings.HasPrefix(l, "```"):
			return strings.Join(block, "\n") + "\n"
		case in:
			block = append(block, l)
		}
	}
	t.Fatalf("%s: no fenced block after %q", path, marker)
	return ""
}

// CodeAfter returns the first code span (`…`, on one line or several) of
// the markdown file at path after the first occurrence of marker, its line
// breaks as spaces. A missing marker or span fails the test.
func CodeAfter(t testing.TB, path, marker string) string {
	t.Helper()
	_, rest, ok1 := strings.Cut(after(t, path, marker), "`")
	span, _, ok2 := strings.Cut(rest, "`")
	if !ok1 || !ok2 {
		t.Fatalf("%s: no code span after %q", path, marker)
	}
	return strings.ReplaceAll(span, "\n", " ")
}

// DecodeStrict decodes a JSON example of the docs into v (a pointer to the
// type the code reads or writes it with): one JSON value, and a key the type
// has no field for is an error.
func DecodeStrict(example string, v any) error {
	dec := json.NewDecoder(strings.NewReader(example))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("the example does not decode into %T: %w", v, err)
	}
	if dec.More() {
		return fmt.Errorf("the example holds more than one JSON value")
	}
	return nil
}

// CheckJSONExample checks a JSON example of the docs against the type the
// code writes it with: it decodes example into v (a pointer to that type)
// with DecodeStrict, and names every field of the type that is always
// written (a json tag without omitempty or omitzero) and that the example
// lacks.
func CheckJSONExample(example string, v any) error {
	if err := DecodeStrict(example, v); err != nil {
		return err
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(example), &keys); err != nil {
		return fmt.Errorf("the example is not a JSON object: %w", err)
	}
	var missing []string
	for _, name := range AlwaysWritten(reflect.TypeOf(v).Elem()) {
		if _, ok := keys[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("the example lacks %q, which %T always writes", missing, v)
	}
	return nil
}

// AlwaysWritten returns the JSON names of the fields of struct type t that
// encoding/json always writes: exported, not "-", without omitempty or
// omitzero.
func AlwaysWritten(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" && opts == "" {
			continue
		}
		if slices.ContainsFunc(strings.Split(opts, ","), func(o string) bool { return o == "omitempty" || o == "omitzero" }) {
			continue
		}
		names = append(names, cmp.Or(name, f.Name))
	}
	return names
}

// SameJSON reports whether two JSON texts are the same value, spacing
// aside; an error when either is not JSON.
func SameJSON(a, b []byte) (bool, error) {
	var ca, cb bytes.Buffer
	if err := errors.Join(json.Compact(&ca, a), json.Compact(&cb, b)); err != nil {
		return false, err
	}
	return bytes.Equal(ca.Bytes(), cb.Bytes()), nil
}

// after returns what follows the first occurrence of marker in the file at
// path. A missing file or marker fails the test.
func after(t testing.TB, path, marker string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), marker)
	if !ok {
		t.Fatalf("%s: no %q (the tests read the example after it)", path, marker)
	}
	return rest
}
