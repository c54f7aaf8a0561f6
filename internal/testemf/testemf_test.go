package testemf

import (
	"encoding/json"
	"os"
	"testing"
)

// Each case of testdata/documents.json is a document and whether the specification accepts it:
// its own example and the variants every rule Check enforces must refuse, so that no rule is a
// check that cannot fail.
func TestCheck(t *testing.T) {
	raw, err := os.ReadFile("testdata/documents.json")
	if err != nil {
		t.Fatal(err)
	}
	var cases []struct {
		Name  string
		Doc   string
		Valid bool
	}
	if err := json.Unmarshal(raw, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 2 {
		t.Fatalf("%d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			err := Check([]byte(c.Doc))
			if got := err == nil; got != c.Valid {
				t.Errorf("valid = %v (%v), want %v", got, err, c.Valid)
			}
		})
	}
}

// Documents finds the EMF lines among a function's other output, with or without a prefix.
func TestDocuments(t *testing.T) {
	stream := "START RequestId: 1 Version: $LATEST\n" +
		`{"time":"x","level":"INFO","msg":"request"}` + "\n" +
		`{"_aws":{"Timestamp":1}}` + "\n" +
		`2026-01-01T00:00:00Z 1 {"_aws":{"Timestamp":2}}` + "\n" +
		"END RequestId: 1\n"
	got := Documents(stream)
	want := []string{`{"_aws":{"Timestamp":1}}`, `{"_aws":{"Timestamp":2}}`}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("document %d = %s, want %s", i, got[i], want[i])
		}
	}
}
