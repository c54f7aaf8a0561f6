package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/internal/testhttp"
	"github.com/agent-output-verifier/verifier/pkg/verify"
)

// rssOverhead is what the local server's resident memory may hold beside the compiled schemas
// (verify.SchemaCacheBytes) and what it holds idle: the requests' working memory and the
// collector's slack, which its memory limit bounds, and what that limit does not count (goroutine
// stacks, the runtime's own structures).
const rssOverhead = memoryLimit - verify.SchemaCacheBytes + 32<<20

// TestServeMemoryUnderLargeSchemas sends the real local server a stream of distinct schemas of
// 5,000 empty subschemas (15 KB each, a free request) and of a thousand anchored patterns: its
// resident memory stays within the schema cache's bound plus a fixed overhead, during the stream
// and when idle after it. Before the cache was charged by measurement, 100 such requests took it
// far past that bound.
func TestServeMemoryUnderLargeSchemas(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads resident memory from /proc")
	}
	srv := startServe(t, t.TempDir())
	idle := rssOf(t, srv.pid)
	peak := idle
	for i := range 60 {
		var schema string
		if i%2 == 0 {
			schema = fmt.Sprintf(`{"prefixItems":[%s],"title":"t%d"}`, strings.TrimSuffix(strings.Repeat("{},", 4990), ","), i)
		} else {
			pats := make([]string, 1000)
			for j := range pats {
				pats[j] = fmt.Sprintf(`{"pattern":"^x%d.{80}$"}`, j)
			}
			schema = fmt.Sprintf(`{"allOf":[%s],"title":"t%d"}`, strings.Join(pats, ","), i)
		}
		body := `{"task_id":"t-mem","expected_schema":` + schema + `,"submitted_output":[]}`
		if resp, b := testhttp.Do(t, "POST", srv.url+"/verify/schema", []byte(body)); resp.StatusCode != 200 {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, b)
		}
		rss := rssOf(t, srv.pid)
		peak = max(peak, rss)
		if rss > idle+verify.SchemaCacheBytes+rssOverhead {
			t.Fatalf("after %d requests resident memory is %d MiB, more than %d MiB idle plus the cache's %d MiB plus %d MiB", i+1, rss>>20, idle>>20, verify.SchemaCacheBytes>>20, rssOverhead>>20)
		}
	}
	t.Logf("resident memory: %d MiB idle, %d MiB at most during 60 distinct large schemas, %d MiB after (bound %d MiB)",
		idle>>20, peak>>20, rssOf(t, srv.pid)>>20, (idle+verify.SchemaCacheBytes+rssOverhead)>>20)
}

// rssOf reads a process's resident memory in bytes.
func rssOf(t *testing.T, pid int) int {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for s := bufio.NewScanner(f); s.Scan(); {
		if v, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			kb, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}
