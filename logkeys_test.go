package sluice

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// logCalls maps the slog methods whose arguments after the message are keys
// and values to the index of their first key; keyOnly are the attribute
// constructors whose first argument is the key.
var (
	logCalls = map[string]int{
		"Debug": 1, "Info": 1, "Warn": 1, "Error": 1,
		"DebugContext": 2, "InfoContext": 2, "WarnContext": 2, "ErrorContext": 2,
		"Log": 3, "LogAttrs": 3, "With": 0,
	}
	keyOnly = map[string]bool{"Any": true, "String": true, "Group": true, "Attr": true}
)

// TestOneErrorKey: every log line names its error "err". A call of a
// logging method (or an slog attribute constructor) with the key "error"
// fails the test, naming the file and line.
func TestOneErrorKey(t *testing.T) {
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules") && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		checked++
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			args := call.Args
			if first, ok := logCalls[sel.Sel.Name]; ok {
				args = args[min(first, len(args)):]
			} else if keyOnly[sel.Sel.Name] && len(args) > 0 {
				args = args[:1]
			} else {
				return true
			}
			for _, arg := range args {
				if lit, ok := arg.(*ast.BasicLit); ok && lit.Kind == token.STRING {
					if s, _ := strconv.Unquote(lit.Value); s == "error" {
						t.Errorf("%s: log key \"error\": use \"err\"", fset.Position(lit.Pos()))
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("checked only %d Go files", checked)
	}
}
