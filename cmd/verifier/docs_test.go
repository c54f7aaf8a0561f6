package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// TestDiscoveryOnTheLocalServer checks the discovery documents as `make dev` serves them: the docs
// viewer renders every operation in a real browser with the network closed, and every command of
// llms-full.txt's worked examples gives what the document says.
func TestDiscoveryOnTheLocalServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and starts the server")
	}
	base := startServe(t, t.TempDir()).url
	t.Run("docs in headless Chromium", func(t *testing.T) { testDocsInChromium(t, base) })
	t.Run("llms-full.txt commands", func(t *testing.T) { testLLMsFullCommands(t, base) })
}

// chromiumOrSkip finds Debian's chromium, which `make test` installs. Without it the browser test
// is skipped on a developer's machine and fails in CI.
func chromiumOrSkip(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is missing: `make test` installs it (apt-get install chromium)")
	}
	t.Skip("chromium is missing: run `make chromium` to run the browser test")
	return ""
}

// runChromium runs headless Chromium on url with every host but 127.0.0.1 unresolvable, so that
// the page can reach nothing but the local server, and returns its stdout and log.
func runChromium(t *testing.T, chromium, url string, extra ...string) (string, string) {
	t.Helper()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--disable-default-apps", "--disable-extensions", "--no-default-browser-check", "--mute-audio",
		"--user-data-dir=" + t.TempDir(),
		"--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
		"--enable-logging=stderr", "--v=0",
		"--virtual-time-budget=5000",
	}, extra...)
	args = append(args, url)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, args...)
	testproc.SetProcessGroup(cmd)
	cmd.Cancel = func() error { testproc.KillProcessGroup(cmd.Process.Pid, true); return nil }
	var stdout bytes.Buffer
	stderr := &testproc.TailBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	if cmd.Process != nil {
		testproc.KillProcessGroup(cmd.Process.Pid, true) // helpers (zygote, gpu) it may leave behind
	}
	if err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// operation is one operation of the served OpenAPI document.
type operation struct{ id, method, path string }

func openAPIOperations(t *testing.T, base string) []operation {
	t.Helper()
	_, body := httpGet(t, base+"/openapi.json")
	var doc struct {
		Paths map[string]map[string]struct {
			OperationID string `json:"operationId"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	var ops []operation
	for path, item := range doc.Paths {
		for method, op := range item {
			ops = append(ops, operation{op.OperationID, method, path})
		}
	}
	if len(ops) < 15 {
		t.Fatalf("the document has only %d operations", len(ops))
	}
	return ops
}

func testDocsInChromium(t *testing.T, base string) {
	chromium := chromiumOrSkip(t)
	ops := openAPIOperations(t, base)

	dom, log := runChromium(t, chromium, base+"/docs", "--dump-dom")
	// The viewer logs nothing: any console line is a script error or a blocked load (CSP).
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, ":CONSOLE") || strings.Contains(line, "Content Security Policy") {
			t.Errorf("browser console: %s", line)
		}
	}
	if strings.Contains(dom, `data-error=`) {
		t.Fatalf("the viewer could not load the document:\n%s", dom)
	}
	if want := fmt.Sprintf(`data-operations="%d"`, len(ops)); !strings.Contains(dom, want) {
		t.Errorf("the rendered page does not say %s", want)
	}
	text := htmlText(dom)
	for _, op := range ops {
		section := regexp.MustCompile(`<section class="op" id="` + regexp.QuoteMeta(op.id) + `" data-method="` + op.method + `" data-path="` + regexp.QuoteMeta(op.path) + `">`)
		if !section.MatchString(dom) {
			t.Errorf("no rendered section for %s %s (%s)", op.method, op.path, op.id)
		}
		if !strings.Contains(dom, `data-operation="`+op.id+`"`) {
			t.Errorf("no try-it form for %s", op.id)
		}
		if !strings.Contains(text, op.id) || !strings.Contains(text, op.path) {
			t.Errorf("the page text lacks %s %s", op.id, op.path)
		}
	}
	for _, want := range []string{"Parameters", "Request body", "Responses", "Error codes", "free_trial_exhausted", "VerifyRequest", "Example: "} {
		if !strings.Contains(text, want) {
			t.Errorf("the page text lacks %q", want)
		}
	}

	shot := filepath.Join(t.TempDir(), "docs.png")
	runChromium(t, chromium, base+"/docs", "--window-size=1280,2400", "--screenshot="+shot)
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 10_000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %d bytes, %v", shot, len(png), err)
	}
	t.Logf("screenshot of /docs: %s (%d bytes)", shot, len(png))
}

// htmlText is the text of an HTML document: tags removed, entities of the text kept as they are.
func htmlText(dom string) string {
	return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(dom, " ")
}

func httpGet(t *testing.T, url string) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, b)
	}
	return resp, b
}

// fencedBlock is one fenced code block of a markdown document.
type fencedBlock struct{ info, text string }

func fencedBlocks(doc string) []fencedBlock {
	var out []fencedBlock
	for _, m := range regexp.MustCompile("(?s)```([^\n]*)\n(.*?)\n```").FindAllStringSubmatch(doc, -1) {
		out = append(out, fencedBlock{m[1], m[2]})
	}
	return out
}

var curlCommand = regexp.MustCompile(`^curl -s (\S+)(?: -H '([^:]+): ([^']+)')?(?: --data-binary @(\S+))?$`)

// stableAnswer drops what differs between two answers to one request: ids, times, the signing key.
func stableAnswer(t *testing.T, b []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b)
	}
	for _, f := range []string{"verification_id", "verified_at", "computed_at", "attestation"} {
		delete(m, f)
	}
	if v, ok := m["verify"].(map[string]any); ok {
		delete(v, "key_version")
	}
	out, _ := json.Marshal(m)
	return string(out)
}

// testLLMsFullCommands saves the worked examples' files, runs each curl command against the
// server and each `verifier receipt verify` through this command, and compares what they give
// with what the document says.
func testLLMsFullCommands(t *testing.T, base string) {
	_, body := httpGet(t, base+"/llms-full.txt")
	dir := t.TempDir()
	files := map[string][]byte{}
	blocks := fencedBlocks(string(body))
	for _, b := range blocks {
		if name, ok := strings.CutPrefix(b.info, "json file="); ok {
			files[name] = []byte(b.text)
			if err := os.WriteFile(filepath.Join(dir, name), []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	curls, verifies := 0, 0
	for i, b := range blocks {
		if b.info != "sh" {
			continue
		}
		line := strings.TrimSpace(b.text)
		switch {
		case strings.HasPrefix(line, "curl "):
			m := curlCommand.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("unexpected curl command %q", line)
				continue
			}
			curls++
			method, reqBody := http.MethodGet, []byte(nil)
			if m[4] != "" {
				method, reqBody = http.MethodPost, files[m[4]]
			}
			req, _ := http.NewRequest(method, m[1], bytes.NewReader(reqBody))
			if m[2] != "" {
				req.Header.Set(m[2], m[3])
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			// The answer the document shows is the next file block after the command.
			var want []byte
			var wantName string
			for _, nb := range blocks[i+1:] {
				if name, ok := strings.CutPrefix(nb.info, "json file="); ok && strings.HasSuffix(name, ".response.json") {
					want, wantName = []byte(nb.text), name
					break
				}
			}
			status := regexp.MustCompile("Answer, HTTP (\\d+), `" + regexp.QuoteMeta(wantName) + "`").FindStringSubmatch(string(body))
			if status == nil || status[1] != strconv.Itoa(resp.StatusCode) {
				t.Errorf("%s: the server answers %d, the document says %v", line, resp.StatusCode, status)
			}
			if g, w := stableAnswer(t, got), stableAnswer(t, want); g != w {
				t.Errorf("%s: the server's answer differs from %s:\n live %s\n doc  %s", line, wantName, g, w)
			}
		case strings.HasPrefix(line, "verifier receipt verify "):
			verifies++
			args := strings.Fields(strings.TrimPrefix(line, "verifier "))
			for j, a := range args {
				if _, ok := files[a]; ok {
					args[j] = filepath.Join(dir, a)
				}
			}
			code, out, errOut := runCLI(t, "", args...)
			want := ""
			if i+1 < len(blocks) && blocks[i+1].info == "text" {
				want = blocks[i+1].text
			}
			if code != exitOK || strings.TrimSpace(out) != want {
				t.Errorf("%s: exit %d, output %q (%s), the document says %q", line, code, out, errOut, want)
			}
		}
	}
	if curls < 4 || verifies < 2 {
		t.Errorf("ran %d curl and %d verify commands; the document should have at least 4 and 2", curls, verifies)
	}
}
