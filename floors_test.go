package sluice

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// A floor is a layer of the module (README, "Code layout"). A package may
// import packages of its own floor and of the floors below, never above;
// its tests too.
type floor int

const (
	// leaf: the shared vocabulary and the helpers every floor may use.
	leaf floor = iota
	// library: the limiter, the queues, the outputs, the worker, the fleet,
	// the simulator and the pages, each usable without the application.
	library
	// app: the application under internal/app, what the commands wire.
	app
	// command: the binaries, and the checks of what is shipped.
	command
)

func (f floor) String() string {
	return [...]string{"leaf", "library", "app", "command"}[f]
}

const module = "github.com/sluicehq/sluice"

// floors assigns each package of the module to a floor by the longest
// matching path, relative to the module: a path holds its subdirectories,
// and "." is the root package alone. A package that no path holds fails
// TestFloors: a new package is placed on purpose.
var floors = map[string]floor{
	".":                 leaf, // files the binary embeds
	"field":             leaf,
	"call":              leaf,
	"internal/schema":   leaf,
	"internal/tracing":  leaf,
	"internal/memlimit": leaf,
	"internal/testkit":  leaf,

	"limiter":                   library,
	"sources":                   library,
	"sinks":                     library,
	"worker":                    library,
	"cluster":                   library,
	"sim":                       library,
	"web":                       library,
	"faults":                    library,
	"browsertest":               library,
	"internal/testkit/backends": library,

	"internal/app": app,

	"cmd":        command,
	"faults/cmd": command,
	"deploy":     command, // tests of the shipped files, run against the app
}

// floorOf returns the floor of the package at path (relative to the
// module) and whether one is assigned.
func floorOf(path string) (floor, bool) {
	if path == "." {
		f, ok := floors["."]
		return f, ok
	}
	for p := path; p != "." && p != ""; {
		if f, ok := floors[p]; ok {
			return f, true
		}
		i := strings.LastIndex(p, "/")
		if i < 0 {
			break
		}
		p = p[:i]
	}
	return 0, false
}

// listed is what TestFloors reads of `go list -json`.
type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// goList runs `go list -json` with args and decodes every package.
func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Imports,TestImports,XTestImports"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// relative returns path relative to the module, "." for the root, and
// false for a package outside the module.
func relative(path string) (string, bool) {
	if path == module {
		return ".", true
	}
	rel, ok := strings.CutPrefix(path, module+"/")
	return rel, ok
}

// floorViolations returns, for each package of pkgs, a line for each
// import (of the package or of its tests) on a floor above the package's
// own, and for each package of the module with no floor.
func floorViolations(pkgs []listed) []string {
	var bad []string
	for _, p := range pkgs {
		rel, _ := relative(p.ImportPath)
		own, ok := floorOf(rel)
		if !ok {
			bad = append(bad, fmt.Sprintf("%s: no floor; add its path to floors in floors_test.go", rel))
			continue
		}
		for kind, imports := range map[string][]string{"": p.Imports, " test": p.TestImports, " external test": p.XTestImports} {
			for _, imp := range imports {
				irel, ok := relative(imp)
				if !ok {
					continue
				}
				if f, ok := floorOf(irel); ok && f > own {
					bad = append(bad, fmt.Sprintf("%s%s (%s) imports %s (%s), a floor above", rel, kind, own, irel, f))
				}
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// TestFloors checks that no package of the module, nor its tests, imports
// a package of a floor above its own, and that every package has a floor.
func TestFloors(t *testing.T) {
	pkgs := goList(t, "./...")
	if len(pkgs) < 30 {
		t.Fatalf("go list found %d packages, want the whole module", len(pkgs))
	}
	for _, line := range floorViolations(pkgs) {
		t.Error(line)
	}
}

// TestFloorsCatchUpward checks the check: a leaf that imports the
// application and a library whose tests import a command are reported,
// and so is a package with no floor.
func TestFloorsCatchUpward(t *testing.T) {
	pkgs := []listed{
		{ImportPath: module + "/field", Imports: []string{"strings", module + "/internal/app/config"}},
		{ImportPath: module + "/worker", TestImports: []string{module + "/call", module + "/cmd/sluice"}},
		{ImportPath: module + "/internal/app/run", Imports: []string{module + "/worker", module + "/internal/tracing"}},
		{ImportPath: module + "/elsewhere"},
	}
	got := strings.Join(floorViolations(pkgs), "\n")
	for _, want := range []string{
		"field (leaf) imports internal/app/config (app), a floor above",
		"worker test (library) imports cmd/sluice (command), a floor above",
		"elsewhere: no floor",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("violations:\n%s\nwant a line %q", got, want)
		}
	}
	if n := strings.Count(got, "\n") + 1; n != 3 {
		t.Errorf("violations:\n%s\nwant exactly 3", got)
	}
}

// TestTestkitCore checks that internal/testkit, which the tests of the
// lowest packages import, depends on the standard library alone; the
// servers a test starts are in internal/testkit/backends.
func TestTestkitCore(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "./internal/testkit")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) != 1 || deps[0] != module+"/internal/testkit" {
		t.Errorf("internal/testkit depends on %v, want the standard library alone", deps)
	}
}
