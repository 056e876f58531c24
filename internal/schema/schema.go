// Package schema decodes a tree of keys and values (a config file, a
// trace's options line) into tagged Go structs, strictly: the one decoder of
// every option sluice reads.
//
// A struct field is an option when it has a `yaml:"name"` tag; `yaml:",inline"`
// on an embedded struct lifts its options to the parent; `yaml:"name,negated"`
// on a bool reads the option as the field's negation (limiter.Config's
// Disabled is the file's "enabled"). Fields keep the values they hold when
// their key is missing or null, so decoding on top of the defaults leaves the
// defaults in place. The tags are the schema: names, nesting and Go types are
// read from them by reflection, so an option is one tagged field. Its doc,
// enum and default tags describe it for JSONSchema and Reference (the
// editor's schema and the docs' option tables); Decode does not read them.
//
// The package knows no file format. internal/app/config builds a Node from
// YAML for the config file and from JSON for the options of a
// `sluice limiter replay` trace.
package schema

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/field"
)

// Kind is the shape of a Node.
type Kind int

// The kinds of nodes.
const (
	Null Kind = iota
	Scalar
	Map
	List
)

// ScalarType is what a scalar was written as.
type ScalarType int

// The types of scalars.
const (
	String ScalarType = iota
	Int
	Float
	Bool
)

// Node is a value of the tree. A Map's Keys and Values are in the order they
// were written; a List's items are in Values.
type Node struct {
	Kind   Kind
	Type   ScalarType // of a Scalar
	Value  string     // of a Scalar, as written
	Line   int        // where the value starts; 0 when unknown
	Keys   []*Node    // of a Map: scalar keys
	Values []*Node    // of a Map: the value of each key; of a List: its items
}

// Lines maps the path of each key that was set ("limiter.aimd.beta",
// "jobs.types.a", "target.retry_after_headers[0]") to its line.
type Lines map[string]int

// LineOf returns the line of path, or of its nearest parent that was set;
// 0 when none was.
func (l Lines) LineOf(path string) int {
	for p := path; p != ""; {
		if n, ok := l[p]; ok {
			return n
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0
}

// Decode decodes n into the value v points to, a pointer to a struct, with
// the paths of its problems under prefix. It returns every problem it found
// as joined *field.Error values (nil when none) and records in lines, when
// not nil, the line of each key it read. A value that cannot be decoded is
// left as it was; decoding goes on with the other keys.
func Decode(prefix string, n *Node, v any, lines Lines) error {
	d := &decoder{lines: lines}
	if lines == nil {
		d.lines = Lines{}
	}
	d.decode(prefix, n, reflect.ValueOf(v).Elem())
	errs := make([]error, len(d.errs))
	for i, e := range d.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

type decoder struct {
	lines Lines
	errs  []*field.Error
}

// fail records a problem with the value n at path; the problem's line is
// the value's.
func (d *decoder) fail(path string, n *Node, format string, args ...any) {
	if n != nil && n.Line > 0 {
		d.lines[path] = n.Line
	}
	d.errs = append(d.errs, field.Invalid(path, format, args...))
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

func (d *decoder) decode(path string, n *Node, v reflect.Value) {
	if _, ok := d.lines[path]; !ok && path != "" && n.Line > 0 {
		d.lines[path] = n.Line
	}
	if n.Kind == Null {
		return // "key:" with no value keeps what the field holds
	}
	switch {
	case v.Type() == durationType:
		d.duration(path, n, v)
		return
	case v.Kind() == reflect.Pointer:
		p := reflect.New(v.Type().Elem())
		if !v.IsNil() {
			p.Elem().Set(v.Elem())
		}
		d.decode(path, n, p.Elem())
		v.Set(p)
		return
	case reflect.PointerTo(v.Type()).Implements(textUnmarshalerType) && v.Kind() != reflect.Struct:
		if n.Kind != Scalar {
			d.fail(path, n, "must be a string")
			return
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(n.Value)); err != nil {
			d.fail(path, n, "%v", err)
		}
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(path, n, v)
	case reflect.Map:
		d.decodeMap(path, n, v)
	case reflect.Slice:
		if n.Kind != List {
			d.fail(path, n, "must be a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Values), len(n.Values))
		for i, c := range n.Values {
			d.decode(fmt.Sprintf("%s[%d]", path, i), c, s.Index(i))
		}
		v.Set(s)
	default:
		d.scalar(path, n, v, false)
	}
}

func (d *decoder) duration(path string, n *Node, v reflect.Value) {
	if n.Kind != Scalar {
		d.fail(path, n, `must be a duration such as "10s"`)
		return
	}
	dur, err := time.ParseDuration(n.Value)
	if err != nil {
		d.fail(path, n, `must be a duration such as "10s" or "1m30s", got %q`, n.Value)
		return
	}
	v.SetInt(int64(dur))
}

// option is a tagged field of a struct, found through inline embeddings.
type option struct {
	index   []int
	negated bool
	// doc, enum and def are its doc, enum and default tags (JSONSchema).
	doc, enum, def string
}

// Options lists the option names of a struct type and where they are.
func options(t reflect.Type) map[string]option {
	out := map[string]option{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, flags, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
			continue
		case name == "" && flags == "inline" && f.Type.Kind() == reflect.Struct:
			for k, o := range options(f.Type) {
				o.index = append([]int{i}, o.index...)
				out[k] = o
			}
		case name != "":
			out[name] = option{index: []int{i}, negated: flags == "negated",
				doc: f.Tag.Get(docTag), enum: f.Tag.Get(enumTag), def: f.Tag.Get(defaultTag)}
		}
	}
	return out
}

// Keys returns the option names of the struct type t, sorted.
func Keys(t reflect.Type) []string {
	opts := options(t)
	names := make([]string, 0, len(opts))
	for k := range opts {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func (d *decoder) decodeStruct(path string, n *Node, v reflect.Value) {
	if n.Kind != Map {
		d.fail(path, n, "must be a mapping of keys to values")
		return
	}
	opts := options(v.Type())
	seen := map[string]bool{}
	for i, k := range n.Keys {
		p := field.Join(path, k.Value)
		o, ok := opts[k.Value]
		switch {
		case !ok:
			d.fail(p, k, "unknown key%s", suggest(k.Value, opts))
			continue
		case seen[k.Value]:
			d.fail(p, k, "set twice")
			continue
		}
		seen[k.Value] = true
		d.lines[p] = k.Line
		f := v.FieldByIndex(o.index)
		if o.negated && f.Kind() == reflect.Bool {
			if n.Values[i].Kind == Null {
				continue
			}
			d.scalar(p, n.Values[i], f, true)
			continue
		}
		d.decode(p, n.Values[i], f)
	}
}

func (d *decoder) decodeMap(path string, n *Node, v reflect.Value) {
	if n.Kind != Map {
		d.fail(path, n, "must be a mapping")
		return
	}
	if v.Type().Key().Kind() != reflect.String {
		d.fail(path, n, "cannot be decoded (keys of %s)", v.Type().Key())
		return
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(v.Type()))
	}
	for i, k := range n.Keys {
		p := field.Join(path, k.Value)
		if k.Kind != Scalar || k.Value == "" {
			d.fail(p, k, "keys must be non-empty strings")
			continue
		}
		key := reflect.ValueOf(k.Value).Convert(v.Type().Key())
		if v.MapIndex(key).IsValid() {
			d.fail(p, k, "set twice")
			continue
		}
		elem := reflect.New(v.Type().Elem()).Elem()
		d.lines[p] = k.Line
		d.decode(p, n.Values[i], elem)
		v.SetMapIndex(key, elem)
	}
}

// scalar decodes a bool, number or string; negated stores !value in a bool.
func (d *decoder) scalar(path string, n *Node, v reflect.Value, negated bool) {
	kind := v.Kind()
	if n.Kind != Scalar {
		d.fail(path, n, "must be %s", kindName(kind))
		return
	}
	bad := func() { d.fail(path, n, "must be %s, got %q", kindName(kind), n.Value) }
	switch kind {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, err := strconv.ParseBool(n.Value)
		if n.Type != Bool || err != nil {
			bad()
			return
		}
		v.SetBool(b != negated)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, ok := parseInt(n, v.Type().Bits())
		if !ok {
			bad()
			return
		}
		v.SetInt(i)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(strings.ReplaceAll(n.Value, "_", ""), 0, v.Type().Bits())
		if n.Type != Int || err != nil {
			bad()
			return
		}
		v.SetUint(u)
	case reflect.Float32, reflect.Float64:
		f, ok := parseFloat(n)
		if !ok {
			bad()
			return
		}
		v.SetFloat(f)
	default:
		d.fail(path, n, "cannot be decoded (a %s)", v.Type())
	}
}

// parseInt reads an integer, or a number without a fraction ("1e3", "2.0");
// a fraction is an error, never truncated.
func parseInt(n *Node, bits int) (int64, bool) {
	if n.Type == Int {
		i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, bits)
		return i, err == nil
	}
	f, ok := parseFloat(n)
	if !ok || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
		return 0, false
	}
	i := int64(f)
	if bits < 64 && (i >= 1<<(bits-1) || i < -(1<<(bits-1))) {
		return 0, false
	}
	return i, true
}

// parseFloat reads an integer or a number, YAML's .inf and .nan included.
func parseFloat(n *Node) (float64, bool) {
	if n.Type != Int && n.Type != Float {
		return 0, false
	}
	switch strings.ToLower(strings.TrimLeft(n.Value, "+")) {
	case ".inf":
		return math.Inf(1), true
	case "-.inf":
		return math.Inf(-1), true
	case ".nan":
		return math.NaN(), true
	}
	f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil {
		if i, ierr := strconv.ParseInt(n.Value, 0, 64); ierr == nil {
			return float64(i), true
		}
		return 0, false
	}
	return f, true
}

func kindName(k reflect.Kind) string {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	}
	return "a " + k.String()
}

// suggest names the closest known key, for a typo, or lists the keys.
func suggest(key string, opts map[string]option) string {
	best, bestD := "", 3
	for f := range opts {
		if d := EditDistance(key, f); d < bestD || d == bestD && f < best && best != "" {
			best, bestD = f, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	names := make([]string, 0, len(opts))
	for f := range opts {
		names = append(names, f)
	}
	sort.Strings(names)
	return " (known: " + strings.Join(names, ", ") + ")"
}

// EditDistance is the Levenshtein distance between a and b, for "did you
// mean" suggestions.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
