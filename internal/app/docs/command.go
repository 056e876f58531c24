package docs

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// Sluice runs a sluice command line (args without "sluice") with stdin,
// and returns what it printed, standard output and error together, with
// the error message last as sluice prints it when the command fails.
type Sluice func(ctx context.Context, args []string, stdin string) (string, error)

// Pipeline is a region's command, parsed: the first stage is a sluice
// command line or a script (sh FILE [ARG…], run from the module's root),
// the others are filters.
type Pipeline struct {
	Args    []string   // the first stage's words
	Filters [][]string // each filter's words
	Above   bool       // stdin is the fenced block above the marker
}

// Script reports whether the first stage is a script, not sluice.
func (p Pipeline) Script() bool { return p.Args[0] == "sh" }

// splitAbove cuts a trailing "< above" off a command.
func splitAbove(cmd string) (string, bool) {
	c, ok := strings.CutSuffix(strings.TrimSpace(cmd), "< above")
	return strings.TrimSpace(c), ok
}

// ParseCommand parses a region's command.
func ParseCommand(cmd string) (Pipeline, error) {
	c, above := splitAbove(cmd)
	var p Pipeline
	p.Above = above
	for i, stage := range strings.Split(c, " | ") {
		words, err := fields(stage)
		if err != nil {
			return p, err
		}
		if len(words) == 0 {
			return p, fmt.Errorf("docs: an empty stage in %q", cmd)
		}
		if i == 0 {
			if words[0] != "sluice" && !(words[0] == "sh" && len(words) >= 2) {
				return p, fmt.Errorf("docs: %q: the first command must be sluice … or sh SCRIPT [ARG…]", cmd)
			}
			p.Args = words
			continue
		}
		if _, err := filter(words); err != nil {
			return p, err
		}
		p.Filters = append(p.Filters, words)
	}
	return p, nil
}

// Display is the command line as the region shows it after "$ ": a
// script as one runs it from the module's root.
func Display(cmd string) string {
	c, above := splitAbove(cmd)
	if above {
		c += " < trace.jsonl"
	}
	if s, ok := strings.CutPrefix(c, "sh "); ok && !strings.HasPrefix(s, "-") {
		c = "./" + s
	}
	return c
}

// ScriptName is the name of a script region's script without its
// directory and ".sh" (e2e-strict for sh scripts/e2e-strict.sh), "" for a
// sluice command: the name of the file `make docs-e2e` keeps its output in.
func ScriptName(cmd string) string {
	p, err := ParseCommand(cmd)
	if err != nil || !p.Script() {
		return ""
	}
	return strings.TrimSuffix(path.Base(p.Args[1]), ".sh")
}

// fields splits a stage into words: spaces separate them, and single or
// double quotes hold spaces and the | of a regular expression.
func fields(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("docs: unterminated quote in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// filter returns the function a filter stage applies to the text before
// it. The filters are those of a shell, so that a reader can paste the
// command: cat; grep [-E] [-v] RE; head -n N; tail -n N; jq .field[.field…]
// (a field of one JSON object, as jq prints it); sed -E -n with one
// script, either '/RE/,/RE/p' (the lines from one that matches the first
// expression to the next that matches the second, both included) or
// 's/RE/REPL/p' (each line that matches, with its match replaced; \1 in
// REPL is the first group). The expressions are extended (POSIX ERE as
// Go's regexp reads them).
func filter(words []string) (func(string) (string, error), error) {
	name, args := words[0], words[1:]
	switch name {
	case "cat":
		if len(args) == 0 {
			return func(s string) (string, error) { return s, nil }, nil
		}
	case "grep":
		invert := false
		for len(args) > 1 && strings.HasPrefix(args[0], "-") {
			switch args[0] {
			case "-E":
			case "-v":
				invert = true
			default:
				return nil, fmt.Errorf("docs: grep: flag %s is not supported", args[0])
			}
			args = args[1:]
		}
		if len(args) != 1 {
			break
		}
		re, err := regexp.Compile(args[0])
		if err != nil {
			return nil, fmt.Errorf("docs: grep: %w", err)
		}
		return func(s string) (string, error) {
			var b strings.Builder
			for _, l := range lines(s) {
				if re.MatchString(l) != invert {
					b.WriteString(l + "\n")
				}
			}
			return b.String(), nil
		}, nil
	case "head", "tail":
		if len(args) != 2 || args[0] != "-n" {
			break
		}
		n, err := strconv.Atoi(args[1])
		if err != nil || n < 0 {
			break
		}
		return func(s string) (string, error) {
			ls := lines(s)
			n := min(n, len(ls))
			if name == "head" {
				ls = ls[:n]
			} else {
				ls = ls[len(ls)-n:]
			}
			return strings.Join(ls, "\n") + strings.Repeat("\n", min(len(ls), 1)), nil
		}, nil
	case "sed":
		if len(args) != 3 || args[0] != "-E" || args[1] != "-n" {
			break
		}
		return sedFilter(args[2])
	case "jq":
		if len(args) != 1 || !strings.HasPrefix(args[0], ".") {
			break
		}
		path := strings.Split(args[0][1:], ".")
		return func(s string) (string, error) { return jqField(s, path) }, nil
	}
	return nil, fmt.Errorf("docs: unsupported filter %q (cat, grep [-E] [-v] RE, head -n N, tail -n N, jq .field, sed -E -n SCRIPT)", strings.Join(words, " "))
}

// sedRangeRe and sedSubstRe read the two scripts sed supports: a range of
// lines to print, or a substitution whose lines are printed; sedGroupRe
// finds \1 to \9 in a replacement.
var (
	sedRangeRe = regexp.MustCompile(`^/((?:[^/\\]|\\.)*)/,/((?:[^/\\]|\\.)*)/p$`)
	sedSubstRe = regexp.MustCompile(`^s/((?:[^/\\]|\\.)*)/((?:[^/\\]|\\.)*)/p$`)
	sedGroupRe = regexp.MustCompile(`\\([0-9])`)
)

// sedFilter returns the filter of sed -E -n SCRIPT.
func sedFilter(script string) (func(string) (string, error), error) {
	if m := sedRangeRe.FindStringSubmatch(script); m != nil {
		from, err1 := regexp.Compile(m[1])
		to, err2 := regexp.Compile(m[2])
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("docs: sed: %w", err)
		}
		return func(s string) (string, error) {
			var b strings.Builder
			in := false
			for _, l := range lines(s) {
				switch {
				case in:
					b.WriteString(l + "\n")
					in = !to.MatchString(l)
				case from.MatchString(l):
					b.WriteString(l + "\n")
					in = true
				}
			}
			return b.String(), nil
		}, nil
	}
	if m := sedSubstRe.FindStringSubmatch(script); m != nil {
		re, err := regexp.Compile(m[1])
		if err != nil {
			return nil, fmt.Errorf("docs: sed: %w", err)
		}
		repl := sedGroupRe.ReplaceAllString(strings.ReplaceAll(m[2], "$", "$$"), "${$1}")
		return func(s string) (string, error) {
			var b strings.Builder
			for _, l := range lines(s) {
				if at := re.FindStringSubmatchIndex(l); at != nil { // the first match, as sed without g
					b.WriteString(l[:at[0]] + string(re.ExpandString(nil, repl, l, at)) + l[at[1]:] + "\n")
				}
			}
			return b.String(), nil
		}, nil
	}
	return nil, fmt.Errorf("docs: sed: want '/RE/,/RE/p' or 's/RE/REPL/p', got %q", script)
}

func lines(s string) []string {
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// jqField prints the field at path of the JSON object s as jq does: a
// number as it is written, a string with its quotes.
func jqField(s string, path []string) (string, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return "", fmt.Errorf("docs: jq: %w", err)
	}
	for _, k := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("docs: jq: .%s: not an object", k)
		}
		v = m[k]
	}
	b, err := json.Marshal(v)
	return string(b) + "\n", err
}

// Run runs a region's command: the first stage with sluice (a script with
// sh from root), then each filter. A failing command is an error, unless
// the region is marked (fails); then it must fail.
func Run(ctx context.Context, r Region, sluice Sluice, root string) (string, error) {
	p, err := ParseCommand(r.Command)
	if err != nil {
		return "", err
	}
	var out string
	if p.Script() {
		if out, err = RunScript(ctx, p.Args, root); err != nil {
			return "", fmt.Errorf("%s: %w", r.Name(), err)
		}
	} else {
		stdin := ""
		if p.Above {
			stdin = r.Above
		}
		out, err = sluice(ctx, p.Args[1:], stdin)
		switch {
		case err != nil && !r.Fails:
			return "", fmt.Errorf("%s: %w\n%s", r.Name(), err, out)
		case err == nil && r.Fails:
			return "", fmt.Errorf("%s: the command succeeded; the region shows it failing", r.Name())
		}
	}
	return Filter(r, out)
}

// RunScript runs a script stage (sh FILE [ARG…]) from root and returns
// what it printed, standard output and error together as a terminal shows
// them; a failing script is an error that holds its output.
func RunScript(ctx context.Context, args []string, root string) (string, error) {
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = root
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, b.String())
	}
	return b.String(), nil
}

// Filter applies the filters of a region's command to what its first
// stage printed: for Run, and for the kept output of an end-to-end script
// (make docs-e2e).
func Filter(r Region, out string) (string, error) {
	p, err := ParseCommand(r.Command)
	if err != nil {
		return "", err
	}
	for _, words := range p.Filters {
		f, _ := filter(words)
		if out, err = f(out); err != nil {
			return "", fmt.Errorf("%s: %w", r.Name(), err)
		}
	}
	return out, nil
}

// Body is what the region holds for a command's output: the output,
// trimmed, for an inline region; a markdown table as it is; otherwise a
// fenced text block, with the
// command after "$ ", unless a script wrote a whole transcript (its output
// starts with "$ ").
func Body(r Region, out string) (string, error) {
	if r.Inline {
		v := strings.TrimSpace(out)
		if strings.Contains(v, "\n") {
			return "", fmt.Errorf("%s: an inline region needs one line of output, got %q", r.Name(), v)
		}
		return v, nil
	}
	if out != "" && !strings.HasSuffix(out, "\n") {
		out += "\n"
	}
	p, err := ParseCommand(r.Command)
	if err != nil {
		return "", err
	}
	if isTable(out) {
		return "\n" + out, nil // a markdown table, shown as one
	}
	head := "$ " + Display(r.Command) + "\n"
	if p.Script() && strings.HasPrefix(out, "$ ") {
		head = "" // the script wrote a whole transcript
	}
	return "\n```text\n" + head + out + "```\n", nil
}

// isTable reports whether out is a markdown table: every line a row.
func isTable(out string) bool {
	ls := lines(out)
	for _, l := range ls {
		if !strings.HasPrefix(l, "|") {
			return false
		}
	}
	return len(ls) > 1
}

// ErrStale is what Check returns, wrapped, for a region whose body is not
// what its command prints now.
var ErrStale = errors.New("no longer matches what the code prints")

// Check compares a region's body with a command's output, and names the
// region, its first differing line and the command that writes it again.
func Check(r Region, out string) error {
	want, err := Body(r, out)
	if err != nil {
		return err
	}
	if want == r.Body {
		return nil
	}
	return fmt.Errorf("%s: %w; `make docs` writes it again\n%s", r.Name(), ErrStale, FirstDiff(r.Body, want, "doc", "code"))
}

// FirstDiff shows the first line where was (labelled from) and now
// (labelled to) differ: "line N of the region", then both lines; empty
// when they are the same.
func FirstDiff(was, now, from, to string) string {
	a, b := strings.Split(was, "\n"), strings.Split(now, "\n")
	for i := range max(len(a), len(b)) {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("  line %d of the region\n  %-5s %q\n  %-5s %q", i+1, from+":", x, to+":", y)
		}
	}
	return ""
}
