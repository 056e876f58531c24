package main

import (
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/app/cli"
	"github.com/sluicehq/sluice/internal/app/docs"
	"github.com/sluicehq/sluice/internal/testkit"
)

// releaseFiles are the files `make release` writes into dist/, read from
// the Makefile: a binary per platform of PLATFORMS, named as the release
// recipe's -o names it, and the checksums file it writes there.
func releaseFiles(makefile string) ([]string, error) {
	platforms := regexp.MustCompile(`(?m)^PLATFORMS\s*:?=\s*(.+)$`).FindStringSubmatch(makefile)
	_, recipe, ok := strings.Cut(makefile, "\nrelease:")
	if platforms == nil || !ok {
		return nil, fmt.Errorf("the Makefile has no PLATFORMS or no release target")
	}
	recipe, _, _ = strings.Cut(recipe, "\n\n")
	out := regexp.MustCompile(`-o (dist/\S+)`).FindStringSubmatch(recipe)
	if out == nil {
		return nil, fmt.Errorf("the release recipe builds no binary into dist/")
	}
	var files []string
	for _, p := range strings.Fields(platforms[1]) {
		goos, goarch, _ := strings.Cut(p, "/")
		files = append(files, strings.NewReplacer("$$os", goos, "$$arch", goarch).Replace(out[1]))
	}
	if sums := regexp.MustCompile(`cd dist && sha256sum .*> (\S+)`).FindStringSubmatch(recipe); sums != nil {
		files = append(files, "dist/"+sums[1])
	}
	slices.Sort(files)
	return files, nil
}

// The dist/ listing of docs/deployment.md is what `make release` writes.
func TestDocsReleaseListing(t *testing.T) {
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	want, err := releaseFiles(string(makefile))
	if err != nil {
		t.Fatal(err)
	}
	listing := strings.Fields(testkit.BlockAfter(t, "../../docs/deployment.md", "into `dist/`"))
	slices.Sort(listing)
	if !slices.Equal(listing, want) {
		t.Errorf("docs/deployment.md lists %q in dist/; make release writes %q", listing, want)
	}
}

// The `sluice version` line of docs/deployment.md has the shape of what the
// command prints, for a binary built with the version the doc shows: the
// version, then the Go version and the platform the doc's binary is for.
func TestDocsVersionLine(t *testing.T) {
	block := testkit.BlockAfter(t, "../../docs/deployment.md", "`sluice version` prints it")
	m := regexp.MustCompile(`^\$ dist/sluice-([a-z0-9]+)-([a-z0-9]+) version\n(sluice (\S+) .*)\n$`).FindStringSubmatch(block)
	if m == nil {
		t.Fatalf("docs/deployment.md: the version example is not \"$ dist/sluice-OS-ARCH version\" and one line of output:\n%s", block)
	}
	platform, docLine, docVersion := m[1]+"/"+m[2], m[3], m[4]
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	if files, err := releaseFiles(string(makefile)); err != nil || !slices.Contains(files, "dist/sluice-"+m[1]+"-"+m[2]) {
		t.Errorf("docs/deployment.md runs dist/sluice-%s-%s, which make release does not build (%q, %v)", m[1], m[2], files, err)
	}
	if !regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`).MatchString(docVersion) {
		t.Errorf("docs/deployment.md: the version %q is not a release tag's", docVersion)
	}
	saved := version
	version = docVersion // as -X main.version sets it
	t.Cleanup(func() { version = saved })
	out, err := testkit.RunCLI(t.Context(), newRootCmd, "version")
	if err != nil {
		t.Fatal(err)
	}
	code := strings.NewReplacer(runtime.Version(), "GOVERSION", runtime.GOOS+"/"+runtime.GOARCH, "OS/ARCH").Replace(strings.TrimSuffix(out, "\n"))
	doc := regexp.MustCompile(`\bgo1\.[0-9]+(\.[0-9]+)?\b`).ReplaceAllString(docLine, "GOVERSION")
	doc = strings.Replace(doc, " "+platform, " OS/ARCH", 1)
	if code != doc {
		t.Errorf("docs/deployment.md shows %q; sluice version prints %q (with the Go version and platform masked: docs %q, code %q)", docLine, strings.TrimSuffix(out, "\n"), doc, code)
	}
}

// sluiceLineRe finds a command line that runs sluice, as the docs write
// one: sluice, bin/sluice, a release binary or go run ./cmd/sluice, after
// an optional "$ ".
var sluiceLineRe = regexp.MustCompile(`^(?:\$ )?(?:bin/sluice|dist/sluice-[a-z0-9]+-[a-z0-9]+|go run \./cmd/sluice|sluice)( |$)`)

// shellBlocks returns the content of each fenced block of a markdown text
// marked sh, bash or console.
func shellBlocks(text string) []string {
	var blocks []string
	var cur []string
	in, shell := false, false
	for _, l := range strings.Split(text, "\n") {
		switch {
		case strings.HasPrefix(l, "```") && !in:
			in, cur = true, nil
			shell = slices.Contains([]string{"sh", "bash", "console"}, strings.TrimSpace(l[3:]))
		case strings.HasPrefix(l, "```"):
			in = false
			if shell {
				blocks = append(blocks, strings.Join(cur, "\n"))
			}
		case in:
			cur = append(cur, l)
		}
	}
	return blocks
}

// docsCommandLines returns the words of each sluice command line of the
// shell blocks of a markdown text, outside its generated regions (TestDocs
// checks those): continued lines joined, comments and a trailing & cut. In
// a transcript (a block with "$ " lines) only the "$ " lines are commands.
func docsCommandLines(text string, regions []docs.Region) [][]string {
	for _, r := range regions {
		if !r.Inline { // an inline one holds no block, and its body may be a bare figure
			text = strings.Replace(text, r.Body, "\n", 1)
		}
	}
	var cmds [][]string
	for _, block := range shellBlocks(text) {
		block = strings.ReplaceAll(block, "\\\n", " ")
		transcript := regexp.MustCompile(`(?m)^\$ `).MatchString(block)
		for _, l := range strings.Split(block, "\n") {
			l = strings.TrimSpace(l)
			if transcript && !strings.HasPrefix(l, "$ ") {
				continue
			}
			if i := strings.Index(l, " #"); i >= 0 {
				l = l[:i]
			}
			l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), "&"))
			if loc := sluiceLineRe.FindStringIndex(l); loc != nil {
				l = "sluice " + l[loc[1]:]
			}
			cmds = append(cmds, cli.ExampleCommandLines(l)...)
		}
	}
	return cmds
}

// Every sluice command line in a fenced block of README.md and docs/ names
// commands and flags that exist, with valid values.
func TestDocsCommandLines(t *testing.T) {
	t.Chdir("../..")
	texts, regions, err := docs.ReadAll(".")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for file, text := range texts {
		for _, words := range docsCommandLines(string(text), regions[file]) {
			n++
			if err := exampleLineError(words); err != nil {
				t.Errorf("%s: \"sluice %s\": %v", file, strings.Join(words, " "), err)
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d sluice command lines found in the docs' blocks", n)
	}
	t.Logf("%d sluice command lines checked", n)
}

// The command-line reader finds each form the docs use, and the check
// catches a stale one.
func TestDocsCommandLinesRead(t *testing.T) {
	text := "```sh\n$ dist/sluice-linux-amd64 version\nsluice v0.3.0 go1.26.8 linux/amd64\n```\n" +
		"```\ndist/sluice-linux-amd64   dist/sluice-linux-arm64\n```\n" +
		"```sh\nbin/sluice run -c x.yaml &   # one\ngo run ./cmd/sluice demo\n" +
		"sluice testserver --quota 3000 \\\n    --type-cost export=5\nsource <(sluice completion bash)\n$EDITOR sluice.yaml\n```\n"
	var got []string
	for _, w := range docsCommandLines(text, nil) {
		got = append(got, strings.Join(w, " "))
	}
	want := []string{"version", "run -c x.yaml", "demo", "testserver --quota 3000 --type-cost export=5", "completion bash"}
	if !slices.Equal(got, want) {
		t.Errorf("read %q, want %q", got, want)
	}
	if exampleLineError([]string{"enqueue", "--nats-url", "URL", "[--stream", "S]", "FILE|-"}) == nil {
		t.Error("a usage line with placeholders passed the check")
	}
}
