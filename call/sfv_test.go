package call

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

func TestParseSFList(t *testing.T) {
	good := []struct {
		in    string
		n     int
		first sfKind
	}{
		{``, 0, 0},
		{`1`, 1, sfInteger},
		{`-1.5;a;b=?0`, 1, sfDecimal},
		{`"a\"b";q=1, tok/en:x;w=2`, 2, sfString},
		{`(1 "x" y);p=1, 2`, 2, sfInnerList},
		{`:YWJj:, ?1, @1700000000, %"caf%c3%a9"`, 4, sfBytes},
		{`a;q=1;q=2`, 1, sfToken},
		{`1 ,	2`, 2, sfInteger},
	}
	for _, g := range good {
		items, err := parseSFList([]string{g.in})
		if err != nil {
			t.Errorf("%q: %v", g.in, err)
			continue
		}
		if len(items) != g.n || (g.n > 0 && items[0].kind != g.first) {
			t.Errorf("%q: %d items, first %v; want %d, %v", g.in, len(items), items, g.n, g.first)
		}
	}
	if items, _ := parseSFList([]string{`a;q=1;w=5;q=2`}); len(items) != 1 {
		t.Errorf("a;q=1;w=5;q=2: %+v", items)
	} else if q, _ := items[0].param("q"); q != 2 {
		t.Errorf("a repeated parameter must take the last value, got q=%v: %+v", q, items[0].params)
	}
	if items, _ := parseSFList([]string{`a;q=1;q=x`}); len(items) == 1 {
		if q, ok := items[0].param("q"); ok {
			t.Errorf("a;q=1;q=x: a repeated parameter's last value is a token, got q=%v", q)
		}
	}
	bad := []string{
		`1,`, `,1`, `1 2`, `"open`, `"bad\n"`, `1.`, `1.2345`, `1234567890123.1`,
		`1234567890123456`, `-`, `a;Q=1`, `a;=1`, `(1 2`, `:YW$:`, `?2`, `@1.5`, `%"x%4"`, `%x`,
		"\t1", `1;q=`, `@`, `a;q=@`,
	}
	for _, b := range bad {
		if items, err := parseSFList([]string{b}); err == nil {
			t.Errorf("%q: parsed as %+v, want an error", b, items)
		}
	}
}

// manyParams is an item of name with n parameters p0=1;p1=1;…, the
// field of the report that took seconds to parse (n = 40,000).
func manyParams(name string, n int) string {
	var b strings.Builder
	b.WriteString(name)
	for i := range n {
		fmt.Fprintf(&b, ";p%d=1", i)
	}
	return b.String()
}

// manyMembers is a list of n members, each made by member(i).
func manyMembers(n int, member func(int) string) string {
	ms := make([]string, n)
	for i := range ms {
		ms[i] = member(i)
	}
	return strings.Join(ms, ", ")
}

func TestParseSFListBounded(t *testing.T) {
	item := func(i int) string { return strconv.Itoa(i) }
	inner := func(n int) string { return "(" + manyMembers(n, item) + ")" }
	tests := []struct {
		name string
		in   string
		ok   bool
	}{
		{"most members", manyMembers(maxSFMembers, item), true},
		{"a member too many", manyMembers(maxSFMembers+1, item), false},
		{"most parameters", manyParams(`"a"`, maxSFParams), true},
		{"a parameter too many", manyParams(`"a"`, maxSFParams+1), false},
		{"most inner list items", strings.ReplaceAll(inner(maxSFParams), ", ", " "), true},
		{"an inner list item too many", strings.ReplaceAll(inner(maxSFParams+1), ", ", " "), false},
	}
	for _, tt := range tests {
		items, err := parseSFList([]string{tt.in})
		if (err == nil) != tt.ok {
			t.Errorf("%s: %d items, err %v; want ok %v", tt.name, len(items), err, tt.ok)
		}
	}
	// The parser stops at the bound: of the report's 40,000 parameters
	// it reads no more than the bound and one, not the whole field.
	in := manyParams(`"a"`, 40000)
	p := sfParser{s: in}
	if _, err := p.member(); err == nil {
		t.Fatal("40,000 parameters: parsed, want an error")
	}
	if read := len(manyParams(`"a"`, maxSFParams+1)); p.i > read {
		t.Errorf("40,000 parameters: read %d bytes before failing, want at most %d (the first %d parameters)", p.i, read, maxSFParams+1)
	}
}
