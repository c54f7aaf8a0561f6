package docs

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// The examples' conventions, which this runner holds them to:
//   - a ```sh block runs, in order with the document's other blocks, in one bash session that
//     starts in a fresh copy of the clone's root holding bin/verifier (what `make dev` builds)
//     and testdata/seed, so a block may cd and set variables for the next ones;
//   - the local server the examples call at documentedBase runs (started here, on a free port);
//   - every command must succeed, unless the block's info string says `exits=N[,M]`: then the
//     failures in it must all have those statuses, and one must happen;
//   - a ```text block right after a ```sh block is what that block prints (stdout and stderr),
//     compared exactly;
//   - ```sh skip="why" is not run, and the test log says why: only for what cannot run here
//     (a deployment, a payment, the set-up itself), at most maxSkipped blocks in all.
const (
	documentedBase = "http://127.0.0.1:8080"
	maxSkipped     = 8
	// exampleTimeout bounds one document's examples; they take a few seconds.
	exampleTimeout = 2 * time.Minute
	// generatedPage is written by `make bench` (infra/bench/report.go), not by hand.
	generatedPage = "PERFORMANCE.md"
)

// exampleBlock is a fenced block of a document.
type exampleBlock struct {
	info, text string
	line       int    // where the block starts, for messages
	output     string // the text block that follows a sh block, if any
	hasOutput  bool
}

var (
	fenceRE = regexp.MustCompile("(?ms)^```([^\n]*)\n(.*?)^```[ \t]*$")
	exitsRE = regexp.MustCompile(`\bexits=([0-9,]+)`)
	skipRE  = regexp.MustCompile(`\bskip="([^"]+)"`)
)

// shellBlocks returns the sh blocks of doc, each with the text block after it.
func shellBlocks(doc string) []exampleBlock {
	var blocks []exampleBlock
	matches := fenceRE.FindAllStringSubmatchIndex(doc, -1)
	for i, m := range matches {
		info := doc[m[2]:m[3]]
		if info != "sh" && !strings.HasPrefix(info, "sh ") {
			continue
		}
		b := exampleBlock{info: info, text: doc[m[4]:m[5]], line: strings.Count(doc[:m[0]], "\n") + 1}
		if i+1 < len(matches) {
			next := matches[i+1]
			if doc[next[2]:next[3]] == "text" && strings.TrimSpace(doc[m[1]:next[0]]) == "" {
				b.output, b.hasOutput = doc[next[4]:next[5]], true
			}
		}
		blocks = append(blocks, b)
	}
	return blocks
}

// exampleDocuments are README.md and every page of docs/, in that order.
func exampleDocuments(t *testing.T) []string {
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(pages)
	docs := []string{"../README.md"}
	for _, p := range pages {
		if p == generatedPage {
			t.Logf("%s: not run: `make bench` writes it, and its commands are the benchmark itself (minutes)", p)
			continue
		}
		docs = append(docs, p)
	}
	return docs
}

// TestExamples runs every shell example of README.md and docs/ as a new user would, and checks
// that a clone followed literally is left as it was: no key, receipt or request in it.
func TestExamples(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the verifier and starts the server")
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatal("the examples use curl, which the README lists")
	}
	tmp := t.TempDir()
	bin := filepath.Join(tmp, "verifier")
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/verifier").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	base := startServer(t, bin, filepath.Join(tmp, "server"))

	skipped, ran := 0, 0
	for _, doc := range exampleDocuments(t) {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		blocks := shellBlocks(string(text))
		for _, b := range blocks {
			if m := skipRE.FindStringSubmatch(b.info); m != nil {
				skipped++
				t.Logf("%s:%d: not run: %s", doc, b.line, m[1])
			} else {
				ran++
			}
		}
		if len(blocks) > 0 {
			t.Run(filepath.Base(doc), func(t *testing.T) { runDocument(t, doc, blocks, bin, base) })
		}
	}
	if skipped > maxSkipped {
		t.Errorf("%d examples are not run; keep that set at most %d", skipped, maxSkipped)
	}
	if ran < 20 {
		t.Errorf("only %d examples ran; the documents show more than that", ran)
	}
	t.Logf("%d examples ran, %d not run", ran, skipped)
}

// runDocument runs one document's blocks in one bash session in a fresh clone and checks them.
func runDocument(t *testing.T, doc string, blocks []exampleBlock, bin, base string) {
	clone := t.TempDir()
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(clone, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(clone, "bin", "verifier")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(clone, "testdata", "seed"), os.DirFS("../testdata/seed")); err != nil {
		t.Fatal(err)
	}
	before := treeOf(t, clone)
	statusFile := filepath.Join(home, ".statuses")
	var script strings.Builder
	// Every failing command is recorded with its block and status; the session goes on.
	fmt.Fprintf(&script, "__status=%q\ntrap 'printf \"%%s %%s\\n\" \"$__block\" $? >>\"$__status\"' ERR\n", statusFile)
	var run []int
	for i, b := range blocks {
		if skipRE.MatchString(b.info) {
			continue
		}
		run = append(run, i)
		fmt.Fprintf(&script, "__block=%d\nprintf '\\036%d\\036'\n%s\n", i, i, strings.ReplaceAll(b.text, documentedBase, base))
	}
	fmt.Fprintf(&script, "printf '\\036end\\036'\n")

	ctx, cancel := context.WithTimeout(context.Background(), exampleTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "--noprofile", "--norc")
	cmd.Dir = clone
	cmd.Env = exampleEnv(home)
	cmd.Stdin = strings.NewReader(script.String())
	testproc.SetProcessGroup(cmd)
	cmd.Cancel = func() error { testproc.KillProcessGroup(cmd.Process.Pid, true); return nil }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("bash: %v\n%s", err, out.String())
	}

	// Split the output at the markers.
	outputs := map[int]string{}
	parts := strings.Split(out.String(), "\036")
	for j := 1; j+1 < len(parts); j += 2 {
		if n, err := strconv.Atoi(parts[j]); err == nil {
			outputs[n] = parts[j+1]
		}
	}
	failures := map[int][]int{}
	if b, err := os.ReadFile(statusFile); err == nil {
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var blk, st int
			if _, err := fmt.Sscan(line, &blk, &st); err == nil {
				failures[blk] = append(failures[blk], st)
			}
		}
	}
	for _, i := range run {
		b := blocks[i]
		got := strings.ReplaceAll(outputs[i], base, documentedBase)
		allowed := map[int]bool{}
		if m := exitsRE.FindStringSubmatch(b.info); m != nil {
			for _, s := range strings.Split(m[1], ",") {
				n, _ := strconv.Atoi(s)
				allowed[n] = true
			}
			if len(failures[i]) == 0 {
				t.Errorf("%s:%d: the block says exits=%s, but every command succeeded\n%s", doc, b.line, m[1], got)
			}
		}
		for _, st := range failures[i] {
			if !allowed[st] {
				t.Errorf("%s:%d: a command exited %d:\n%s\noutput:\n%s", doc, b.line, st, b.text, got)
				break
			}
		}
		if b.hasOutput && strings.TrimRight(got, "\n") != strings.TrimRight(b.output, "\n") {
			t.Errorf("%s:%d: the block prints something else than the document shows:\n--- printed\n%s\n--- document\n%s", doc, b.line, got, b.output)
		}
	}
	// The clone holds what it held: the examples wrote into temporary directories.
	after := treeOf(t, clone)
	for path := range after {
		if !before[path] {
			t.Errorf("%s: the examples left %s in the clone", doc, path)
		}
	}
}

// treeOf lists every path under dir.
func treeOf(t *testing.T, dir string) map[string]bool {
	t.Helper()
	paths := map[string]bool{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && path != dir {
			rel, _ := filepath.Rel(dir, path)
			paths[rel] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}

// exampleEnv is a new user's environment: the usual PATH, a home and TMPDIR of its own, and none
// of the service's variables.
func exampleEnv(home string) []string {
	env := []string{"HOME=" + home, "TMPDIR=" + home, "LC_ALL=C.UTF-8"}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "PATH=") {
			env = append(env, kv)
		}
	}
	return env
}

// startServer runs `verifier serve` on a free loopback port, as `make dev` does, until the test ends.
func startServer(t *testing.T, bin, data string) string {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--data", data)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + data, "AWS_REGION=us-east-1", "AWS_EC2_METADATA_DISABLED=true"}
	testproc.SetProcessGroup(cmd)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	log := &testproc.TailBuffer{}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		testproc.KillProcessGroup(cmd.Process.Pid, false)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			testproc.KillProcessGroup(cmd.Process.Pid, true)
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("no start line: %v\n%s", err, log.String())
	}
	m := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+)`).FindStringSubmatch(line)
	if m == nil {
		t.Fatalf("start line %q", line)
	}
	return m[1]
}
