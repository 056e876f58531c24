// Package field is the error vocabulary of configuration checks: a value
// that breaks a rule, named by its path in the config file's spelling.
//
// Each library's Validate returns its problems as *Error values joined with
// errors.Join, with paths relative to the library's own config ("burst",
// "aimd.decrease_factor", "types.resize.path"). The layer that reads the
// file adds the section with Under and the line number, so a rule is
// written once, in the package that owns the value.
package field

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Error is one field that breaks a rule.
type Error struct {
	// Field is the dotted path of the value in the config file's spelling,
	// relative to the config that was validated.
	Field string
	// Reason says what is wrong, as "must be > 0, got -1".
	Reason string
}

func (e *Error) Error() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Invalid returns an *Error for field with a formatted reason.
func Invalid(field, format string, args ...any) *Error {
	return &Error{Field: field, Reason: fmt.Sprintf(format, args...)}
}

// Join joins a path and a key with a dot; an empty side is left out. A key
// that holds a character that does not print (a newline, a tab, a control
// or format character) is shown quoted, so a hostile key in a config file
// cannot forge or break a line of an error message.
func Join(prefix, key string) string {
	if strings.ContainsFunc(key, func(r rune) bool { return !unicode.IsPrint(r) }) {
		key = strconv.Quote(key)
	}
	switch {
	case prefix == "":
		return key
	case key == "":
		return prefix
	}
	return prefix + "." + key
}

// Under returns err with prefix put in front of the path of every *Error
// in it (errors.Join trees are walked). Other errors become *Error values
// at prefix, so the result is a list of field errors. It returns nil for a
// nil err.
func Under(prefix string, err error) error {
	if err == nil {
		return nil
	}
	list := Flatten(err)
	out := make([]error, len(list))
	for i, e := range list {
		out[i] = &Error{Field: Join(prefix, e.Field), Reason: e.Reason}
	}
	return errors.Join(out...)
}

// Flatten lists the field errors in err, in order. An error that is not a
// *Error (nor a join of them) is listed with an empty Field and its text
// as the reason.
func Flatten(err error) []*Error {
	if err == nil {
		return nil
	}
	var fe *Error
	if errors.As(err, &fe) && fe == err {
		return []*Error{fe}
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []*Error
		for _, e := range j.Unwrap() {
			out = append(out, Flatten(e)...)
		}
		return out
	}
	if errors.As(err, &fe) {
		return []*Error{fe}
	}
	return []*Error{{Reason: err.Error()}}
}
