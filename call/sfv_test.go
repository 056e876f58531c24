package call

import "testing"

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
	if items, _ := parseSFList([]string{`a;q=1;q=2`}); len(items[0].params) != 1 || items[0].params[0].num != 2 {
		t.Errorf("a repeated parameter must keep the last value in place: %+v", items[0].params)
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
