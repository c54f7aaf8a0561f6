package edge

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"testing"
	"testing/iotest"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
)

// ReadBody reads a body of any length up to the limit, declared or not, however the reads come,
// into one allocation when its length is declared, and refuses one past the limit.
func TestReadBody(t *testing.T) {
	const limit = 3000
	for _, n := range []int{0, 1, 511, 512, 513, 2999, 3000, 3001, 9000} {
		body := bytes.Repeat([]byte("x"), n)
		for _, declared := range []bool{true, false} {
			for _, oneByte := range []bool{true, false} {
				var rd io.Reader = bytes.NewReader(body)
				if oneByte {
					rd = iotest.OneByteReader(rd)
				}
				r := httptest.NewRequest("POST", "/verify/schema", rd)
				r.ContentLength = -1
				if declared {
					r.ContentLength = int64(n)
				}
				got, err := ReadBody(r, limit)
				name := fmt.Sprintf("%d bytes, declared %v, one byte a read %v", n, declared, oneByte)
				if n > limit {
					if ae, ok := apperr.As(err); !ok || ae.Status() != 413 {
						t.Errorf("%s: %v, want a 413", name, err)
					}
					continue
				}
				if err != nil || !bytes.Equal(got, body) {
					t.Errorf("%s: %d bytes, %v; want the body", name, len(got), err)
				}
			}
		}
	}
	// A stated length is only the client's word: a megabyte stated and ten bytes sent cost no
	// more than maxPresized, and a body shorter or longer than stated is read as it comes.
	for _, c := range []struct {
		stated int64
		sent   int
	}{{1 << 20, 10}, {100, 50}, {10, 100}} {
		r := httptest.NewRequest("POST", "/verify/schema", bytes.NewReader(make([]byte, c.sent)))
		r.ContentLength = c.stated
		got, err := ReadBody(r, 1<<20)
		if err != nil || len(got) != c.sent || cap(got) > maxPresized {
			t.Errorf("stated %d, sent %d: %d bytes in a buffer of %d, %v; want %d bytes, at most %d allocated",
				c.stated, c.sent, len(got), cap(got), err, c.sent, maxPresized)
		}
	}
	src := make([]byte, 2000)
	rd := bytes.NewReader(src)
	r := httptest.NewRequest("POST", "/verify/schema", rd)
	if allocs := testing.AllocsPerRun(20, func() {
		rd.Reset(src)
		ReadBody(r, limit)
	}); allocs > 2 { // the buffer, and the limit's reader
		t.Errorf("%v allocations to read a declared body, want 2", allocs)
	}
}
