package field_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/field"
)

func TestUnderPrefixesEveryField(t *testing.T) {
	err := errors.Join(
		field.Invalid("burst", "must be >= 0, got %v", "-1s"),
		errors.Join(field.Invalid("aimd.decrease_factor", "must be in (0, 1), got 2")),
		errors.New("plain problem"),
	)
	got := field.Flatten(field.Under("limiter", err))
	want := []string{
		"limiter.burst: must be >= 0, got -1s",
		"limiter.aimd.decrease_factor: must be in (0, 1), got 2",
		"limiter: plain problem",
	}
	if len(got) != len(want) {
		t.Fatalf("got %d errors %v, want %d", len(got), got, len(want))
	}
	for i := range want {
		if got[i].Error() != want[i] {
			t.Errorf("error %d = %q, want %q", i, got[i].Error(), want[i])
		}
	}
}

func TestFlattenWrapped(t *testing.T) {
	err := fmt.Errorf("context: %w", field.Invalid("path", "must start with /"))
	got := field.Flatten(err)
	if len(got) != 1 || got[0].Field != "path" {
		t.Fatalf("Flatten(wrapped) = %v, want the wrapped field error", got)
	}
	if field.Under("x", nil) != nil || field.Flatten(nil) != nil {
		t.Fatal("nil error must stay nil")
	}
}

// TestJoinQuotesKeysThatDoNotPrint: a key with a newline or a control
// character is quoted, so it cannot start a line of an error message of its
// own; a plain key is left as written.
func TestJoinQuotesKeysThatDoNotPrint(t *testing.T) {
	for _, c := range []struct{ prefix, key, want string }{
		{"limiter", "burst", "limiter.burst"},
		{"jobs.types", "résumé", "jobs.types.résumé"},
		{"limiter", "x\n0000000", `limiter."x\n0000000"`},
		{"", "a\tb", `"a\tb"`},
		{"types", "a\u202eb", `types."a\u202eb"`},
		{"limiter", "", "limiter"},
	} {
		if got := field.Join(c.prefix, c.key); got != c.want {
			t.Errorf("Join(%q, %q) = %q, want %q", c.prefix, c.key, got, c.want)
		}
	}
}
