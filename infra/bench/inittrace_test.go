package main

import (
	"slices"
	"testing"
	"time"
)

// The trace's lines are summed per run and kept per package; other output is ignored, and a run
// that printed no trace at all is an error rather than a zero.
func TestParseInitTrace(t *testing.T) {
	runs := []string{
		"init runtime @0.39 ms, 0.50 ms clock, 0 bytes, 0 allocs\n" +
			"init github.com/santhosh-tekuri/jsonschema/v6 @17 ms, 9.1 ms clock, 1700640 bytes, 21278 allocs\n" +
			"init encoding/gob @10 ms, 1.5 ms clock, 27088 bytes, 365 allocs\n" +
			"2026/11/30 09:19:43 expected AWS Lambda environment variables [AWS_LAMBDA_RUNTIME_API] are not defined\n",
		"init runtime @0.41 ms, 0.30 ms clock, 0 bytes, 0 allocs\n" +
			"init github.com/santhosh-tekuri/jsonschema/v6 @15 ms, 10.1 ms clock, 1700640 bytes, 21278 allocs\n" +
			"init encoding/gob @9 ms, 0.5 ms clock, 27088 bytes, 365 allocs\n" +
			"init unicode @5.3 ms, 0.62 ms clock, 11400 bytes, 16 allocs\n",
		"init runtime @0.40 ms, 0.40 ms clock, 0 bytes, 0 allocs\n" +
			"init github.com/santhosh-tekuri/jsonschema/v6 @16 ms, 9.5 ms clock, 1700640 bytes, 21278 allocs\n" +
			"init encoding/gob @9 ms, 1.0 ms clock, 27088 bytes, 365 allocs\n",
	}
	var tr initTrace
	for _, out := range runs {
		if err := tr.parseInitTrace([]byte(out)); err != nil {
			t.Fatal(err)
		}
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	if want := []time.Duration{ms(0.5 + 9.1 + 1.5), ms(0.3 + 10.1 + 0.5 + 0.62), ms(0.4 + 9.5 + 1.0)}; !slices.Equal(tr.total, want) {
		t.Errorf("totals %v, want %v", tr.total, want)
	}
	if got := medianDuration(tr.pkgs["encoding/gob"]); got != ms(1.0) {
		t.Errorf("median of encoding/gob %v, want 1ms", got)
	}
	if got, want := tr.largest(3), []string{"github.com/santhosh-tekuri/jsonschema/v6", "encoding/gob", "unicode"}; !slices.Equal(got, want) {
		t.Errorf("largest %v, want %v", got, want)
	}
	if err := tr.parseInitTrace([]byte("expected AWS Lambda environment variables\n")); err == nil {
		t.Error("a run without a trace was accepted")
	}
}
