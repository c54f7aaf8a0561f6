package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agent-output-verifier/verifier/internal/testproc"
)

// quickPeerConfig runs the peer scripts for a moment only: the tests check what they answer, not
// how fast.
func quickPeerConfig(t *testing.T) (config, []benchDocument) {
	t.Helper()
	root, err := testproc.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := config{root: root, python: "python3", node: "node", tmp: t.TempDir(), peerRounds: 1, peerRound: 20 * time.Millisecond}
	docs, err := writeBenchDocuments(c)
	if err != nil {
		t.Fatal(err)
	}
	return c, docs
}

func TestCheckPeerRefuses(t *testing.T) {
	doc := naiveDocuments(t)[0]
	key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	v := naiveSetup(t, doc)
	out, err := v.verify(doc.body)
	if err != nil {
		t.Fatal(err)
	}
	good := peerRun{Us: 1, Ops: 1, Response: string(out), KeyVersion: naiveKeyVersion,
		PublicKey: base64.StdEncoding.EncodeToString(key.Public().(ed25519.PublicKey))}
	other := base64.StdEncoding.EncodeToString(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{8}, 32)).Public().(ed25519.PublicKey))
	cases := []struct {
		name string
		edit func(*peerRun)
		want string
	}{
		{"output hash", func(p *peerRun) {
			p.Response = strings.Replace(p.Response, `"output_hash":"`, `"output_hash":"0`, 1)
		}, "output_hash"},
		{"request hash", func(p *peerRun) {
			p.Response = strings.Replace(p.Response, `"request_hash":"`, `"request_hash":"0`, 1)
		}, "request_hash"},
		{"result", func(p *peerRun) {
			p.Response = strings.Replace(p.Response, `"result":"fail"`, `"result":"pass"`, 2)
		}, "result"},
		{"signature", func(p *peerRun) {
			p.Response = strings.Replace(p.Response, `"verifier_version":"naive-go"`, `"verifier_version":"naive-gO"`, 1)
		}, "does not verify"},
		{"key", func(p *peerRun) { p.PublicKey = other }, "does not verify"},
		{"timing", func(p *peerRun) { p.Us = 0 }, "no timing"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			run := good
			tc.edit(&run)
			if run == good {
				t.Fatal("the edit changed nothing")
			}
			err := checkPeer("test", doc, run)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// TestNodePeer runs the Node peer briefly when its packages are installed (make bench installs
// them from the lock file; this test installs nothing) and checks what it signed.
func TestNodePeer(t *testing.T) {
	c, docs := quickPeerConfig(t)
	if _, err := exec.LookPath(c.node); err != nil {
		t.Skip("node is not installed")
	}
	if _, err := os.Stat(filepath.Join(c.root, nodeDir, "node_modules")); err != nil {
		t.Skipf("the Node peer's packages are not installed (make %s/node_modules/.installed)", nodeDir)
	}
	res, err := runNode(context.Background(), c, docs)
	if err != nil {
		t.Fatal(err)
	}
	if res.Versions["ajv"] == "" || res.Versions["canonicalize"] == "" {
		t.Fatalf("versions %v: want ajv and canonicalize", res.Versions)
	}
}

// TestPythonPeer runs the Python peer briefly when jsonschema and cryptography are importable and
// checks what it signed.
func TestPythonPeer(t *testing.T) {
	c, docs := quickPeerConfig(t)
	res, err := runPython(context.Background(), c, docs)
	if err != nil {
		t.Fatal(err)
	}
	if why := res.wholeSkipped(); why != "" {
		t.Skip(why)
	}
	for _, d := range docs {
		if res.whole(d.name) == nil {
			t.Fatalf("no whole job on %s", d.name)
		}
	}
}

func TestPeersMarkdown(t *testing.T) {
	docs := []benchDocument{{name: "seed", size: 827}, {name: "items-200", size: 9934}}
	r := report{docs: docs, peerRound: time.Second, bench: benchmarks{
		benchFullSeed: {ns: 100e3}, benchFull200: {ns: 1e6}, benchNaiveSeed: {ns: 180e3}, benchNaive200: {ns: 0.9e6},
	}}
	r.node = nodeResult{Rounds: 5, Versions: map[string]string{"node": "v20", "ajv": "8", "ajv-formats": "3", "canonicalize": "4"},
		Results: map[string]peerRun{"seed": {Us: 140}, "items-200": {Us: 780}}}
	r.python.skipped = "python3 is not installed"
	got := r.peersMarkdown()
	for _, want := range []string{
		"| whole job faster than Node (ajv 8 + ajv-formats 3 + canonicalize 4 + node:crypto), seed: Node's whole job ÷ Go's whole signed verification | > 1× | 1.40× (140.0 µs vs 100.0 µs) | **met** |",
		"items-200: Node's whole job ÷ Go's whole signed verification | > 1× | 0.78× (780.0 µs vs 1.00 ms) | **missed** |",
		"seed: naive Go's whole job ÷ Go's whole signed verification | > 1× | 1.80× (180.0 µs vs 100.0 µs) | **met** |",
		"items-200: naive Go's whole job ÷ Go's whole signed verification | > 1× | 0.90× (900.0 µs vs 1.00 ms) | **missed** |",
		"| > 1× | not measured: python3 is not installed | **not measured** |",
		"Python was not measured: python3 is not installed.",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("missing %q in\n%s", want, got)
		}
	}
}
