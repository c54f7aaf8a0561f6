package docs

import (
	"errors"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Every package of the module says in its doc comment what its one job is (STYLE.md rule 20):
// one file carries a comment that begins "Package <name> " (for a command, "Command <dir> ").
func TestEveryPackageHasADocComment(t *testing.T) {
	seen := 0
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != ".." && (name == "testdata" || name == "node_modules" || name == "vendor" ||
			strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if path != ".." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module
			}
		}
		problem, ok := packageDocProblem(path)
		if ok {
			seen++
		}
		if problem != "" {
			t.Errorf("%s: %s", filepath.ToSlash(path), problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < 50 {
		t.Fatalf("walked only %d packages: the walk does not see the module", seen)
	}
}

// The check finds a package without a doc comment, one whose comment does not name it, and one
// whose comment is split over two files.
func TestPackageDocProblemFindsMissingDocs(t *testing.T) {
	for _, c := range []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"none", map[string]string{"a.go": "package thing\n"}, "no doc comment"},
		{"detached", map[string]string{"a.go": "// Package thing does one job.\n\npackage thing\n"}, "no doc comment"},
		{"unnamed", map[string]string{"a.go": "// It does one job.\npackage thing\n"}, `does not begin "Package thing "`},
		{"command", map[string]string{"a.go": "// Package main runs.\npackage main\n"}, `does not begin "Command command "`},
		{"twice", map[string]string{
			"a.go": "// Package thing does one job.\npackage thing\n",
			"b.go": "// Package thing does another.\npackage thing\n",
		}, "2 files"},
		{"test only, none", map[string]string{"a_test.go": "package thing\n"}, "no doc comment"},
		{"good", map[string]string{"a.go": "// Package thing does one job.\npackage thing\n", "b.go": "package thing\n"}, ""},
	} {
		dir := filepath.Join(t.TempDir(), strings.ReplaceAll(c.name, " ", ""))
		if c.name == "command" {
			dir = filepath.Join(filepath.Dir(dir), "command")
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for f, text := range c.files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, ok := packageDocProblem(dir)
		if !ok || (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: problem %q (package %v), want one containing %q", c.name, got, ok, c.want)
		}
	}
}

// packageDocProblem reads the Go package in dir (ok is false when there is none) and says what
// is wrong with its doc comment, or "" when nothing is. A package of test files only (docs) has
// its comment in one of them.
func packageDocProblem(dir string) (problem string, ok bool) {
	p, err := build.ImportDir(dir, 0)
	var noGo *build.NoGoError
	if errors.As(err, &noGo) {
		return "", false
	}
	if err != nil {
		return err.Error(), true
	}
	files := p.GoFiles
	if len(files) == 0 {
		files = append(p.TestGoFiles, p.XTestGoFiles...)
	}
	want := "Package " + p.Name + " "
	if p.Name == "main" {
		abs, _ := filepath.Abs(dir)
		want = "Command " + filepath.Base(abs) + " "
	}
	var with []string
	for _, name := range files {
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, name), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			return err.Error(), true
		}
		if f.Doc == nil {
			continue
		}
		with = append(with, name)
		if !strings.HasPrefix(f.Doc.Text(), want) {
			return name + `: the doc comment does not begin "` + want + `"`, true
		}
	}
	switch len(with) {
	case 0:
		return "no doc comment names the package's job", true
	case 1:
		return "", true
	}
	return "the doc comment is split over " + strings.Join(with, ", ") + ": " + strconv.Itoa(len(with)) + " files", true
}
