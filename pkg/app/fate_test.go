package app_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// Only a main package decides the process's fate (STYLE.md rule 19): library code returns its
// errors, and ending the process (os.Exit, syscall.Exit, log's Fatal, Fatalf and Fatalln, of
// the package or of a *log.Logger) and reading flags (package flag) are left to the mains:
// functions/*/main.go, cmd/ and infra's tools. Every non-test Go file of the module is read
// (whatever its build tags), and every package is type-checked as well, so that a fatal
// method of a logger or a flag set handed in from elsewhere is found too.
func TestOnlyMainsDecideTheProcessFate(t *testing.T) {
	root, exports, pkgs := listModule(t)
	fset := token.NewFileSet()
	var found []string
	read := 0
	// Every file, as written.
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		read++
		if !mayDecideFate(root, path, f.Name.Name) {
			found = append(found, syntacticFate(fset, f)...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Every package, as built here: what each name refers to.
	checked := 0
	for _, p := range pkgs {
		if len(p.GoFiles) == 0 || mayDecideFate(root, filepath.Join(p.Dir, p.GoFiles[0]), p.Name) {
			continue
		}
		var files []*ast.File
		for _, name := range p.GoFiles {
			f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		uses, err := typedFate(fset, p.ImportPath, files, exports)
		if err != nil {
			t.Fatalf("type-check %s: %v", p.ImportPath, err)
		}
		checked++
		found = append(found, uses...)
	}
	if read < 100 || checked < 20 {
		t.Fatalf("read %d files and checked %d packages: the walk missed the module", read, checked)
	}
	slices.Sort(found)
	for _, f := range slices.Compact(found) {
		t.Errorf("%s", strings.TrimPrefix(f, root+string(filepath.Separator)))
	}
}

// The check finds each way of ending the process or reading flags, through a package name, an
// alias or a dot import, as a call or as a value, of the package or of a value of its type; and
// it passes what only looks alike (a test's Fatal, log's Printf, os's Getenv, a local Exit).
func TestFateCheckFindsEachWay(t *testing.T) {
	root, exports, _ := listModule(t)
	for _, c := range []struct {
		src  string
		want int // findings of both passes together, each at its own place
	}{
		{`import "os"; func f() { os.Exit(1) }`, 1},
		{`import xos "os"; func f() { xos.Exit(2) }`, 1},
		{`import "os"; var exit = os.Exit`, 1},
		{`import . "os"; func f() { Exit(1) }`, 2},
		{`import "syscall"; func f() { syscall.Exit(1) }`, 1},
		{`import "log"; func f() { log.Fatalf("x") }`, 1},
		{`import "log"; func f() { log.Fatal("x"); log.Fatalln("y") }`, 2},
		{`import "log"; func f(l *log.Logger) { l.Fatalln("x") }`, 1},
		{`import ("log"; "os"); func f() { log.New(os.Stderr, "", 0).Fatal("x") }`, 1},
		{`import "flag"; var v = flag.Bool("v", false, "")`, 2},
		{`import "flag"; func f(fs *flag.FlagSet) error { return fs.Parse(nil) }`, 3},
		{`import _ "flag"`, 1},
		{`type flagSet interface{ Parse([]string) error }; func f(s flagSet) error { return s.Parse(nil) }`, 0},
		{`import ("log"; "os"); func f() string { log.Printf("x"); return os.Getenv("X") }`, 0},
		{`func Exit(int) {}; func f() { Exit(1) }`, 0},
		{`type tb interface{ Fatal(...any) }; func f(t tb) { t.Fatal("x") }`, 0},
	} {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "x.go", "package x; "+c.src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		found := syntacticFate(fset, f)
		typed, err := typedFate(fset, "example.com/x", []*ast.File{f}, exports)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		found = append(found, typed...)
		slices.Sort(found)
		if found = slices.Compact(found); len(found) != c.want {
			t.Errorf("%s: found %q, want %d", c.src, found, c.want)
		}
	}
	for _, c := range []struct {
		path, pkg string
		want      bool
	}{
		{"functions/verify/main.go", "main", true},
		{"infra/bench/main.go", "main", true},
		{"cmd/verifier/serve.go", "main", true},
		{"pkg/app/lambda.go", "app", false},
		{"internal/testproc/testproc.go", "testproc", false},
	} {
		if got := mayDecideFate(root, filepath.Join(root, c.path), c.pkg); got != c.want {
			t.Errorf("%s (package %s) may decide the process's fate: %v, want %v", c.path, c.pkg, got, c.want)
		}
	}
}

// mayDecideFate says whether the file at path, of package pkg, may end the process or read
// flags: a main package's, and cmd/verifier's.
func mayDecideFate(root, path, pkg string) bool {
	rel, err := filepath.Rel(root, path)
	if err != nil {
		return false
	}
	return pkg == "main" || strings.HasPrefix(filepath.ToSlash(rel), "cmd/verifier/")
}

// skipDir says whether the walk leaves out the directory at path: what the go tool leaves out
// (testdata, names starting with . or _), other modules, and Node's packages.
func skipDir(path, name string) bool {
	if name == "testdata" || name == "node_modules" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// fatal says what the package-level name or method name of package path does that only a main
// may: "" when nothing.
func fatal(path, name string) string {
	switch {
	case path == "flag":
		return "reads flags (flag." + name + ")"
	case (path == "os" || path == "syscall") && name == "Exit":
		return "ends the process (" + path + ".Exit)"
	case path == "log" && strings.HasPrefix(name, "Fatal"):
		return "ends the process (log." + name + ")"
	}
	return ""
}

// syntacticFate is what f says, as written, of what only a main may do: an import of flag, a
// dot import of os, syscall or log, and a name of those packages that ends the process.
func syntacticFate(fset *token.FileSet, f *ast.File) []string {
	var found []string
	names := map[string]string{}
	for _, im := range f.Imports {
		path, _ := strconv.Unquote(im.Path.Value)
		if path != "os" && path != "syscall" && path != "log" && path != "flag" {
			continue
		}
		name := path
		if im.Name != nil {
			name = im.Name.Name
		}
		switch {
		case path == "flag":
			found = append(found, fmt.Sprintf("%s: imports flag", fset.Position(im.Pos())))
		case name == ".":
			found = append(found, fmt.Sprintf("%s: dot-imports %s", fset.Position(im.Pos()), path))
		case name != "_":
			names[name] = path
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && names[id.Name] != "" {
			if what := fatal(names[id.Name], sel.Sel.Name); what != "" {
				found = append(found, fmt.Sprintf("%s: %s", fset.Position(sel.Sel.Pos()), what))
			}
		}
		return true
	})
	return found
}

// typedFate type-checks the package path of files against the export data of its imports and
// reports every use of a function or method that only a main may call, whatever it was reached
// through.
func typedFate(fset *token.FileSet, path string, files []*ast.File, exports map[string]string) ([]string, error) {
	conf := types.Config{Importer: importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		file, ok := exports[path]
		if !ok {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(file)
	})}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
	if _, err := conf.Check(path, fset, files, info); err != nil {
		return nil, err
	}
	var found []string
	for id, obj := range info.Uses {
		if obj.Pkg() == nil {
			continue
		}
		if _, ok := obj.(*types.PkgName); ok {
			continue
		}
		if what := fatal(obj.Pkg().Path(), obj.Name()); what != "" {
			found = append(found, fmt.Sprintf("%s: %s", fset.Position(id.Pos()), what))
		}
	}
	return found, nil
}

// listedPackage is what go list says of a package of the module.
type listedPackage struct {
	ImportPath, Name, Dir, Export string
	GoFiles                       []string
	Standard                      bool
	Module                        *struct{ Main bool }
}

// listModule lists, with the go tool, the export data of every package the module's packages
// import (and of the standard library's os, syscall, log and flag), by import path, and the
// module's own packages; root is the module's directory. It skips a short test.
func listModule(t *testing.T) (root string, exports map[string]string, pkgs []listedPackage) {
	t.Helper()
	if testing.Short() {
		t.Skip("lists the module's packages with the go tool")
	}
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Name,Dir,Export,GoFiles,Standard,Module", "./...", "os", "syscall", "log", "flag")
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	exports = map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p listedPackage
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if p.Export != "" {
			exports[p.ImportPath] = p.Export
		}
		if !p.Standard && p.Module != nil && p.Module.Main {
			pkgs = append(pkgs, p)
		}
	}
	return root, exports, pkgs
}
