package docs

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

// The layout page (operating.md, "## Layout") is a set of tables, one per layer under a "###"
// heading, each row `| package | its one job | may import |`, and a last table of third-party
// modules, `| module | paths |`. The third column holds backticked names: a project package by its
// path in the module (`pkg/x/...` is pkg/x and every package below it), or a module by its name in
// the modules table; a cell without names allows nothing. These tests hold the page to the tree.
const (
	modulePath = "github.com/agent-output-verifier/verifier"
	layoutDoc  = "operating.md"
	layoutHead = "## Layout"

	vocabularyLayer = "Vocabulary"
	groundLayer     = "Ground"
	transportLayer  = "Transports"
	adapterLayer    = "Adapters"
	modulesTable    = "Modules"
)

// The layers whose rules the tests below apply, and what each may never link. Each list of
// packages is the page's own table: a package joins a layer (a root vocabulary package, an A2A
// transport) by getting its row under that heading.
var (
	// The vocabulary links no engine, store, transport or AWS module.
	vocabularyMayNotLink = []string{"pkg/verify/...", "pkg/service/engine", "pkg/store/..."}
	vocabularyNoModules  = []string{"AWS SDK", "Lambda runtime"}
	// The ground links nothing but the vocabulary and the ground, and none of these modules.
	groundMayLinkLayers = []string{vocabularyLayer, groundLayer}
	groundNoModules     = []string{"AWS SDK", "Lambda runtime", "MCP SDK", "bbolt", "Prometheus"}
)

// layoutRow is one package's row.
type layoutRow struct {
	pkg, job, layer string
	allowed         []string // the backticked names of the third column
	line            int
}

// layout is the page's tables.
type layout struct {
	rows    map[string]layoutRow
	order   []string            // packages in the page's order
	modules map[string][]string // module name -> path prefixes
}

var backtickRE = regexp.MustCompile("`([^`]+)`")

// readLayout parses the layout page's tables; malformed rows are test errors.
func readLayout(t *testing.T) layout {
	t.Helper()
	b, err := os.ReadFile(layoutDoc)
	if err != nil {
		t.Fatal(err)
	}
	l := layout{rows: map[string]layoutRow{}, modules: map[string][]string{}}
	in, layer, header := false, "", ""
	for i, line := range strings.Split(string(b), "\n") {
		n := i + 1
		switch {
		case strings.HasPrefix(line, "## "):
			in = line == layoutHead
			layer, header = "", ""
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "### "):
			layer, header = strings.TrimSpace(strings.TrimPrefix(line, "### ")), ""
			continue
		case !strings.HasPrefix(line, "|"):
			header = ""
			continue
		}
		cells := tableCells(line)
		if header == "" {
			header = strings.Join(cells, "|")
			if header != "package|its one job|may import" && header != "module|paths" {
				t.Errorf("%s:%d: a layout table's header must be `| package | its one job | may import |` (or `| module | paths |` under ### %s), not %q", layoutDoc, n, modulesTable, line)
			}
			continue
		}
		if strings.Trim(strings.Join(cells, ""), "-: ") == "" {
			continue // the separator row
		}
		if header == "module|paths" {
			if len(cells) != 2 || layer != modulesTable {
				t.Errorf("%s:%d: a module row is `| name | `path` ... |` under ### %s: %q", layoutDoc, n, modulesTable, line)
				continue
			}
			for _, m := range backtickRE.FindAllStringSubmatch(cells[1], -1) {
				l.modules[cells[0]] = append(l.modules[cells[0]], m[1])
			}
			continue
		}
		if len(cells) != 3 || cells[0] == "" || cells[1] == "" || layer == "" {
			t.Errorf("%s:%d: a layout row is `| package | its one job | may import |` under a ### layer heading: %q", layoutDoc, n, line)
			continue
		}
		if prev, dup := l.rows[cells[0]]; dup {
			t.Errorf("%s:%d: package %s has a second row (the first is line %d)", layoutDoc, n, cells[0], prev.line)
			continue
		}
		row := layoutRow{pkg: cells[0], job: cells[1], layer: layer, line: n}
		for _, m := range backtickRE.FindAllStringSubmatch(cells[2], -1) {
			row.allowed = append(row.allowed, m[1])
		}
		l.rows[row.pkg] = row
		l.order = append(l.order, row.pkg)
	}
	if len(l.rows) == 0 || len(l.modules) == 0 {
		t.Fatalf("%s has no layout tables under %q", layoutDoc, layoutHead)
	}
	return l
}

func tableCells(line string) []string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(line), "|"), "|")
	for i := range cells {
		cells[i] = strings.TrimSpace(cells[i])
	}
	return cells
}

// layer lists the packages of a layer's table; it fails when the layer has fewer than min rows, so
// that a renamed or emptied heading does not switch its rule off.
func (l layout) layer(t *testing.T, name string, min int) []string {
	t.Helper()
	var pkgs []string
	for _, p := range l.order {
		if l.rows[p].layer == name {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) < min {
		t.Fatalf("%s's layout has %d rows under ### %s, want at least %d: the rule of that layer checks its rows", layoutDoc, len(pkgs), name, min)
	}
	return pkgs
}

// module is the name of the modules-table entry path belongs to, or "".
func (l layout) module(path string) string {
	for name, prefixes := range l.modules {
		for _, p := range prefixes {
			if path == p || strings.HasPrefix(path, p+"/") {
				return name
			}
		}
	}
	return ""
}

// matches reports whether pattern (a path, or path/... for it and everything below) names pkg.
func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pattern == pkg
}

// goPackage is what the go tool says of one package.
type goPackage struct {
	imports []string // direct, non-test imports
	project bool     // a package of this module (go list ./...)
}

// goPackages lists every package the module's packages link, keyed by import path with the
// module's own packages relative to it ("pkg/verify"), with their direct imports.
func goPackages(t *testing.T) map[string]goPackage {
	t.Helper()
	if testing.Short() {
		t.Skip("lists the packages with the go tool")
	}
	listed.once.Do(func() { listed.pkgs, listed.err = listPackages() })
	if listed.err != nil {
		t.Fatal(listed.err)
	}
	return listed.pkgs
}

// listed is goPackages' one listing, shared by the tests of a run.
var listed struct {
	once sync.Once
	pkgs map[string]goPackage
	err  error
}

// listPackages runs the go tool for goPackages.
func listPackages() (map[string]goPackage, error) {
	var err error
	list := func(args ...string) []string {
		if err != nil {
			return nil
		}
		cmd := exec.Command("go", append([]string{"list"}, args...)...)
		cmd.Dir = ".."
		out, e := cmd.Output()
		if e != nil {
			var msg []byte
			if exit, ok := e.(*exec.ExitError); ok {
				msg = exit.Stderr
			}
			err = fmt.Errorf("go list %v: %w\n%s", args, e, msg)
			return nil
		}
		return strings.Split(strings.TrimSpace(string(out)), "\n")
	}
	pkgs := map[string]goPackage{}
	for _, line := range list("-deps", "-f", "{{.ImportPath}}{{range .Imports}} {{.}}{{end}}", "./...") {
		f := strings.Fields(line)
		for i := range f {
			f[i] = relative(f[i])
		}
		pkgs[f[0]] = goPackage{imports: f[1:]}
	}
	for _, p := range list("./...") {
		p = relative(p)
		gp := pkgs[p]
		gp.project = true
		pkgs[p] = gp
	}
	return pkgs, err
}

func relative(path string) string {
	if path == modulePath {
		return "."
	}
	return strings.TrimPrefix(path, modulePath+"/")
}

// Every package of `go list ./...` has one row, every row is a package, and every package imports
// (directly) only the project packages and third-party modules its row allows.
func TestLayoutTableMatchesTheTree(t *testing.T) {
	pkgs := goPackages(t)
	l := readLayout(t)
	var project []string
	for p, gp := range pkgs {
		if gp.project {
			project = append(project, p)
		}
	}
	sort.Strings(project)
	if len(project) < 20 {
		t.Fatalf("go list ./... lists %d packages", len(project))
	}
	for _, p := range project {
		if _, ok := l.rows[p]; !ok {
			t.Errorf("package %s has no row in docs/%s's layout table: add `| %s | its job | may import |` under its layer's heading", p, layoutDoc, p)
		}
	}
	for _, p := range l.order {
		row := l.rows[p]
		if gp, ok := pkgs[p]; !ok || !gp.project {
			t.Errorf("docs/%s:%d: the layout table has a row for %s, which `go list ./...` does not list: remove the row (or rename it)", layoutDoc, row.line, p)
			continue
		}
		for _, name := range row.allowed {
			if _, isModule := l.modules[name]; isModule {
				continue
			}
			if !slices.ContainsFunc(project, func(q string) bool { return matches(name, q) }) {
				t.Errorf("docs/%s:%d: %s's row allows `%s`, which is neither a package of the module nor a name in the modules table", layoutDoc, row.line, p, name)
			}
		}
		for _, imp := range pkgs[p].imports {
			if pkgs[imp].project {
				if !slices.ContainsFunc(row.allowed, func(a string) bool { return matches(a, imp) }) {
					t.Errorf("docs/%s:%d: %s imports %s, which its row does not allow: add `%s` to its may-import column or drop the import", layoutDoc, row.line, p, imp, imp)
				}
				continue
			}
			if !strings.Contains(strings.Split(imp, "/")[0], ".") {
				continue // the standard library
			}
			name := l.module(imp)
			if name == "" {
				t.Errorf("%s imports %s, whose module is not in docs/%s's modules table: add a row (a name, then the module path in backticks) under ### %s, and that name to %s's row", p, imp, layoutDoc, modulesTable, p)
				continue
			}
			if !slices.Contains(row.allowed, name) {
				t.Errorf("docs/%s:%d: %s imports %s (%s), which its row does not allow: add `%s` to its may-import column or drop the import", layoutDoc, row.line, p, imp, name, name)
			}
		}
	}
}

// linkChain is the shortest chain of imports from pkg to a package for which hit is true, written
// "a -> b -> c", or "" when pkg links none.
func linkChain(pkgs map[string]goPackage, pkg string, hit func(string) bool) string {
	from := map[string]string{pkg: ""}
	queue := []string{pkg}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p != pkg && hit(p) {
			chain := []string{p}
			for q := from[p]; q != ""; q = from[q] {
				chain = append([]string{q}, chain...)
			}
			return strings.Join(chain, " -> ")
		}
		for _, q := range pkgs[p].imports {
			if _, seen := from[q]; !seen {
				from[q] = p
				queue = append(queue, q)
			}
		}
	}
	return ""
}

// inModules reports whether path belongs to one of the named modules of the modules table; a name
// the table lacks is a test error, so that a renamed module does not switch a rule off.
func (l layout) inModules(t *testing.T, names []string) func(string) bool {
	t.Helper()
	for _, n := range names {
		if _, ok := l.modules[n]; !ok {
			t.Fatalf("docs/%s's modules table has no %q, which a layer rule names", layoutDoc, n)
		}
	}
	return func(path string) bool { return slices.Contains(names, l.module(path)) }
}

// The root vocabulary, shared by every layer, links no engine, no store, no transport and no AWS
// module. Its packages are the rows under "### Vocabulary" (the contract and the error table
// today; the root vocabulary package when it exists).
func TestVocabularyLinksNoEngineStoreTransportOrAWS(t *testing.T) {
	pkgs := goPackages(t)
	l := readLayout(t)
	transports := l.layer(t, transportLayer, 2)
	aws := l.inModules(t, vocabularyNoModules)
	forbidden := func(p string) string {
		for _, pattern := range vocabularyMayNotLink {
			if matches(pattern, p) {
				return "the engine or a store (" + pattern + ")"
			}
		}
		if slices.Contains(transports, p) {
			return "a transport"
		}
		if aws(p) {
			return "an AWS module (" + l.module(p) + ")"
		}
		return ""
	}
	for _, v := range l.layer(t, vocabularyLayer, 1) {
		if chain := linkChain(pkgs, v, func(p string) bool { return forbidden(p) != "" }); chain != "" {
			last := chain[strings.LastIndex(chain, " ")+1:]
			t.Errorf("%s (### %s in docs/%s) links %s: %s", v, vocabularyLayer, layoutDoc, forbidden(last), chain)
		}
	}
}

// No transport links another: each translates its own protocol to the application. The
// transports are the rows under "### Transports" (REST and MCP today; an A2A binding joins them
// with its row).
func TestTransportsNeverLinkEachOther(t *testing.T) {
	noneLinksAnother(t, transportLayer, 2, false)
}

// No adapter imports another (STYLE: adapters never import each other): a store, a key source,
// the payments and the metrics exporter each stand alone behind the application's interfaces.
// Only direct imports count: the application itself imports pkg/x402's payment types, so every
// adapter that imports the application links pkg/x402.
func TestAdaptersNeverImportEachOther(t *testing.T) {
	noneLinksAnother(t, adapterLayer, 2, true)
}

// noneLinksAnother fails for every package of a layer's table that links another of that table
// (imports it, when direct).
func noneLinksAnother(t *testing.T, layer string, min int, direct bool) {
	t.Helper()
	pkgs := goPackages(t)
	members := readLayout(t).layer(t, layer, min)
	for _, a := range members {
		others := func(p string) bool { return p != a && slices.Contains(members, p) }
		if direct {
			for _, imp := range pkgs[a].imports {
				if others(imp) {
					t.Errorf("%s (### %s in docs/%s) imports %s, another package of its layer", a, layer, layoutDoc, imp)
				}
			}
			continue
		}
		if chain := linkChain(pkgs, a, others); chain != "" {
			t.Errorf("%s (### %s in docs/%s) links another package of its layer: %s", a, layer, layoutDoc, chain)
		}
	}
}

// The engine and the receipts at the ground link no adapter, application, transport or wiring:
// nothing of the module but the rows under "### Vocabulary" and "### Ground", and none of the
// modules that only adapters use.
func TestGroundLinksNoAdapter(t *testing.T) {
	pkgs := goPackages(t)
	l := readLayout(t)
	outside := l.inModules(t, groundNoModules)
	forbidden := func(p string) string {
		if row, ok := l.rows[p]; ok && !slices.Contains(groundMayLinkLayers, row.layer) {
			return fmt.Sprintf("%s (### %s)", p, row.layer)
		}
		if outside(p) {
			return fmt.Sprintf("%s (%s)", p, l.module(p))
		}
		return ""
	}
	for _, g := range l.layer(t, groundLayer, 3) {
		if chain := linkChain(pkgs, g, func(p string) bool { return forbidden(p) != "" }); chain != "" {
			last := chain[strings.LastIndex(chain, " ")+1:]
			t.Errorf("%s (### %s) links %s: %s", g, groundLayer, forbidden(last), chain)
		}
	}
}
