package schemacheck

import (
	"encoding/json"
	"testing"
)

// A schema invalid in several places at the same depth is always described by the same one:
// the library's error tree follows map order, which must not reach the answer.
func TestSchemaErrorDeterministic(t *testing.T) {
	for _, src := range []string{
		`{"properties": {"a": {"type": 5}, "b": {"minimum": "x"}, "c": {"required": 3}, "d": {"minLength": -1}}}`,
		`{"properties": {"a": {"pattern": "(?=x)"}, "b": {"pattern": "(?!y)"}, "c": {"pattern": "(?<=z)"}}}`,
		`{"patternProperties": {"(?=a)": {}, "(?!b)": {}, "(?<=c)": {}}}`,
	} {
		var doc any
		if err := json.Unmarshal([]byte(src), &doc); err != nil {
			t.Fatal(err)
		}
		var first string
		for i := range 200 {
			_, err := Compile(doc, false)
			if err == nil {
				t.Fatalf("%s compiled", src)
			}
			if i == 0 {
				first = err.Error()
			} else if err.Error() != first {
				t.Fatalf("%s: the answer changed between compiles:\n%s\n%s", src, first, err.Error())
			}
		}
	}
}
