package service_test

import (
	"bytes"
	"encoding/json"
	"errors"
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

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// listedPackage is what the exports test reads of `go list -export -json`.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	Module     *struct{ Path string }
	Standard   bool
}

// applicationPackages are the packages whose service types the exports test holds to STYLE.md
// rule 20: their exported methods must each have a caller in another package.
var applicationPackages = []string{module + "pkg/service"}

// Every exported method of an application service type has a caller outside its package, in
// code that is not a test (STYLE.md rule 20): a method exported only so that another package's
// tests can drive it is unexported, and its tests live beside it. The test type-checks every
// package of the module from its source, against the compiled export data of what it imports,
// and resolves each selector to the method it names, so a method is found by what it is, not by
// its name. Methods that satisfy an interface for encoding/json or fmt are called by those
// packages, and are not counted.
func TestExportedMethodsHaveOutsideCallers(t *testing.T) {
	if testing.Short() {
		t.Skip("type-checks the module")
	}
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	pkgs := listModule(t, root)
	exports := map[string]string{}
	for _, p := range pkgs {
		if p.Export != "" {
			exports[p.ImportPath] = p.Export
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok {
			return nil, errors.New("no export data for " + path)
		}
		return os.Open(f)
	})

	// The exported methods of every named type of the application packages, as "pkg.Type.Method".
	declared := map[string]bool{}
	called := map[string]bool{}
	for _, p := range pkgs {
		if p.Module == nil || p.Module.Path+"/" != module || p.Standard {
			continue
		}
		app := slices.Contains(applicationPackages, p.ImportPath)
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		info := &types.Info{Selections: map[*ast.SelectorExpr]*types.Selection{}, Uses: map[*ast.Ident]types.Object{}}
		conf := types.Config{Importer: imp, Error: func(error) {}}
		pkg, err := conf.Check(p.ImportPath, fset, files, info)
		if err != nil && pkg == nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		if app {
			for _, name := range pkg.Scope().Names() {
				tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
				if !ok || tn.IsAlias() {
					continue
				}
				named, ok := tn.Type().(*types.Named)
				if !ok {
					continue
				}
				for m := range named.Methods() {
					if m.Exported() && !calledByLibrary(m.Name()) {
						declared[methodKey(m)] = true
					}
				}
			}
			continue // calls inside the package do not count
		}
		for _, sel := range info.Selections {
			if m, ok := sel.Obj().(*types.Func); ok && m.Pkg() != nil && slices.Contains(applicationPackages, m.Pkg().Path()) {
				called[methodKey(m)] = true
			}
		}
		// A method value taken through its type (service.Service.Verify) is a use, not a selection.
		for _, obj := range info.Uses {
			if m, ok := obj.(*types.Func); ok && m.Signature().Recv() != nil && m.Pkg() != nil && slices.Contains(applicationPackages, m.Pkg().Path()) {
				called[methodKey(m)] = true
			}
		}
	}
	if len(declared) == 0 {
		t.Fatal("found no exported methods in the application packages: the test reads nothing")
	}
	var uncalled []string
	for m := range declared {
		if !called[m] {
			if _, waiting := awaitingCaller[m]; !waiting {
				uncalled = append(uncalled, m)
			}
		}
	}
	for m := range awaitingCaller {
		if !declared[m] || called[m] {
			t.Errorf("%s is listed as awaiting a caller, but is not an uncalled exported method: strike it off", m)
		}
	}
	slices.Sort(uncalled)
	if len(uncalled) > 0 {
		t.Errorf("exported methods with no caller outside their package (unexport them, and test them where they live):\n\t%s",
			strings.Join(uncalled, "\n\t"))
	}
}

// awaitingCaller are the methods still exported with only another package's tests to call them,
// each with why it is not cut yet. The list only shrinks: an entry that gains a caller, or
// goes, fails the test until it is struck off.
var awaitingCaller = map[string]string{
	// pkg/client's key-rotation test rotates the key of a server app.Build built, whose
	// dependencies it cannot see; a deployment rotates by restarting.
	module + "pkg/service.Service.WithKeys": "pkg/client/server_test.go rotates a running server's key",
}

// calledByLibrary says a method of this name is called through an interface of the standard
// library (encoding/json, fmt, errors) rather than by the module's code.
func calledByLibrary(name string) bool {
	switch name {
	case "MarshalJSON", "UnmarshalJSON", "String", "Error", "Unwrap":
		return true
	}
	return false
}

// methodKey names a method as "pkg/path.Type.Method".
func methodKey(m *types.Func) string {
	recv := m.Signature().Recv().Type()
	if p, ok := recv.(*types.Pointer); ok {
		recv = p.Elem()
	}
	name := recv.String()
	if n, ok := recv.(*types.Named); ok {
		name = n.Obj().Pkg().Path() + "." + n.Obj().Name()
	}
	return name + "." + m.Name()
}

// listModule lists the module's packages and everything they link, with compiled export data.
func listModule(t *testing.T, root string) []listedPackage {
	t.Helper()
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,Module,Standard", "./...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []listedPackage
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p listedPackage
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}
