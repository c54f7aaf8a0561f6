// Package testproc holds what every test harness that starts a helper process needs: the
// repository root, a free loopback port, a process group to stop by PID, and a bounded buffer for
// the process's output. One copy, so every harness stops its processes the same way.
package testproc

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"sync"
)

// RepoRoot walks up from the working directory (a test runs in its package's directory) to the
// directory holding go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("find repository root: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("find repository root: no go.mod above the working directory")
		}
		dir = parent
	}
}

// FreePort asks the kernel for a free port on 127.0.0.1, for helpers that cannot pick one
// themselves. Another process may take it before the helper binds it: callers retry on that.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// TailBuffer keeps the last Max bytes written to it (all of them when Max is 0), safe for a
// process's writer goroutines and the test to share; chatty helpers (anvil logs every call) get a
// Max, so they never grow it without bound.
type TailBuffer struct {
	Max int
	mu  sync.Mutex
	buf []byte
}

// Write implements io.Writer.
func (b *TailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if over := len(b.buf) - b.Max; b.Max > 0 && over > 0 {
		b.buf = append(b.buf[:0], b.buf[over:]...)
	}
	return len(p), nil
}

// String returns what the buffer holds.
func (b *TailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}
