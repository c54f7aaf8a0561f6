package app_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// The garbage collector's settings are the process's, so the library does not make them: every
// function's main applies them with app.TuneGC, before anything else it does.
func TestEveryFunctionTunesItsGCFirst(t *testing.T) {
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mains, err := filepath.Glob(filepath.Join(root, "functions", "*", "main.go"))
	if err != nil || len(mains) < 2 {
		t.Fatalf("functions/*/main.go: %v, %v", mains, err)
	}
	for _, path := range mains {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		var first ast.Stmt
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.Name == "main" && len(fn.Body.List) > 0 {
				first = fn.Body.List[0]
			}
		}
		rel, _ := filepath.Rel(root, path)
		if !callsTuneGC(first) {
			t.Errorf("%s: main does not begin with app.TuneGC()", rel)
		}
	}
}

// callsTuneGC says whether s is the statement app.TuneGC().
func callsTuneGC(s ast.Stmt) bool {
	e, ok := s.(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := e.X.(*ast.CallExpr)
	if !ok || len(call.Args) != 0 {
		return false
	}
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "TuneGC" {
		return false
	}
	pkg, ok := sel.X.(*ast.Ident)
	return ok && pkg.Name == "app"
}
