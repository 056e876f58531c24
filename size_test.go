package sluice

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shape the code keeps (README, "Code layout"): no Go file longer than
// maxFileLines, no function longer than maxFuncLines, tests included, and
// the command layer thin.
const (
	maxFileLines = 600
	maxFuncLines = 100
	// maxCommandLines bounds cmd/sluice's non-test code: the commands parse
	// flags and call packages; the work is in internal/ and the libraries.
	maxCommandLines = 1500
)

// TestCodeShape walks every Go file of the module and fails for each file,
// and each function or function literal, over its bound, and when
// cmd/sluice holds more than maxCommandLines lines of non-test code.
func TestCodeShape(t *testing.T) {
	fset := token.NewFileSet()
	commandLines := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		lines := fset.File(f.Pos()).LineCount()
		if lines > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it by topic", path, lines, maxFileLines)
		}
		if filepath.Dir(path) == filepath.Join("cmd", "sluice") && !strings.HasSuffix(path, "_test.go") {
			commandLines += lines
		}
		for _, p := range funcsTooLong(fset, path, f) {
			t.Error(p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if commandLines > maxCommandLines {
		t.Errorf("cmd/sluice holds %d lines of non-test code, more than %d: move the work into a package", commandLines, maxCommandLines)
	}
	if commandLines == 0 {
		t.Error("no cmd/sluice code found: the walk is broken")
	}
}

// funcsTooLong lists every function and function literal of f over
// maxFuncLines, from its signature to its closing brace.
func funcsTooLong(fset *token.FileSet, path string, f *ast.File) []string {
	var out []string
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		name := "a function literal"
		switch x := n.(type) {
		case *ast.FuncDecl:
			body, name = x.Body, x.Name.Name
		case *ast.FuncLit:
			body = x.Body
		}
		if body == nil {
			return true
		}
		from, to := fset.Position(n.Pos()).Line, fset.Position(body.End()).Line
		if n := to - from + 1; n > maxFuncLines {
			out = append(out, fmt.Sprintf("%s:%d: %s is %d lines, more than %d", path, from, name, n, maxFuncLines))
		}
		return true
	})
	return out
}

// TestCodeShapeCatches proves the check fails where it should: a function
// one line over its bound, and not one at it.
func TestCodeShapeCatches(t *testing.T) {
	var b strings.Builder
	b.WriteString("package x\n\nfunc long() {\n")
	for range maxFuncLines - 1 {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n\nfunc fits() {\n")
	for range maxFuncLines - 2 {
		b.WriteString("\t_ = 1\n")
	}
	b.WriteString("}\n")
	path := filepath.Join(t.TempDir(), "long.go")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := funcsTooLong(fset, path, f)
	if len(got) != 1 || !strings.Contains(got[0], "long is 101 lines") {
		t.Errorf("funcsTooLong = %q, want only long, at 101 lines", got)
	}
}
