package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/demo"
	"github.com/sluicehq/sluice/internal/app/docs"
)

// envDocs selects what TestDocs does: unset, it checks the deterministic
// regions; "update" writes them again; "all" writes every region but the
// e2e ones, the slow and wall-clock ones too (the zoo, a demo and a drain
// with real processes: many minutes); "slow" checks the slow ones only;
// "e2e" writes the e2e regions from the outputs kept in envDocsE2E; "bench"
// runs the benchmarks of the bench regions and writes them. `make docs`
// sets "all", `make docs-e2e` "e2e", `make docs-bench` "bench".
const envDocs = "SLUICE_DOCS"

// envDocsRegion, when set, is a regular expression: only the regions whose
// name (file:line and command, as Region.Name gives it) matches it are run;
// the others are left as they are. `make docs-bench REGION=flood-profile`
// writes one table instead of every one.
const envDocsRegion = "SLUICE_DOCS_REGION"

// envDocsE2E names the directory where `make docs-e2e` keeps what each
// end-to-end script printed, in NAME.out for scripts/NAME.sh.
const envDocsE2E = "SLUICE_DOCS_E2E"

// runSluice runs a sluice command line in process, with stdin, and returns
// its standard output and error together.
func runSluice(ctx context.Context, args []string, stdin string) (string, error) {
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetArgs(args)
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetIn(strings.NewReader(stdin))
	err := cmd.ExecuteContext(ctx)
	if err != nil && !cli.Silent(err) && err.Error() != "" {
		fmt.Fprintln(&out, "sluice:", err) // as execute prints it
	}
	return out.String(), err
}

// memo runs each distinct command line once: regions that show several
// fields of one simulation share its run.
type memo struct {
	dir  string // where script builds sluice
	mu   sync.Mutex
	runs map[string]*memoRun
}

type memoRun struct {
	once sync.Once
	out  string
	err  error
}

func (m *memo) run(ctx context.Context, args []string, stdin string) (string, error) {
	return m.do(strings.Join(args, "\x00")+"\x00"+stdin, func() (string, error) { return runSluice(ctx, args, stdin) })
}

// script runs a script stage once per command line: regions that show
// parts of one script's output share its run. The scripts that run
// sluice (scripts/targets.sh, scripts/fleet-table.sh) take it from
// $SLUICE, built once here, instead of building it each.
func (m *memo) script(ctx context.Context, args []string) (string, error) {
	bin, err := m.do("build", func() (string, error) {
		if bin := os.Getenv("SLUICE"); bin != "" {
			return bin, nil
		}
		bin, err := filepath.Abs(filepath.Join(m.dir, "sluice"))
		if err != nil {
			return "", err
		}
		out, err := exec.CommandContext(ctx, cmp.Or(os.Getenv("GO"), "go"), "build", "-o", bin, "./cmd/sluice").CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("go build ./cmd/sluice: %w\n%s", err, out)
		}
		return bin, nil
	})
	if err != nil {
		return "", err
	}
	return m.do("sh\x00"+strings.Join(args, "\x00"), func() (string, error) {
		return docs.RunScript(ctx, append([]string{"env", "SLUICE=" + bin}, args...), ".")
	})
}

func (m *memo) do(key string, f func() (string, error)) (string, error) {
	m.mu.Lock()
	if m.runs == nil {
		m.runs = map[string]*memoRun{}
	}
	r, ok := m.runs[key]
	if !ok {
		r = &memoRun{}
		m.runs[key] = r
	}
	m.mu.Unlock()
	r.once.Do(func() { r.out, r.err = f() })
	return r.out, r.err
}

// docsAction is what TestDocs does with a region in a mode.
type docsAction int

const (
	docsParse docsAction = iota // its commands must parse, nothing runs
	docsCheck                   // run it and compare
	docsWrite                   // run it (or read its kept output) and write it
)

// docsPlan decides a region's action in a mode.
func docsPlan(r docs.Region, mode string) docsAction {
	switch {
	case mode == "e2e" && r.E2E, mode == "bench" && r.Bench:
		return docsWrite
	case mode == "e2e" || mode == "bench" || r.E2E || r.Bench:
		return docsParse
	case mode == "slow" && r.Slow:
		return docsCheck
	case mode == "slow":
		return docsParse
	case mode == "all":
		return docsWrite
	case r.Slow || r.WallClock:
		return docsParse
	case mode == "update":
		return docsWrite
	}
	return docsCheck
}

// TestDocs: every generated region of README.md and docs/*.md (package
// internal/app/docs) holds what its command prints now. A deterministic
// region is run again and compared; a slow, wall-clock, e2e or bench one is
// checked to name commands the CLI accepts (see envDocs for the modes that
// run them). A failure names the region, the first line that differs, and
// `make docs`, which writes them again.
func TestDocs(t *testing.T) {
	mode := os.Getenv(envDocs)
	if !slices.Contains([]string{"", "update", "all", "slow", "e2e", "bench"}, mode) {
		t.Fatalf("%s=%q: want update, all, slow, e2e or bench", envDocs, mode)
	}
	if raceEnabled && (mode == "" || mode == "slow") {
		// The regions run the simulator, several times slower under the
		// race detector, and race nothing: `make test` checks them in a
		// run of its own without it.
		t.Skip("the docs' regions are checked without -race (make test does)")
	}
	only, err := regexp.Compile(os.Getenv(envDocsRegion))
	if err != nil {
		t.Fatalf("%s: %v", envDocsRegion, err)
	}
	kept := os.Getenv(envDocsE2E)
	if mode == "e2e" {
		if kept == "" {
			t.Fatalf("%s=e2e needs %s, the directory of the scripts' outputs", envDocs, envDocsE2E)
		}
		abs, err := filepath.Abs(kept) // the test runs from the module's root
		if err != nil {
			t.Fatal(err)
		}
		kept = abs
	}
	t.Chdir(filepath.Join("..", ".."))
	texts, regions, err := docs.ReadAll(".")
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, rs := range regions {
		total += len(rs)
	}
	if total == 0 {
		t.Fatal("no generated region in README.md or docs/")
	}
	runs := memo{dir: t.TempDir()}
	for file, rs := range regions {
		// A region that failed keeps its old text; the others are
		// written, so that one flaky run does not cost a whole make docs.
		bodies, changed := docsFile(t, rs, mode, kept, only, &runs)
		if !changed {
			continue
		}
		if err := os.WriteFile(file, docs.Splice(texts[file], rs, bodies), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// docsFile checks or writes the regions of one file, as docsPlan says;
// it returns their bodies and whether it wrote any. Only the regions whose
// name matches only run. Deterministic regions
// run two at a time, then the slow ones, then the wall-clock ones one at
// a time (their figures are timings).
func docsFile(t *testing.T, rs []docs.Region, mode, kept string, only *regexp.Regexp, runs *memo) ([]string, bool) {
	t.Helper()
	bodies := make([]string, len(rs))
	changed := false
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2) // the simulator runs use a core each
	var later, last []func()
	for i, r := range rs {
		bodies[i] = r.Body
		act := docsPlan(r, mode)
		if !commandsParse(t, r) || act == docsParse || !only.MatchString(r.Name()) {
			continue
		}
		changed = changed || act == docsWrite
		do := func() {
			out, err := docsOutput(t.Context(), r, kept, runs)
			switch {
			case errors.Is(err, os.ErrNotExist) && r.E2E:
				t.Logf("%s: no kept output (%v); left as it is", r.Name(), err)
			case err != nil:
				t.Error(err)
			case act == docsCheck:
				if err := docs.Check(r, out); err != nil {
					t.Error(err)
				}
			default:
				if body, err := docs.Body(r, out); err != nil {
					t.Error(err)
				} else {
					bodies[i] = body
				}
			}
		}
		switch {
		case r.WallClock || r.Bench: // timings: one at a time
			last = append(last, do)
		case r.Slow:
			later = append(later, do)
		default:
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				do()
			}()
		}
	}
	wg.Wait()
	for _, do := range append(later, last...) {
		do()
	}
	return bodies, changed
}

// docsOutput is what a region's command prints: run again (a wall-clock
// one each time, the others once per command line), or for an e2e region
// what its script printed when `make docs-e2e` ran it, through the
// region's filters.
func docsOutput(ctx context.Context, r docs.Region, kept string, runs *memo) (string, error) {
	switch {
	case r.E2E:
		file := filepath.Join(kept, docs.ScriptName(r.Command)+".out")
		b, err := os.ReadFile(file)
		if err != nil {
			return "", err
		}
		out, err := docs.Filter(r, string(b))
		if err == nil && strings.TrimSpace(out) == "" {
			err = fmt.Errorf("%s: %s holds nothing for it (did the run stop early?)", r.Name(), file)
		}
		return out, err
	case r.WallClock:
		return docs.Run(ctx, r, runSluice, ".") // a new run each time
	case r.Bench: // once per command line: a table and its machine line share a run
		p, err := docs.ParseCommand(r.Command)
		if err != nil {
			return "", err
		}
		out, err := runs.do("bench\x00"+strings.Join(p.Args, "\x00"), func() (string, error) { return docs.RunScript(ctx, p.Args, ".") })
		if err != nil {
			return "", fmt.Errorf("%s: %w", r.Name(), err)
		}
		return docs.Filter(r, out)
	}
	p, err := docs.ParseCommand(r.Command)
	if err != nil {
		return "", err
	}
	if p.Script() {
		out, err := runs.script(ctx, p.Args)
		if err != nil {
			return "", fmt.Errorf("%s: %w", r.Name(), err)
		}
		return docs.Filter(r, out)
	}
	return docs.Run(ctx, r, runs.run, ".")
}

// commandsParse reports whether the CLI accepts a region's command (one
// marked (fails) aside), or its script exists, and, in a wall-clock
// transcript, each "$ sluice …" line: a real run is not repeated by the
// test, but its commands must still exist.
func commandsParse(t *testing.T, r docs.Region) bool {
	t.Helper()
	p, err := docs.ParseCommand(r.Command)
	if err != nil {
		t.Errorf("%s: %v", r.Name(), err)
		return false
	}
	if !p.Script() && !r.Fails {
		if err := exampleLineError(p.Args[1:]); err != nil {
			t.Errorf("%s: the CLI refuses the command: %v", r.Name(), err)
			return false
		}
	}
	if p.Script() {
		if _, err := os.Stat(p.Args[1]); err != nil {
			t.Errorf("%s: no such script: %v", r.Name(), err)
			return false
		}
	}
	ok := true
	if r.WallClock {
		for _, words := range transcriptCommands(r.Body) {
			if err := exampleLineError(words); err != nil {
				t.Errorf("%s: the CLI refuses \"sluice %s\" of its transcript: %v", r.Name(), strings.Join(words, " "), err)
				ok = false
			}
		}
	}
	return ok
}

// transcriptCommands returns the words of each "$ sluice …" line of a
// transcript, up to a redirection, a pipe, a comment or the end of the
// command.
func transcriptCommands(body string) [][]string {
	var cmds [][]string
	for _, l := range strings.Split(body, "\n") {
		l, ok := strings.CutPrefix(l, "$ sluice ")
		if !ok {
			continue
		}
		l = strings.ReplaceAll(l, " 2>", " >")
		if i := strings.IndexAny(l, "#|<>&;"); i >= 0 {
			l = l[:i]
		}
		words := strings.Fields(l)
		cmds = append(cmds, words)
	}
	return cmds
}

// traceRe finds a line of an example limiter trace: an event with an op.
var traceRe = regexp.MustCompile(`^\{"at": ?[0-9.]+, ?"op":`)

// TestDocsTracesReplay: every example trace in README.md and docs/ (a
// fenced block of events) is followed by a region that runs it through
// `sluice limiter replay`, so that TestDocs replays it and compares the
// output the doc shows.
func TestDocsTracesReplay(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	texts, regions, err := docs.ReadAll(".")
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for file, text := range texts {
		replayed := map[string]bool{}
		for _, r := range regions[file] {
			if r.ReadsAbove() && strings.HasPrefix(r.Command, "sluice limiter replay -") {
				replayed[r.Above] = true
			}
		}
		for i, block := range fencedBlocks(string(text)) {
			if !isTrace(block) {
				continue
			}
			found++
			if !replayed[block] {
				t.Errorf("%s: example trace %d (%q…) is followed by no <!-- generated by: sluice limiter replay - < above --> region",
					file, i+1, strings.SplitN(block, "\n", 2)[0])
			}
		}
	}
	if found == 0 {
		t.Error("no example trace found in the docs; docs/limiter.md shows the format")
	}
}

// fencedBlocks returns the content of every fenced block of a markdown text.
func fencedBlocks(s string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, l := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(l, "```") && !in:
			in, cur = true, nil
		case strings.HasPrefix(l, "```"):
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, l)
		}
	}
	return blocks
}

// isTrace reports whether a block is a trace: an event line, and no line
// that is not JSON (a transcript's "$ " line).
func isTrace(block string) bool {
	event := false
	for _, l := range strings.Split(strings.TrimSpace(block), "\n") {
		if !strings.HasPrefix(l, "{") {
			return false
		}
		event = event || traceRe.MatchString(l)
	}
	return event
}

// TestDocsDemoChart: docs/demo.svg and the transcript of docs/demo.md come
// from one run of `sluice demo` (both are wall-clock outputs, written by
// `make docs`): the chart's figures are the summary's. The lines that do
// not depend on timing (what runs, the limiter's options, the backlog) are
// what the demo prints now with its defaults.
func TestDocsDemoChart(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	_, regions, err := docs.ReadAll(".")
	if err != nil {
		t.Fatal(err)
	}
	var transcript string
	for _, r := range regions["docs/demo.md"] {
		if strings.HasPrefix(r.Command, "sluice demo ") && strings.Contains(r.Command, "--svg docs/demo.svg") {
			transcript = r.Body
		}
	}
	if transcript == "" {
		t.Fatal("docs/demo.md: no region generated by sluice demo --svg docs/demo.svg")
	}
	svg, err := os.ReadFile("docs/demo.svg")
	if err != nil {
		t.Fatal(err)
	}
	summary := regexp.MustCompile(`Drained (\d+) jobs in ([0-9.]+ s)\.[\s\S]*requests +(\d+) to the API, (\d+) throttled`).FindStringSubmatch(transcript)
	if summary == nil {
		t.Fatalf("docs/demo.md: the demo's transcript has no summary:\n%s", transcript)
	}
	urls := regexp.MustCompile(`(nats|http)://127\.0\.0\.1:[0-9]+`)
	masked := urls.ReplaceAllString(transcript, "$1://127.0.0.1:PORT")
	o := demo.DefaultOptions()
	stable := demo.Header(o, "nats://127.0.0.1:PORT", "http://127.0.0.1:PORT") + demo.Backlog(o)
	if !strings.Contains(masked, "$ sluice demo --svg docs/demo.svg | cat\n"+stable) {
		t.Errorf("docs/demo.md: the demo's transcript does not start with what the demo prints now (ports aside); `make docs` runs it again. Now:\n%s", stable)
	}
	want := fmt.Sprintf("%s of %s jobs done in %s", summary[1], summary[1], summary[2])
	want2 := fmt.Sprintf("· %s requests · %s throttled", summary[3], summary[4])
	if !bytes.Contains(svg, []byte(want)) || !bytes.Contains(svg, []byte(want2)) {
		t.Errorf("docs/demo.svg is not the chart of the run docs/demo.md shows (want %q and %q in it); `make docs` writes both from one run", want, want2)
	}
}

// The docs check fails on a changed figure, naming the region and the
// command that writes it again.
func TestDocsCheckFails(t *testing.T) {
	r, err := docs.Parse("docs/x.md", []byte("<!-- generated by: sluice version | head -n 1 -->\n```text\n$ sluice version | head -n 1\nsluice 0.0.0\n```\n<!-- end -->\n"))
	if err != nil || len(r) != 1 {
		t.Fatalf("parse: %v, %d regions", err, len(r))
	}
	out, err := docs.Run(t.Context(), r[0], runSluice, ".")
	if err != nil {
		t.Fatal(err)
	}
	err = docs.Check(r[0], out)
	if !errors.Is(err, docs.ErrStale) || !strings.Contains(err.Error(), "docs/x.md:1 (generated by: sluice version | head -n 1)") || !strings.Contains(err.Error(), "make docs") {
		t.Errorf("check of a stale region: %v", err)
	}
}

// Which regions each mode runs: make test checks the deterministic ones
// only, make docs writes all but the e2e and bench ones, make docs-slow
// checks the slow ones, make docs-e2e writes the e2e ones, make
// docs-bench the bench ones.
func TestDocsPlan(t *testing.T) {
	det, slow := docs.Region{}, docs.Region{Slow: true}
	wall, e2e, bench := docs.Region{WallClock: true}, docs.Region{E2E: true}, docs.Region{Bench: true}
	for _, c := range []struct {
		mode                        string
		det, slow, wall, e2e, bench docsAction
	}{
		{"", docsCheck, docsParse, docsParse, docsParse, docsParse},
		{"update", docsWrite, docsParse, docsParse, docsParse, docsParse},
		{"all", docsWrite, docsWrite, docsWrite, docsParse, docsParse},
		{"slow", docsParse, docsCheck, docsParse, docsParse, docsParse},
		{"e2e", docsParse, docsParse, docsParse, docsWrite, docsParse},
		{"bench", docsParse, docsParse, docsParse, docsParse, docsWrite},
	} {
		got := []docsAction{docsPlan(det, c.mode), docsPlan(slow, c.mode), docsPlan(wall, c.mode), docsPlan(e2e, c.mode), docsPlan(bench, c.mode)}
		if want := []docsAction{c.det, c.slow, c.wall, c.e2e, c.bench}; !slices.Equal(got, want) {
			t.Errorf("mode %q: %v, want %v", c.mode, got, want)
		}
	}
}
