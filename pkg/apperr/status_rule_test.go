package apperr_test

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const (
	module     = "github.com/agent-output-verifier/verifier"
	apperrPath = module + "/pkg/apperr"
)

// An error's HTTP status comes from the table when it is rendered (STYLE.md rule 18): no code of
// the module outside pkg/apperr assigns the Status of an apperr.Error or sets it in a composite
// literal, and nothing anywhere writes to a package-level apperr.Error, which every answer that
// returns it shares, nor to the fields of an error that apperr.As or errors.As found, which was
// built elsewhere and may be shared (a copy from WithKind may be changed). The module's non-test
// code is type-checked from source, its imports read from the go tool's export data.
func TestNoStatusAssignedNoSharedErrorWritten(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module with the go tool's export data")
	}
	pkgs, imp := modulePackages(t)
	checked := 0
	for _, p := range pkgs {
		if !strings.HasPrefix(p.path, module+"/") && p.path != module {
			continue
		}
		fset := token.NewFileSet()
		var files []*ast.File
		for _, name := range p.files {
			f, err := parser.ParseFile(fset, filepath.Join(p.dir, name), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		if len(files) == 0 {
			continue
		}
		for _, v := range statusRule(t, fset, p.path, files, imp(fset)) {
			t.Error(v)
		}
		checked++
	}
	if checked < 20 {
		t.Fatalf("checked %d packages of the module, want all of them", checked)
	}
}

// The rule finds each kind of write it forbids, and leaves alone what it allows: a fresh error's
// fields, Status read, a variable set again, and pkg/apperr's own code.
func TestStatusRuleFindsEachWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks with the go tool's export data")
	}
	_, imp := modulePackages(t)
	// The rule is about a field named Status of apperr.Error; today's Error has none, so the
	// cases check a stand-in package of the same path and type name that has one.
	const fakeApperr = `package apperr
type NextAction struct{ Action string }
type Error struct {
	Code       string
	Status     int
	Retryable  bool
	NextAction []NextAction
}
func New(code string) *Error { return &Error{Code: code, Status: 422} }
func (e *Error) Error() string { return e.Code }; func As(err error) (*Error, bool) { e, ok := err.(*Error); return e, ok }
var shared = New("x")
func touch() { shared.Retryable = true }
`
	const user = `package user
import ("errors"; "` + apperrPath + `")
var Shared = apperr.New("internal_error")
var value apperr.Error
func f() *apperr.Error {
	e := apperr.New("invalid_request")
	e.Status = 400
	e.Status++
	p := &e.Status
	*p = 1
	e.Retryable = true
	e.NextAction = nil
	_ = e.Status
	g := &apperr.Error{Code: "x", Status: 431}
	h := apperr.Error{Status: 429}
	_ = []apperr.Error{{Status: 505}}
	Shared.Retryable = true
	Shared.NextAction[0].Action = "retry_later"
	value.Code = "x"
	Shared = nil
	_, _ = g, h
	return e
}
func g(err error) error {
	if e, ok := apperr.As(err); ok {
		e.Retryable = true
		e = apperr.New("x")
	}
	var ae *apperr.Error
	if errors.As(err, &ae) {
		ae.NextAction = nil
	}
	return nil
}
`
	fset := token.NewFileSet()
	af, err := parser.ParseFile(fset, "apperr.go", fakeApperr, 0)
	if err != nil {
		t.Fatal(err)
	}
	conf := types.Config{}
	fake, err := conf.Check(apperrPath, fset, []*ast.File{af}, nil)
	if err != nil {
		t.Fatal(err)
	}
	uf, err := parser.ParseFile(fset, "user.go", user, 0)
	if err != nil {
		t.Fatal(err)
	}
	base := imp(fset)
	got := statusRule(t, fset, module+"/pkg/user", []*ast.File{uf}, importerFunc(func(path string) (*types.Package, error) {
		if path == apperrPath {
			return fake, nil
		}
		return base.Import(path)
	}))
	var lines []int
	for _, v := range got {
		lines = append(lines, v.line)
	}
	want := []int{7, 8, 9, 14, 15, 16, 17, 18, 19, 20, 26, 31}
	if !slices.Equal(lines, want) {
		t.Errorf("found writes on lines %v, want %v:\n%v", lines, want, got)
	}
	// In pkg/apperr the table's own code may set Status; its package-level errors stay shared.
	got = statusRule(t, fset, apperrPath, []*ast.File{af}, base)
	if len(got) != 1 || got[0].line != 12 {
		t.Errorf("in pkg/apperr found %v, want only the write to shared on line 12", got)
	}
}

type violation struct {
	pos  token.Position
	line int
	what string
}

func (v violation) String() string { return fmt.Sprintf("%s: %s", v.pos, v.what) }

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// statusRule type-checks one package's files and lists its writes that break the rule.
func statusRule(t *testing.T, fset *token.FileSet, path string, files []*ast.File, imp types.Importer) []violation {
	t.Helper()
	info := &types.Info{
		Types:      map[ast.Expr]types.TypeAndValue{},
		Uses:       map[*ast.Ident]types.Object{},
		Defs:       map[*ast.Ident]types.Object{},
		Selections: map[*ast.SelectorExpr]*types.Selection{},
	}
	conf := types.Config{Importer: imp}
	_, err := conf.Check(path, fset, files, info)
	if err != nil {
		t.Fatalf("type-check %s: %v", path, err)
	}
	inApperr := path == apperrPath
	var out []violation
	report := func(n ast.Node, what string) {
		p := fset.Position(n.Pos())
		out = append(out, violation{pos: p, line: p.Line, what: what})
	}
	var borrowed map[*types.Var]bool
	written := func(lhs ast.Expr, how string) {
		if !inApperr && isStatusField(info, lhs) {
			report(lhs, how+" the Status of an apperr.Error outside pkg/apperr")
		}
		switch v := rootVar(info, lhs); {
		case v == nil:
		case packageError(v):
			report(lhs, how+" the package-level error "+v.Name()+", which every answer that returns it shares")
		case borrowed[v] && !isIdent(lhs):
			report(lhs, how+" a field of "+v.Name()+", an error found by apperr.As or errors.As that may be shared; change a copy (WithKind)")
		}
	}
	// borrowed are the variables that apperr.As or errors.As set to an error built elsewhere.
	borrowed = map[*types.Var]bool{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if len(n.Rhs) == 1 && isFunc(info, n.Rhs[0], apperrPath, "As") && len(n.Lhs) > 0 {
					if v := localVar(info, n.Lhs[0]); v != nil {
						borrowed[v] = true
					}
				}
			case *ast.CallExpr:
				if isFunc(info, n, "errors", "As") && len(n.Args) == 2 {
					if u, ok := ast.Unparen(n.Args[1]).(*ast.UnaryExpr); ok && u.Op == token.AND {
						if v := localVar(info, u.X); v != nil && isErrorType(v.Type()) {
							borrowed[v] = true
						}
					}
				}
			}
			return true
		})
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.AssignStmt:
				if n.Tok != token.DEFINE {
					for _, lhs := range n.Lhs {
						written(lhs, "assigns")
					}
				}
			case *ast.IncDecStmt:
				written(n.X, "changes")
			case *ast.UnaryExpr:
				if n.Op == token.AND {
					written(n.X, "takes the address of")
				}
			case *ast.CompositeLit:
				if inApperr || !isErrorType(info.Types[n].Type) {
					return true
				}
				for _, el := range n.Elts {
					if kv, ok := el.(*ast.KeyValueExpr); ok {
						if k, ok := kv.Key.(*ast.Ident); ok && k.Name == "Status" {
							report(kv, "sets Status in an apperr.Error literal outside pkg/apperr")
						}
					}
				}
			}
			return true
		})
	}
	return out
}

// isErrorType reports whether t is apperr.Error or a pointer to it.
func isErrorType(t types.Type) bool {
	if t == nil {
		return false
	}
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	return ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == apperrPath && n.Obj().Name() == "Error"
}

// isStatusField reports whether x selects the Status field of an apperr.Error.
func isStatusField(info *types.Info, x ast.Expr) bool {
	sel, ok := ast.Unparen(x).(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != "Status" {
		return false
	}
	s, ok := info.Selections[sel]
	return ok && s.Kind() == types.FieldVal && isErrorType(s.Recv())
}

// rootVar is the variable that writing to x changes, or nil: x is the variable, or a field,
// element or pointee reached from it.
func rootVar(info *types.Info, x ast.Expr) *types.Var {
	for {
		switch e := ast.Unparen(x).(type) {
		case *ast.SelectorExpr:
			if s, ok := info.Selections[e]; ok {
				if s.Kind() != types.FieldVal {
					return nil
				}
				x = e.X
				continue
			}
			v, _ := info.Uses[e.Sel].(*types.Var) // pkg.Var
			return v
		case *ast.IndexExpr:
			if _, ok := info.Types[e.X].Type.Underlying().(*types.Map); ok {
				return nil
			}
			x = e.X
		case *ast.StarExpr:
			x = e.X
		case *ast.Ident:
			v, _ := info.Uses[e].(*types.Var)
			return v
		default:
			return nil
		}
	}
}

// packageError reports whether v is a package-level apperr.Error or *apperr.Error.
func packageError(v *types.Var) bool {
	return !v.IsField() && v.Pkg() != nil && v.Parent() == v.Pkg().Scope() && isErrorType(v.Type())
}

// localVar is the variable x names, defined or used.
func localVar(info *types.Info, x ast.Expr) *types.Var {
	id, ok := ast.Unparen(x).(*ast.Ident)
	if !ok {
		return nil
	}
	if v, ok := info.Defs[id].(*types.Var); ok {
		return v
	}
	v, _ := info.Uses[id].(*types.Var)
	return v
}

func isIdent(x ast.Expr) bool {
	_, ok := ast.Unparen(x).(*ast.Ident)
	return ok
}

// isFunc reports whether x is a call of the function name of package path.
func isFunc(info *types.Info, x ast.Expr, path, name string) bool {
	call, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok {
		return false
	}
	var id *ast.Ident
	switch f := ast.Unparen(call.Fun).(type) {
	case *ast.SelectorExpr:
		id = f.Sel
	case *ast.Ident:
		id = f
	default:
		return false
	}
	fn, ok := info.Uses[id].(*types.Func)
	return ok && fn.Pkg() != nil && fn.Pkg().Path() == path && fn.Name() == name
}

type listed struct {
	path, dir, export string
	files             []string
}

// modulePackages lists the module's packages and everything they import, with the export data
// the go tool built for each, and an importer that reads it.
func modulePackages(t *testing.T) ([]listed, func(*token.FileSet) types.Importer) {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-export", "-deps",
		"-f", "{{.ImportPath}}\t{{.Dir}}\t{{.Export}}\t{{join .GoFiles \" \"}}\t{{join .CgoFiles \" \"}}", module+"/...")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v: %s", err, stderr.Bytes())
	}
	var pkgs []listed
	exports := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 5 {
			t.Fatalf("go list line %q", sc.Text())
		}
		if f[4] != "" && strings.HasPrefix(f[0], module) {
			t.Fatalf("%s has cgo files, which this test does not type-check", f[0])
		}
		exports[f[0]] = f[2]
		pkgs = append(pkgs, listed{path: f[0], dir: f[1], export: f[2], files: strings.Fields(f[3])})
	}
	imp := func(fset *token.FileSet) types.Importer {
		return importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			file, ok := exports[path]
			if !ok || file == "" {
				return nil, fmt.Errorf("no export data for %s", path)
			}
			return os.Open(file)
		})
	}
	return pkgs, imp
}
