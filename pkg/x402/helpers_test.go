package x402

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// readJSON decodes a testdata file into v.
func readJSON(t testing.TB, name string, v any) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

// fixture is testdata/requirements.json: the configuration and the answer it must produce.
type fixture struct {
	Config struct {
		PayToEVM    string   `json:"payToEVM"`
		PayToSolana string   `json:"payToSolana"`
		Networks    []string `json:"networks"`
		FeePayer    string   `json:"feePayer"`
		PriceUSD    string   `json:"priceUSD"`
	} `json:"config"`
	PaymentRequired PaymentRequired `json:"paymentRequired"`
	Settlement      struct {
		Transaction   string `json:"transaction"`
		FailureReason string `json:"failureReason"`
	} `json:"settlement"`
}

func loadFixture(t testing.TB) fixture {
	t.Helper()
	var f fixture
	readJSON(t, "requirements.json", &f)
	return f
}

// jsonEqual compares two values by their JSON form, so that map[string]any, json.Number and
// typed structs compare by meaning.
func jsonEqual(t testing.TB, a, b any) bool {
	t.Helper()
	return reflect.DeepEqual(normalize(t, a), normalize(t, b))
}

func normalize(t testing.TB, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber() // 1e400 is valid JSON, just not a float64
	var out any
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	return out
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
