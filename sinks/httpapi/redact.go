package httpapi

import (
	"bytes"
	"slices"
	"unicode/utf16"
	"unicode/utf8"
)

// A target that echoes its request into an error body may write a secret
// in any of the spellings its framework uses: as is, percent-encoded (a
// query or a path: %2F or %2f, and + for a space), JSON-escaped (\/,
// \u002f or \u002F, \n, a surrogate pair: what Go's and PHP's encoders
// write), or as an HTML character reference (&#47;, &#x2F;, &amp;). A
// redactor finds a secret in any mix of them: each byte of the secret may
// be spelled any of these ways, independently of the others.

// redactor replaces its secrets, in every spelling, by "[redacted]".
type redactor struct {
	secrets [][]byte  // longest first
	start   [256]bool // the bytes a spelling of a secret can start with
}

func newRedactor(secrets [][]byte) *redactor {
	r := &redactor{}
	for _, s := range secrets {
		if len(s) > 0 && !slices.ContainsFunc(r.secrets, func(t []byte) bool { return bytes.Equal(s, t) }) {
			r.secrets = append(r.secrets, s)
		}
	}
	// Longest first, so a whole value is replaced before a part of it.
	slices.SortStableFunc(r.secrets, func(a, b []byte) int { return len(b) - len(a) })
	for _, s := range r.secrets {
		r.start[s[0]] = true
		if s[0] == ' ' {
			r.start['+'] = true
		}
	}
	if len(r.secrets) > 0 {
		r.start['%'], r.start['\\'], r.start['&'] = true, true, true
	}
	return r
}

// redact returns b with every secret replaced; b itself when none is in
// it. It takes time linear in len(b) for each secret and byte of it.
func (r *redactor) redact(b []byte) []byte {
	if len(r.secrets) == 0 {
		return b
	}
	var out []byte
	done := 0 // b[:done] is in out
	for i := 0; i < len(b); {
		if !r.start[b[i]] {
			i++
			continue
		}
		n := 0
		for _, s := range r.secrets {
			if n = match(b, i, s); n > 0 {
				break
			}
		}
		if n == 0 {
			i++
			continue
		}
		out = append(append(out, b[done:i]...), redacted...)
		i += n
		done = i
	}
	if out == nil {
		return b
	}
	return append(out, b[done:]...)
}

// match returns the length of the spelling of s that starts at b[i], or 0.
// Where two spellings fit (a "%" of s, and "%25" in b), both are tried;
// failures are remembered, so the search is bounded by len(s) times the
// longest spelling of a byte.
func match(b []byte, i int, s []byte) int {
	var failed map[[2]int]bool // only once two spellings fitted somewhere
	branched := false
	var try func(k, j int) int
	try = func(k, j int) int {
		if j == len(s) {
			return k - i
		}
		if failed[[2]int{k, j}] {
			return 0
		}
		var alts [2][2]int // (body bytes, secret bytes) of each spelling that fits
		n := 0
		if k < len(b) && b[k] == s[j] {
			alts[n] = [2]int{1, 1}
			n++
		}
		if w, dec := decodeAt(b, k); w > 0 && len(dec) > 0 && bytes.HasPrefix(s[j:], dec) {
			alts[n] = [2]int{w, len(dec)}
			n++
		}
		branched = branched || n > 1
		for _, a := range alts[:n] {
			if got := try(k+a[0], j+a[1]); got > 0 {
				return got
			}
		}
		if branched {
			if failed == nil {
				failed = map[[2]int]bool{}
			}
			failed[[2]int{k, j}] = true
		}
		return 0
	}
	return try(i, 0)
}

// decodeAt decodes the escape at b[k]: a percent-encoded byte, "+" (a
// space in a query), a JSON escape, or an HTML character reference. It
// returns the escape's length in b and the bytes it stands for; 0 when
// there is none.
func decodeAt(b []byte, k int) (int, []byte) {
	if k >= len(b) {
		return 0, nil
	}
	switch b[k] {
	case '+':
		return 1, []byte{' '}
	case '%':
		if k+2 < len(b) {
			if hi, ok := unhex(b[k+1]); ok {
				if lo, ok := unhex(b[k+2]); ok {
					return 3, []byte{hi<<4 | lo}
				}
			}
		}
	case '\\':
		if k+1 >= len(b) {
			return 0, nil
		}
		switch c := b[k+1]; c {
		case '/', '\\', '"', '\'':
			return 2, []byte{c}
		case 'n':
			return 2, []byte{'\n'}
		case 't':
			return 2, []byte{'\t'}
		case 'r':
			return 2, []byte{'\r'}
		case 'b':
			return 2, []byte{'\b'}
		case 'f':
			return 2, []byte{'\f'}
		case 'u':
			r, ok := hex4(b, k+2)
			if !ok {
				return 0, nil
			}
			if utf16.IsSurrogate(r) {
				if k+7 < len(b) && b[k+6] == '\\' && b[k+7] == 'u' {
					if r2, ok := hex4(b, k+8); ok {
						if c := utf16.DecodeRune(r, r2); c != utf8.RuneError {
							return 12, utf8.AppendRune(nil, c)
						}
					}
				}
				return 0, nil
			}
			return 6, utf8.AppendRune(nil, r)
		}
	case '&':
		return htmlRef(b, k)
	}
	return 0, nil
}

// htmlRefs are the named character references a secret's bytes may take.
var htmlRefs = map[string]byte{"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\''}

// htmlRef decodes &name;, &#DDD; or &#xHH; at b[k].
func htmlRef(b []byte, k int) (int, []byte) {
	end := bytes.IndexByte(b[k:min(len(b), k+12)], ';')
	if end < 2 {
		return 0, nil
	}
	ref := b[k+1 : k+end]
	if c, ok := htmlRefs[string(ref)]; ok {
		return end + 1, []byte{c}
	}
	if ref[0] != '#' || len(ref) < 2 {
		return 0, nil
	}
	var r rune
	digits := ref[1:]
	base := rune(10)
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, base = digits[1:], 16
	}
	if len(digits) == 0 {
		return 0, nil
	}
	for _, c := range digits {
		v, ok := unhex(c)
		if !ok || rune(v) >= base {
			return 0, nil
		}
		r = r*base + rune(v)
	}
	if r > utf8.MaxRune || !utf8.ValidRune(r) {
		return 0, nil
	}
	return end + 1, utf8.AppendRune(nil, r)
}

func hex4(b []byte, k int) (rune, bool) {
	if k+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[k : k+4] {
		v, ok := unhex(c)
		if !ok {
			return 0, false
		}
		r = r<<4 | rune(v)
	}
	return r, true
}

func unhex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}
