package httpapi

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// phpJSON escapes s as PHP's json_encode does by default: "/" as "\/"
// and every byte outside ASCII as \uXXXX (surrogate pairs above U+FFFF).
func phpJSON(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '/':
			b.WriteString(`\/`)
		case r == '"' || r == '\\':
			b.WriteString(`\` + string(r))
		case r > 0xffff:
			r -= 0x10000
			b.WriteString(strings.ToLower(`\u` + hex16(0xd800+(r>>10)) + `\u` + hex16(0xdc00+(r&0x3ff))))
		case r >= 0x7f || r < 0x20:
			b.WriteString(`\u` + hex16(r))
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func hex16(r rune) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[r>>12&15], digits[r>>8&15], digits[r>>4&15], digits[r&15]})
}

// lowerHex writes the hex digits of s's percent escapes in lower case.
func lowerHex(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			copy(b[i+1:i+3], strings.ToLower(string(b[i+1:i+3])))
		}
	}
	return string(b)
}

// spellings are the forms a target may echo secret in.
func spellings(secret string) map[string]string {
	goJSON, _ := json.Marshal(secret)
	return map[string]string{
		"raw":             secret,
		"query-escaped":   url.QueryEscape(secret),
		"path-escaped":    url.PathEscape(secret),
		"lower-hex query": lowerHex(url.QueryEscape(secret)),
		"Go JSON":         string(goJSON[1 : len(goJSON)-1]),
		"PHP JSON":        phpJSON(secret),
		"JSON \\u002f":    strings.ReplaceAll(secret, "/", `\u002f`),
		"JSON \\u002F":    strings.ReplaceAll(secret, "/", `\u002F`),
		"JSON of query":   strings.ReplaceAll(url.QueryEscape(secret), "/", `\/`),
		"HTML":            strings.NewReplacer("/", "&#x2F;", "&", "&amp;", "+", "&#43;").Replace(secret),
	}
}

func TestRedactSpellings(t *testing.T) {
	secrets := []string{
		"qk_live/Abc+def=ghi&x y",    // every character an encoder changes
		"hooks/T000/B111/XXXXsecret", // a webhook path
		"pw_Sécret☃😀<tag>'q'\"d\"",   // non-ASCII and HTML-special
		`back\slash%25percent`,       // a literal escape of each kind
	}
	var bs [][]byte
	for _, s := range secrets {
		bs = append(bs, []byte(s))
	}
	r := newRedactor(bs)
	for _, secret := range secrets {
		for form, spelled := range spellings(secret) {
			body := `{"error":"not found","echo":"/v1/x?api_key=` + spelled + `&q=1"}`
			got := string(r.redact([]byte(body)))
			if !strings.Contains(got, redacted) || strings.Contains(got, spelled) {
				t.Errorf("%q as %s (%q): got %s", secret, form, spelled, got)
			}
			if !strings.HasPrefix(got, `{"error":"not found","echo":"/v1/x?api_key=`) || !strings.HasSuffix(got, `&q=1"}`) {
				t.Errorf("%q as %s: the text around it changed: %s", secret, form, got)
			}
		}
	}
	for _, keep := range []string{"", "no secret here", "qk_live/Abc+def=ghi&x", `%zz\u12 &#xZZ; &bogus; \`} {
		if got := string(r.redact([]byte(keep))); got != keep {
			t.Errorf("redact(%q) = %q; want it unchanged", keep, got)
		}
	}
}

// TestRedactBranching: a secret of many "%" against a body of many "%25"
// (each fits two ways) ends, and finds it.
func TestRedactBranching(t *testing.T) {
	secret := strings.Repeat("%", 64) + "x"
	r := newRedactor([][]byte{[]byte(secret)})
	body := strings.Repeat("%25", 64) + "y " + strings.Repeat("%25", 64) + "x"
	got := string(r.redact([]byte(body)))
	if got != strings.Repeat("%25", 64)+"y "+redacted {
		t.Errorf("got %q", got)
	}
}

func FuzzRedact(f *testing.F) {
	f.Add("qk_live/Abc+def", `{"a":"qk_live\/Abc+def"}`)
	f.Add("%%%%%%%%x", "%25%25%%25%25%%25x")
	f.Fuzz(func(t *testing.T, secret, body string) {
		if secret == "" {
			return
		}
		r := newRedactor([][]byte{[]byte(secret)})
		got := string(r.redact([]byte(body)))
		if strings.Contains(got, secret) && !strings.Contains(redacted, secret) {
			t.Fatalf("redact(%q) with secret %q = %q: still holds it", body, secret, got)
		}
	})
}
