package sim

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testkit"
)

// bullet returns the list item of docs/simulator.md that starts with
// prefix, up to the next item.
func bullet(t *testing.T, prefix string) string {
	t.Helper()
	b, err := os.ReadFile("../docs/simulator.md")
	if err != nil {
		t.Fatal(err)
	}
	_, item, ok := strings.Cut(string(b), "\n- "+prefix)
	if !ok {
		t.Fatalf("docs/simulator.md: no item %q", "- "+prefix)
	}
	item, _, _ = strings.Cut(item, "\n- ")
	return item
}

// The bodies docs/simulator.md shows for the test server's answers to a
// call (a 200's, then a 429's, N and S standing for figures) are what it
// writes: the keys of its reply, each one it always writes among them.
func TestDocsServerReplies(t *testing.T) {
	spans := regexp.MustCompile("`(\\{[^`]*\\})`").FindAllStringSubmatch(bullet(t, "200 with "), -1)
	if len(spans) != 2 {
		t.Fatalf("docs/simulator.md: the item of the answers shows %d bodies, want a 200's and a 429's", len(spans))
	}
	figures := strings.NewReplacer(":N", ":1", ":S", ":2")
	for i, want := range []bool{true, false} {
		var r callReply
		if err := testkit.CheckJSONExample(figures.Replace(spans[i][1]), &r); err != nil {
			t.Errorf("docs/simulator.md, the body %s: %v", spans[i][1], err)
		} else if r.Accepted != want {
			t.Errorf("docs/simulator.md, the body %s: accepted %v, want %v", spans[i][1], r.Accepted, want)
		}
	}
}

// The keys docs/simulator.md lists for GET /stats are the ones it writes.
func TestDocsStatsKeys(t *testing.T) {
	var keys []string
	for _, m := range regexp.MustCompile(`"([a-z_]+)"`).FindAllStringSubmatch(bullet(t, "`GET /stats`: "), -1) {
		keys = append(keys, m[1])
	}
	want := testkit.AlwaysWritten(reflect.TypeFor[Stats]())
	slices.Sort(keys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("docs/simulator.md lists the keys %q of GET /stats; the server writes %q", keys, want)
	}
}
