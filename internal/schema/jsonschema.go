package schema

import (
	"encoding"
	"reflect"
	"time"
)

// envPattern matches a string that reads the environment: ${VAR} or
// ${VAR:-default}. Such a string may stand for any scalar, since it is
// expanded before the value is decoded.
const envPattern = `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`

// durationPattern matches a Go duration ("500ms", "1m30s", "0").
const durationPattern = `^(0|-?([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h))*)$`

// JSONSchema returns the JSON Schema (draft 2020-12) of the options of the
// struct that v points to, read from the same tags Decode reads, with v's
// values as the defaults. It describes the shape of the file: which keys
// exist, how they nest, and the type of each value; the rules on values
// (ranges, enums, cross-field checks) stay in each library's Validate. id
// is the schema's $id.
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
// as the default where it is a scalar).
func typeSchema(v reflect.Value) map[string]any {
	t := v.Type()
	switch {
	case t == durationType:
		s := map[string]any{"type": []string{"string", "null"}, "pattern": durationPattern + "|" + envPattern}
		if d := time.Duration(v.Int()); d != 0 {
			s["default"] = d.String()
		}
		return s
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			return typeSchema(reflect.New(t.Elem()).Elem())
		}
		return typeSchema(v.Elem())
	case reflect.PointerTo(t).Implements(textUnmarshalerType) && t.Kind() != reflect.Struct:
		s := map[string]any{"type": []string{"string", "null"}}
		if m, ok := v.Interface().(encoding.TextMarshaler); ok {
			if b, err := m.MarshalText(); err == nil && len(b) > 0 {
				s["default"] = string(b)
			}
		}
		return s
	}
	switch t.Kind() {
	case reflect.Struct:
		return structSchema(v)
	case reflect.Map:
		return map[string]any{"type": []string{"object", "null"}, "additionalProperties": typeSchema(reflect.New(t.Elem()).Elem())}
	case reflect.Slice:
		return map[string]any{"type": []string{"array", "null"}, "items": typeSchema(reflect.New(t.Elem()).Elem())}
	}
	return scalarSchema(v, false)
}

// structSchema lists a struct's options; any other key is an error.
func structSchema(v reflect.Value) map[string]any {
	props := map[string]any{}
	for name, o := range options(v.Type()) {
		f := v.FieldByIndex(o.index)
		if o.negated && f.Kind() == reflect.Bool {
			props[name] = scalarSchema(f, true)
			continue
		}
		props[name] = typeSchema(f)
	}
	return map[string]any{"type": []string{"object", "null"}, "properties": props, "additionalProperties": false}
}

// scalarSchema is the schema of a bool, number or string; negated gives a
// bool's default as its negation.
func scalarSchema(v reflect.Value, negated bool) map[string]any {
	var typ string
	var def any
	switch v.Kind() {
	case reflect.Bool:
		typ, def = "boolean", v.Bool() != negated
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		typ, def = "integer", v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		typ, def = "integer", v.Uint()
	case reflect.Float32, reflect.Float64:
		typ, def = "number", v.Float()
	case reflect.String:
		s := map[string]any{"type": []string{"string", "null"}}
		if v.String() != "" {
			s["default"] = v.String()
		}
		return s
	default:
		return map[string]any{}
	}
	s := map[string]any{"type": []string{typ, "string", "null"}, "pattern": envPattern}
	if !v.IsZero() || typ == "boolean" {
		s["default"] = def
	}
	return s
}
