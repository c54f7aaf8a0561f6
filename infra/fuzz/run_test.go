// Package fuzz holds the runner `make fuzz` uses for each campaign (infra/fuzz/run); this test
// drives the runner with a stand-in for the go command that replays what a campaign prints, so
// that each way a campaign can end is classified as it must be.
package fuzz

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeGo writes a go command that prints out and exits with code for `go test -fuzz`, writes
// crasher into the corpus when it is not empty, and exits with replay for the corpus replay.
func fakeGo(t *testing.T, dir, out string, code int, crasher string, replay int) string {
	t.Helper()
	outFile := filepath.Join(dir, "out.txt")
	if err := os.WriteFile(outFile, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `#!/usr/bin/env bash
case " $* " in
*" -fuzz "*)
	cat ` + outFile + `
	if [ -n "` + crasher + `" ]; then mkdir -p pkg/x/testdata/fuzz/FuzzX && echo x > pkg/x/testdata/fuzz/FuzzX/` + crasher + `; fi
	exit ` + itoa(code) + ` ;;
*) echo "replay $*"; exit ` + itoa(replay) + ` ;;
esac
`
	path := filepath.Join(dir, "go")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func itoa(n int) string { return strconv.Itoa(n) }

const raceLog = `fuzz: elapsed: 9s, execs: 112294 (0/sec), new interesting: 9 (total: 172)
--- FAIL: FuzzX (9.04s)
    context deadline exceeded
FAIL
exit status 1
FAIL	example/pkg/x	9.083s
`

func TestRunClassifiesCampaigns(t *testing.T) {
	runner, err := filepath.Abs("run")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name    string
		out     string
		code    int
		crasher string
		replay  int
		wantOK  bool
		wantOut string
	}{
		{name: "clean", out: "PASS\nok  \texample/pkg/x\t8.1s\n", wantOK: true},
		{name: "deadline race, corpus clean", out: raceLog, code: 1, wantOK: true, wantOut: "replay"},
		{name: "deadline race, corpus fails", out: raceLog, code: 1, replay: 1, wantOK: false},
		{name: "input written", code: 1, crasher: "deadbeef", wantOK: false, wantOut: "found a failing input",
			out: "--- FAIL: FuzzX (0.10s)\n    --- FAIL: FuzzX (0.00s)\n        x_test.go:9: boom\n    Failing input written to testdata/fuzz/FuzzX/deadbeef\nFAIL\n"},
		{name: "deadline plus an error line", code: 1, wantOK: false, wantOut: "failed",
			out: "--- FAIL: FuzzX (9.04s)\n    x_test.go:9: boom\n    context deadline exceeded\nFAIL\n"},
		{name: "build failure", code: 1, wantOK: false, out: "# example/pkg/x\nx.go:1: syntax error\nFAIL\texample/pkg/x [build failed]\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "pkg/x/testdata/fuzz/FuzzX"), 0o755); err != nil {
				t.Fatal(err)
			}
			goCmd := fakeGo(t, t.TempDir(), tc.out, tc.code, tc.crasher, tc.replay)
			cmd := exec.Command(runner, "pkg/x", "FuzzX", "1s")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "GO="+goCmd)
			out, err := cmd.CombinedOutput()
			if ok := err == nil; ok != tc.wantOK {
				t.Fatalf("runner succeeded = %v, want %v; output:\n%s", ok, tc.wantOK, out)
			}
			if tc.wantOut != "" && !strings.Contains(string(out), tc.wantOut) {
				t.Errorf("output lacks %q:\n%s", tc.wantOut, out)
			}
		})
	}
}
