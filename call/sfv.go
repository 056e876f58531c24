package call

import (
	"errors"
	"strconv"
	"strings"
)

// This file parses the List structured field of RFC 9651 (Structured Field
// Values for HTTP), the syntax of the RateLimit and RateLimit-Policy fields.
// Only what those fields need is kept of the values: numbers, strings and
// tokens, with their parameters; byte sequences, booleans, dates and display
// strings are parsed (so that a field holding them is not rejected) and kept
// as their kind only. Inner lists are parsed and kept without their items.
// A field that does not parse is rejected whole, as RFC 9651 requires.
//
// The parser is bounded: a list of more than maxSFMembers members, or an
// item or inner list with more than maxSFParams parameters or items, is
// rejected as malformed as soon as the bound is passed; and every step
// moves forward in the input, so parsing takes time linear in its length.

// sfKind is the type of a bare item.
type sfKind uint8

const (
	sfInteger sfKind = iota + 1
	sfDecimal
	sfString
	sfToken
	sfBytes
	sfBoolean
	sfDate
	sfDisplay
	sfInnerList
)

// sfItem is a list member: a bare item (or an inner list) and its
// parameters.
type sfItem struct {
	kind   sfKind
	num    float64 // sfInteger, sfDecimal, sfDate
	str    string  // sfString, sfToken
	params []sfParam
}

type sfParam struct {
	key  string
	kind sfKind
	num  float64
	str  string
}

// param returns the numeric parameter key (an integer or decimal) and
// whether it is there. A repeated key takes its last value (RFC 9651,
// 4.2.3.2: a later value overwrites the earlier one).
func (it sfItem) param(key string) (float64, bool) {
	for i := len(it.params) - 1; i >= 0; i-- {
		if p := it.params[i]; p.key == key {
			return p.num, p.kind == sfInteger || p.kind == sfDecimal
		}
	}
	return 0, false
}

// number reports the item's value if it is an integer or a decimal.
func (it sfItem) number() (float64, bool) {
	return it.num, it.kind == sfInteger || it.kind == sfDecimal
}

var errSF = errors.New("call: malformed structured field")

// The most members of a list, and the most parameters of an item or items
// of an inner list, that the parser reads: the minimums RFC 9651 (3.1,
// 3.1.1, 3.1.2) asks a parser to support. No quota field comes near them.
const (
	maxSFMembers = 1024
	maxSFParams  = 256
)

// parseSFList parses the field lines of a List structured field, joined
// with commas as RFC 9110 combines them.
func parseSFList(lines []string) ([]sfItem, error) {
	p := sfParser{s: strings.Join(lines, ",")}
	p.skipSP()
	var out []sfItem
	if p.done() {
		return nil, nil
	}
	for {
		it, err := p.member()
		if err != nil {
			return nil, err
		}
		if len(out) == maxSFMembers {
			return nil, errSF
		}
		out = append(out, it)
		p.skipOWS()
		if p.done() {
			return out, nil
		}
		if p.s[p.i] != ',' {
			return nil, errSF
		}
		p.i++
		p.skipOWS()
		if p.done() { // a trailing comma
			return nil, errSF
		}
	}
}

type sfParser struct {
	s string
	i int
}

func (p *sfParser) done() bool { return p.i >= len(p.s) }

func (p *sfParser) skipSP() {
	for p.i < len(p.s) && p.s[p.i] == ' ' {
		p.i++
	}
}

func (p *sfParser) skipOWS() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *sfParser) member() (sfItem, error) {
	var it sfItem
	if !p.done() && p.s[p.i] == '(' {
		if err := p.innerList(); err != nil {
			return it, err
		}
		it.kind = sfInnerList
	} else {
		var err error
		if it.kind, it.num, it.str, err = p.bareItem(); err != nil {
			return it, err
		}
	}
	params, err := p.params()
	it.params = params
	return it, err
}

func (p *sfParser) innerList() error {
	p.i++ // (
	for n := 0; !p.done(); n++ {
		p.skipSP()
		if p.done() {
			break
		}
		if p.s[p.i] == ')' {
			p.i++
			return nil
		}
		if n == maxSFParams {
			return errSF
		}
		if _, _, _, err := p.bareItem(); err != nil {
			return err
		}
		if _, err := p.params(); err != nil {
			return err
		}
		if p.done() || (p.s[p.i] != ' ' && p.s[p.i] != ')') {
			return errSF
		}
	}
	return errSF
}

func (p *sfParser) params() ([]sfParam, error) {
	var out []sfParam
	for !p.done() && p.s[p.i] == ';' {
		p.i++
		p.skipSP()
		key, err := p.key()
		if err != nil {
			return nil, err
		}
		prm := sfParam{key: key, kind: sfBoolean, num: 1}
		if !p.done() && p.s[p.i] == '=' {
			p.i++
			if prm.kind, prm.num, prm.str, err = p.bareItem(); err != nil {
				return nil, err
			}
		}
		if len(out) == maxSFParams {
			return nil, errSF
		}
		// A repeated key is kept twice; param reads the last one.
		out = append(out, prm)
	}
	return out, nil
}

func (p *sfParser) key() (string, error) {
	start := p.i
	if p.done() || !(isLCAlpha(p.s[p.i]) || p.s[p.i] == '*') {
		return "", errSF
	}
	for p.i < len(p.s) {
		c := p.s[p.i]
		if !(isLCAlpha(c) || isDigit(c) || c == '_' || c == '-' || c == '.' || c == '*') {
			break
		}
		p.i++
	}
	return p.s[start:p.i], nil
}

func (p *sfParser) bareItem() (sfKind, float64, string, error) {
	if p.done() {
		return 0, 0, "", errSF
	}
	switch c := p.s[p.i]; {
	case c == '-' || isDigit(c):
		k, n, err := p.number()
		return k, n, "", err
	case c == '"':
		s, err := p.str()
		return sfString, 0, s, err
	case c == '*' || isAlpha(c):
		return sfToken, 0, p.token(), nil
	case c == ':':
		return sfBytes, 0, "", p.bytes()
	case c == '?':
		if p.i+1 < len(p.s) && (p.s[p.i+1] == '0' || p.s[p.i+1] == '1') {
			b := float64(p.s[p.i+1] - '0')
			p.i += 2
			return sfBoolean, b, "", nil
		}
	case c == '@':
		p.i++
		k, n, err := p.number()
		if err != nil || k != sfInteger {
			return 0, 0, "", errSF
		}
		return sfDate, n, "", nil
	case c == '%':
		return sfDisplay, 0, "", p.display()
	}
	return 0, 0, "", errSF
}

// number parses an sf-integer (at most 15 digits) or an sf-decimal (at
// most 12 integer and 3 fractional digits).
func (p *sfParser) number() (sfKind, float64, error) {
	start := p.i
	if !p.done() && p.s[p.i] == '-' {
		p.i++
	}
	digits, dot := 0, -1
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case isDigit(c):
			digits++
		case c == '.' && dot < 0 && digits > 0:
			if digits > 12 {
				return 0, 0, errSF
			}
			dot = digits
		default:
			goto end
		}
		p.i++
	}
end:
	switch {
	case digits == 0:
		return 0, 0, errSF
	case dot < 0 && digits > 15:
		return 0, 0, errSF
	case dot >= 0 && (digits == dot || digits-dot > 3):
		return 0, 0, errSF
	}
	v, err := strconv.ParseFloat(p.s[start:p.i], 64)
	if err != nil {
		return 0, 0, errSF
	}
	if dot >= 0 {
		return sfDecimal, v, nil
	}
	return sfInteger, v, nil
}

func (p *sfParser) str() (string, error) {
	p.i++ // "
	var b strings.Builder
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '\\':
			if p.i >= len(p.s) || (p.s[p.i] != '"' && p.s[p.i] != '\\') {
				return "", errSF
			}
			b.WriteByte(p.s[p.i])
			p.i++
		case c == '"':
			return b.String(), nil
		case c < 0x20 || c > 0x7e:
			return "", errSF
		default:
			b.WriteByte(c)
		}
	}
	return "", errSF
}

func (p *sfParser) token() string {
	start := p.i
	p.i++
	for p.i < len(p.s) && (isTChar(p.s[p.i]) || p.s[p.i] == ':' || p.s[p.i] == '/') {
		p.i++
	}
	return p.s[start:p.i]
}

func (p *sfParser) bytes() error {
	p.i++ // :
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		if c == ':' {
			return nil
		}
		if !(isAlpha(c) || isDigit(c) || c == '+' || c == '/' || c == '=') {
			return errSF
		}
	}
	return errSF
}

func (p *sfParser) display() error {
	if p.i+1 >= len(p.s) || p.s[p.i+1] != '"' {
		return errSF
	}
	p.i += 2
	for p.i < len(p.s) {
		c := p.s[p.i]
		p.i++
		switch {
		case c == '"':
			return nil
		case c == '%':
			if p.i+2 > len(p.s) || !isLCHex(p.s[p.i]) || !isLCHex(p.s[p.i+1]) {
				return errSF
			}
			p.i += 2
		case c < 0x20 || c > 0x7e:
			return errSF
		}
	}
	return errSF
}

func isLCAlpha(c byte) bool { return c >= 'a' && c <= 'z' }
func isAlpha(c byte) bool   { return isLCAlpha(c) || (c >= 'A' && c <= 'Z') }
func isLCHex(c byte) bool   { return isDigit(c) || (c >= 'a' && c <= 'f') }

// isTChar reports an RFC 9110 tchar.
func isTChar(c byte) bool {
	return isAlpha(c) || isDigit(c) || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}
