package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/docs"
	"github.com/sluicehq/sluice/sim"
	"github.com/sluicehq/sluice/web"
)

// The simulator page's picture (docs/simulator-page.png) is taken by `make
// docs` in headless Chromium, from the "Drop the quota" browser test. A
// screenshot is not the same bytes twice (the click lands at a virtual
// time the wall clock decides, and fonts differ between machines), so
// `make test` checks its inputs instead: pictureInputs records, beside the
// picture, the page's files, its "Drop the quota", and what the simulator
// prints for that run's scenario; a change to any of them fails
// TestDocsPicture until `make docs` takes the picture again.
const (
	pictureFile   = "docs/simulator-page.png"
	pictureInputs = "docs/simulator-page.inputs"
)

// pictureState is what the picture depends on, one line each.
func pictureState(t *testing.T) string {
	t.Helper()
	cfg := web.DefaultSimConfig()
	scenario, _ := sim.Scenario(sim.ScenarioFirstThrottle)
	if !reflect.DeepEqual(cfg.Start, scenario) {
		t.Fatalf("the simulator page no longer starts with the %s scenario: pictureState must name its run", sim.ScenarioFirstThrottle)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# The inputs of %s; `make docs` writes this file with the picture.\n", pictureFile)
	out, err := runSluice(t.Context(), []string{"simulate", "--scenario", sim.ScenarioFirstThrottle, "--json"}, "")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "sluice simulate --scenario %s --json: %s", sim.ScenarioFirstThrottle, out)
	fmt.Fprintf(&b, "page: Drop the quota takes %v of it for %v\n", web.DropFraction, web.DropFor)
	// The simulator page's files; the live page's are not in the picture.
	for _, f := range []string{"web/static/sim.html", "web/static/sim.js", "web/static/chart.js", "web/static/style.css"} {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s: sha256 %x\n", f, sha256.Sum256(data))
	}
	return b.String()
}

// TestDocsPicture: docs/simulator-page.png was taken from the page and the
// limiter as they are. With SLUICE_DOCS=picture (make docs, once the
// picture is taken) it writes the inputs instead.
func TestDocsPicture(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	now := pictureState(t)
	if os.Getenv(envDocs) == "picture" {
		if err := os.WriteFile(pictureInputs, []byte(now), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if _, err := os.Stat(pictureFile); err != nil {
		t.Fatal(err)
	}
	was, err := os.ReadFile(pictureInputs)
	if err != nil {
		t.Fatalf("%v: `make docs` takes the picture and writes it", err)
	}
	if string(was) != now {
		t.Errorf("%s was taken with other inputs than the code's (%s); `make docs` takes it again (in headless Chromium)\n%s",
			pictureFile, pictureInputs, docs.FirstDiff(string(was), now, "then", "now"))
	}
}
