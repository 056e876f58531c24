package schema

import (
	"encoding"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// envPattern matches a string that reads the environment: ${VAR} or
// ${VAR:-default}. Such a string may stand for any scalar, since it is
// expanded before the value is decoded.
const envPattern = `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`

// durationPattern matches a Go duration ("500ms", "1m30s", "0").
const durationPattern = `^(0|-?([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))*)$`

// The tags that document an option, beside its yaml tag:
//
//	doc:"…"              what the option does; a default that is computed
//	                     (a host name, another option's value) is said here
//	enum:"a,b,c"         the values accepted (of a list: of its items), when
//	                     they are a closed set;
//	                     ";anycase" after the list: in any letter case;
//	                     ";open": other values are accepted too (the list is
//	                     a suggestion, such as HTTP methods); ";empty": ""
//	                     is accepted too, and means the default
//	default:"…"          the default of an entry of a map or list, whose
//	                     zero value stands for it (jobs.types.NAME.method)
//
// A missing doc tag is not an error here; internal/app/config's tests require
// one on every option of the config file.
const (
	docTag     = "doc"
	enumTag    = "enum"
	defaultTag = "default"
)

// Enum is the closed set of values of an option (its enum tag).
type Enum struct {
	Values  []string
	AnyCase bool // the values are read in any letter case
	Open    bool // other values are accepted too: Values are suggestions
	Empty   bool // "" is accepted too, and means the default
}

func parseEnum(tag string) *Enum {
	if tag == "" {
		return nil
	}
	list, flags, _ := strings.Cut(tag, ";")
	e := &Enum{Values: strings.Split(list, ",")}
	for f := range strings.SplitSeq(flags, ";") {
		switch f {
		case "anycase":
			e.AnyCase = true
		case "open":
			e.Open = true
		case "empty":
			e.Empty = true
		}
	}
	return e
}

// schema returns the anyOf of the enum: one of the values, or a string
// that reads the environment, or null (the default).
func (e *Enum) schema() []any {
	values := make([]any, len(e.Values))
	for i, v := range e.Values {
		values[i] = v
	}
	out := []any{map[string]any{"enum": values}}
	switch {
	case e.Open:
		out = append(out, map[string]any{"type": "string"})
	case e.AnyCase:
		alts := make([]string, len(e.Values))
		for i, v := range e.Values {
			alts[i] = anyCasePattern(v)
		}
		out = append(out, map[string]any{"type": "string", "pattern": "^(" + strings.Join(alts, "|") + ")$"})
	}
	if e.Empty {
		// Not in the enum, so that an editor does not offer it.
		out = append(out, map[string]any{"type": "string", "maxLength": 0})
	}
	return append(out, map[string]any{"type": "string", "pattern": envPattern}, map[string]any{"type": "null"})
}

// anyCasePattern matches s in any letter case ("ms" -> "[mM][sS]"); the
// schema's regular expressions (ECMA-262) have no case-insensitive flag.
func anyCasePattern(s string) string {
	var b strings.Builder
	for _, r := range s {
		lo, up := strings.ToLower(string(r)), strings.ToUpper(string(r))
		if lo == up {
			b.WriteString(regexpQuote(string(r)))
			continue
		}
		b.WriteString("[" + lo + up + "]")
	}
	return b.String()
}

func regexpQuote(s string) string {
	if strings.ContainsAny(s, `\.+*?()|[]{}^$-`) {
		return `\` + s
	}
	return s
}

// JSONSchema returns the JSON Schema (draft 2020-12) of the options of the
// struct that v points to, read from the same tags Decode reads, with v's
// values as the defaults. Each option has its doc tag as its description
// and its enum tag as the values it may take. The schema describes the
// shape of the file: which keys exist, how they nest, the type of each
// value and the closed sets; the rules on values (ranges, cross-field
// checks) stay in each library's Validate. id is the schema's $id.
//
// Every value may be null ("key:" with no value keeps the default), and
// every scalar may be a string that reads the environment (${VAR}).
func JSONSchema(v any, id string) map[string]any {
	s := typeSchema(reflect.ValueOf(v).Elem())
	s["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	if id != "" {
		s["$id"] = id
	}
	return s
}

// typeSchema returns the schema of the value v (its type, and its value
// as the default).
func typeSchema(v reflect.Value) map[string]any {
	t := v.Type()
	switch {
	case t == durationType:
		return map[string]any{"type": []string{"string", "null"}, "pattern": durationPattern + "|" + envPattern, "default": time.Duration(v.Int()).String()}
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			s := typeSchema(reflect.New(t.Elem()).Elem())
			delete(s, "default") // nil is "unset": its meaning is the field's default tag
			return s
		}
		return typeSchema(v.Elem())
	case isText(t):
		s := map[string]any{"type": []string{"string", "null"}}
		if d, ok := defaultOf(v, false); ok {
			s["default"] = d
		}
		return s
	}
	switch t.Kind() {
	case reflect.Struct:
		return structSchema(v)
	case reflect.Map:
		s := map[string]any{"type": []string{"object", "null"}, "additionalProperties": typeSchema(reflect.New(t.Elem()).Elem())}
		if d, ok := defaultOf(v, false); ok {
			s["default"] = d
		}
		return s
	case reflect.Slice:
		s := map[string]any{"type": []string{"array", "null"}, "items": typeSchema(reflect.New(t.Elem()).Elem())}
		if d, ok := defaultOf(v, false); ok {
			s["default"] = d
		}
		return s
	}
	return scalarSchema(v, false)
}

func isText(t reflect.Type) bool {
	return reflect.PointerTo(t).Implements(textUnmarshalerType) && t.Kind() != reflect.Struct
}

// structSchema lists a struct's options; any other key is an error.
func structSchema(v reflect.Value) map[string]any {
	props := map[string]any{}
	for name, o := range options(v.Type()) {
		f := v.FieldByIndex(o.index)
		var s map[string]any
		if o.negated && f.Kind() == reflect.Bool {
			s = scalarSchema(f, true)
		} else {
			s = typeSchema(f)
		}
		if o.doc != "" {
			s["description"] = o.doc
		}
		if d, ok := tagDefault(f, o.def); ok {
			s["default"] = d
		}
		if e := parseEnum(o.enum); e != nil {
			if items, ok := s["items"].(map[string]any); ok {
				items["anyOf"] = e.schema() // on a list: the values of its items
			} else {
				s["anyOf"] = e.schema()
			}
		}
		props[name] = s
	}
	return map[string]any{"type": []string{"object", "null"}, "properties": props, "additionalProperties": false}
}

// scalarSchema is the schema of a bool, number or string; negated gives a
// bool's default as its negation.
func scalarSchema(v reflect.Value, negated bool) map[string]any {
	var typ string
	switch v.Kind() {
	case reflect.Bool:
		typ = "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		typ = "integer"
	case reflect.Float32, reflect.Float64:
		typ = "number"
	case reflect.String:
		return map[string]any{"type": []string{"string", "null"}, "default": v.String()}
	default:
		return map[string]any{}
	}
	s := map[string]any{"type": []string{typ, "string", "null"}, "pattern": envPattern}
	if d, ok := defaultOf(v, negated); ok {
		s["default"] = d
	}
	return s
}

// defaultOf is v as a JSON value: a duration or a text value as its
// string, a list or a map as one (nil ones empty), a scalar as itself;
// negated gives a bool as its negation. ok is false for a nil pointer and a
// struct, which have no value of their own (a struct's options have).
func defaultOf(v reflect.Value, negated bool) (any, bool) {
	t := v.Type()
	switch {
	case t == durationType:
		return time.Duration(v.Int()).String(), true
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			return nil, false
		}
		return defaultOf(v.Elem(), negated)
	case isText(t):
		if m, ok := v.Interface().(encoding.TextMarshaler); ok {
			if b, err := m.MarshalText(); err == nil {
				return string(b), true
			}
		}
		return nil, false
	}
	switch t.Kind() {
	case reflect.Bool:
		return v.Bool() != negated, true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint(), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	case reflect.String:
		return v.String(), true
	case reflect.Slice:
		out := make([]any, 0, v.Len())
		for i := range v.Len() {
			d, ok := defaultOf(v.Index(i), false)
			if !ok {
				return nil, false
			}
			out = append(out, d)
		}
		return out, true
	case reflect.Map:
		out := map[string]any{}
		for _, k := range v.MapKeys() {
			if k.Kind() != reflect.String {
				return nil, false
			}
			d, ok := defaultOf(v.MapIndex(k), false)
			if !ok {
				return nil, false
			}
			out[k.String()] = d
		}
		return out, true
	}
	return nil, false
}

// tagDefault is a default tag read as the type of v, when v is zero (an
// entry of a map or list, whose zero value stands for the default).
func tagDefault(v reflect.Value, tag string) (any, bool) {
	if tag == "" || !v.IsZero() {
		return nil, false
	}
	t := v.Type()
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Bool:
		b, err := strconv.ParseBool(tag)
		return b, err == nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(tag, 10, 64)
		return i, err == nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(tag, 64)
		return f, err == nil
	}
	return tag, true
}

// Option is one key of a file, as a reference table lists it.
type Option struct {
	// Path is the key's path: "limiter.share.mode"; an entry of a map is
	// NAME ("jobs.types.NAME.method"), an item of a list [] ("target.retry_after_headers[].unit").
	Path string
	// Type is "string", "integer", "number", "boolean", "duration",
	// "section" (a struct of options), "list of T" or "map of T".
	Type string
	// Default is the default as a JSON value; HasDefault is false when
	// there is none (a section, a pointer left nil without a default tag).
	Default    any
	HasDefault bool
	Doc        string
	Enum       *Enum
}

// Reference lists every option of the struct that v points to, with v's
// values as the defaults, in the order of the struct's fields, each
// section before its options. It reads the same tags as JSONSchema.
func Reference(v any) []Option {
	var out []Option
	reference(&out, "", reflect.ValueOf(v).Elem())
	return out
}

func reference(out *[]Option, prefix string, v reflect.Value) {
	t := v.Type()
	switch {
	case t == durationType || isText(t):
		return
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v = reflect.New(t.Elem()).Elem()
		} else {
			v = v.Elem()
		}
		reference(out, prefix, v)
		return
	}
	switch t.Kind() {
	case reflect.Map:
		reference(out, prefix+".NAME", reflect.New(t.Elem()).Elem())
	case reflect.Slice:
		reference(out, prefix+"[]", reflect.New(t.Elem()).Elem())
	case reflect.Struct:
		opts := options(t)
		names := make([]string, 0, len(opts))
		for k := range opts {
			names = append(names, k)
		}
		// In the order of the fields (inline ones where they are embedded).
		sort.Slice(names, func(i, j int) bool { return lessIndex(opts[names[i]].index, opts[names[j]].index) })
		for _, name := range names {
			o := opts[name]
			f := v.FieldByIndex(o.index)
			path := name
			if prefix != "" {
				path = prefix + "." + name
			}
			opt := Option{Path: path, Type: typeName(f.Type()), Doc: o.doc, Enum: parseEnum(o.enum)}
			opt.Default, opt.HasDefault = defaultOf(f, o.negated)
			if d, ok := tagDefault(f, o.def); ok {
				opt.Default, opt.HasDefault = d, true
			}
			*out = append(*out, opt)
			reference(out, path, f)
		}
	}
}

func lessIndex(a, b []int) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// typeName names the type of an option for a reader.
func typeName(t reflect.Type) string {
	switch {
	case t == durationType:
		return "duration"
	case t.Kind() == reflect.Pointer:
		return typeName(t.Elem())
	case isText(t):
		return "string"
	}
	switch t.Kind() {
	case reflect.Struct:
		return "section"
	case reflect.Map:
		return "map of " + plural(typeName(t.Elem()))
	case reflect.Slice:
		return "list of " + plural(typeName(t.Elem()))
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.String:
		return "string"
	}
	return t.Kind().String()
}

func plural(s string) string {
	if strings.HasPrefix(s, "list of ") || strings.HasPrefix(s, "map of ") {
		return s
	}
	return s + "s"
}
