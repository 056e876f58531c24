package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/demo"
	"github.com/sluicehq/sluice/internal/app/docs"
)

// envDocs selects what TestDocs does: unset, it checks; "update" writes the
// deterministic regions again; "all" writes every region, the wall-clock
// ones too (a demo and a drain with real processes, a few minutes). `make
// docs` sets "all".
const envDocs = "SLUICE_DOCS"

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
	mu   sync.Mutex
	runs map[string]*memoRun
}

type memoRun struct {
	once sync.Once
	out  string
	err  error
}

func (m *memo) run(ctx context.Context, args []string, stdin string) (string, error) {
	key := strings.Join(args, "\x00") + "\x00" + stdin
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
	r.once.Do(func() { r.out, r.err = runSluice(ctx, args, stdin) })
	return r.out, r.err
}

// TestDocs: every generated region of README.md and docs/*.md (package
// internal/app/docs) holds what its command prints now. A deterministic
// region is run again and compared; a wall-clock one (a real run) is
// checked to name a command the CLI accepts. A failure names the region,
// the first line that differs, and `make docs`, which writes them again.
func TestDocs(t *testing.T) {
	mode := os.Getenv(envDocs)
	if mode != "" && mode != "update" && mode != "all" {
		t.Fatalf("%s=%q: want update or all", envDocs, mode)
	}
	if raceEnabled && mode == "" {
		// The regions run the simulator, several times slower under the
		// race detector, and race nothing: `make test` checks them in a
		// run of its own without it.
		t.Skip("the docs' regions are checked without -race (make test does)")
	}
	t.Chdir(filepath.Join("..", ".."))
	texts, regions, err := docs.ReadAll(".")
	if err != nil {
		t.Fatal(err)
	}
	var runs memo
	total := 0
	for _, rs := range regions {
		total += len(rs)
	}
	if total == 0 {
		t.Fatal("no generated region in README.md or docs/")
	}
	for file, rs := range regions {
		bodies := make([]string, len(rs))
		var wg sync.WaitGroup
		sem := make(chan struct{}, 2) // the simulator runs use a core each
		var slow []func()
		for i, r := range rs {
			bodies[i] = r.Body
			if !commandsParse(t, r) || (r.WallClock && mode != "all") {
				continue
			}
			do := func() {
				run := runs.run
				if r.WallClock {
					run = runSluice // a new run each time
				}
				out, err := docs.Run(t.Context(), r, run, ".")
				switch {
				case err != nil:
					t.Error(err)
				case mode == "":
					if err := docs.Check(r, out); err != nil {
						t.Error(err)
					}
				default:
					if bodies[i], err = docs.Body(r, out); err != nil {
						t.Error(err)
					}
				}
			}
			if r.WallClock {
				slow = append(slow, do)
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				do()
			}()
		}
		wg.Wait()
		for _, do := range slow {
			do() // one at a time, after the others: their figures are timings
		}
		if mode == "" || t.Failed() {
			continue
		}
		if err := os.WriteFile(file, docs.Splice(texts[file], rs, bodies), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// commandsParse reports whether the CLI accepts a region's command (one
// marked (fails) aside) and, in a wall-clock transcript, each "$ sluice …"
// line: a real run is not repeated by the test, but its commands must
// still exist.
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
