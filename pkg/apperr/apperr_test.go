package apperr

import (
	"encoding/json"
	"slices"
	"testing"
)

// Codes lists every code of the table once, and each has what the documents need.
func TestCodesAreDocumented(t *testing.T) {
	codes := Codes()
	if len(codes) != len(codeTable) {
		t.Errorf("Codes() has %d codes, the table %d", len(codes), len(codeTable))
	}
	seen := map[Code]bool{}
	for _, c := range codes {
		if seen[c] {
			t.Errorf("%s listed twice", c)
		}
		seen[c] = true
		if _, ok := codeTable[c]; !ok {
			t.Errorf("%s has no table entry", c)
		}
		if len(c.Meaning()) < 20 {
			t.Errorf("%s has no meaning to show callers", c)
		}
	}
}

// The payment codes are SPEC §8.3's list, no more and no fewer.
func TestPaymentCodes(t *testing.T) {
	want := []Code{PaymentRequired, FreeTrialExhausted, PaymentInvalid, PaymentMismatch, PaymentVerifyFail,
		PaymentReplayed, PaymentSettleFail, FacilitatorDown}
	var got []Code
	for _, c := range Codes() {
		if c.Payment() {
			got = append(got, c)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("payment codes %v, want %v", got, want)
	}
}

// The envelope's schema lists exactly the codes there are, in Codes' order.
func TestSchemaListsEveryCode(t *testing.T) {
	var s struct {
		Properties struct {
			Code struct {
				Enum []Code `json:"enum"`
			} `json:"code"`
		} `json:"properties"`
	}
	if err := json.Unmarshal([]byte(SchemaJSON), &s); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(s.Properties.Code.Enum, Codes()) {
		t.Errorf("the schema's code enum is %v, want %v", s.Properties.Code.Enum, Codes())
	}
}
