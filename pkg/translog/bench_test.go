package translog_test

import (
	"os"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// The receipt hash is computed for every signed answer (off the answer path on the local server,
// on it on Lambda): the seed's final invoice answer canonicalized and hashed.
func BenchmarkReceiptHash(b *testing.B) {
	answer, err := os.ReadFile("../../testdata/seed/invoice-final.response.json")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(answer)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := translog.ReceiptHash(answer); err != nil {
			b.Fatal(err)
		}
	}
}
