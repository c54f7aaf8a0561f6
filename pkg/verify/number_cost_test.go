package verify

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// numberBody is a request whose output is an array of one number literal repeated to size bytes,
// checked against a schema of numbers with strict content checks and a bound over every element.
func numberBody(lit string, size int) []byte {
	n := size / (len(lit) + 1)
	items := strings.TrimSuffix(strings.Repeat(lit+",", n), ",")
	return fmt.Appendf(nil, `{"task_id":"n","enforce_rules":true,"strict_content_check":true,`+
		`"expected_schema":{"type":"array","items":{"type":"number"}},"submitted_output":[%s],`+
		`"bounds":{"[]":{"min":-1,"max":1}}}`, items)
}

// BenchmarkRespondNumberShapes is the engine's whole cost (decode, schema, content checks,
// bounds, hashes, report) for a 64 KiB and a 1 MiB body of one number shape: ns/byte should not
// depend on the shape. Shapes named _422 are refused (their exponent is out of range), and are
// measured all the same: a refusal is neither counted nor charged.
func BenchmarkRespondNumberShapes(b *testing.B) {
	for _, size := range []int{64<<10 - 400, 1<<20 - 400} {
		for _, s := range []struct{ name, lit string }{
			{"normal", "0.123456"},
			{"normal_short", "5e-300"},
			{"subnormal_min", "5e-324"},
			{"subnormal", "1e-310"},
			{"subnormal_long", "2.4703282292062328e-324"},
			{"mantissa_1000", "0." + strings.Repeat("1234567890", 100)},
			{"subnormal_799", "4." + strings.Repeat("9406564584", 79) + "12345678e-324"},
			{"subnormal_999", "4." + strings.Repeat("9406564584", 99) + "12345678e-324"},
			{"exponent_huge_422", "1e-99999999999999999999"},
			{"exponent_edge", "2.2250738585072011e-308"},
			{"zeros_long", "0." + strings.Repeat("0", 390) + "1"},
			{"zeros_trailing", "1." + strings.Repeat("0", 998) + "1"},
			{"integer_zeros", "1" + strings.Repeat("0", 300) + "e-300"},
		} {
			body := numberBody(s.lit, size)
			b.Run(fmt.Sprintf("%s/%dKiB", s.name, (size+400)>>10), func(b *testing.B) {
				eng := NewEngine(wire.Limits{})
				refused := strings.HasSuffix(s.name, "_422") // a refusal must cost no more than an answer
				for b.Loop() {
					if _, _, err := eng.Respond(body, testEnv, nil); (err != nil) != refused {
						b.Fatalf("refused %v, want %v: %v", err != nil, refused, err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(body)), "ns/byte")
			})
		}
	}
}
