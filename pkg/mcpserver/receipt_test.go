package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"testing"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// An answer of verify_schema is a leaf of the log like a REST one: get_receipt returns its
// record, pending and then with an inclusion proof that tlog.CheckRecord accepts under a
// checkpoint signed by the log key; bad arguments are the §7 error naming the field.
func TestGetReceipt(t *testing.T) {
	e := newEnv(t)
	v := e.call(t, ToolVerify, []byte(`{"task_id":"t","expected_schema":{"type":"number"},"submitted_output":1}`), nil)
	if v.IsError {
		t.Fatalf("verify: %s", v.StructuredContent)
	}
	var ans struct {
		ID string `json:"verification_id"`
	}
	json.Unmarshal(v.StructuredContent, &ans)
	args, _ := json.Marshal(map[string]string{"verification_id": ans.ID})
	type record struct {
		ReceiptHash string `json:"receipt_hash"`
		Log         struct {
			Status         string   `json:"status"`
			Index          int64    `json:"index"`
			Checkpoint     string   `json:"checkpoint"`
			InclusionProof []string `json:"inclusion_proof"`
		} `json:"log"`
	}
	var rec record
	r := e.call(t, ToolReceipt, args, nil)
	if json.Unmarshal(r.StructuredContent, &rec); r.IsError || rec.Log.Status != "pending" {
		t.Fatalf("before sequencing: %s", r.StructuredContent)
	}
	if _, err := e.svc.Sequence(context.Background()); err != nil {
		t.Fatal(err)
	}
	rec = record{}
	r = e.call(t, ToolReceipt, args, nil)
	if json.Unmarshal(r.StructuredContent, &rec); r.IsError || rec.Log.Status != "" {
		t.Fatalf("after sequencing: %s", r.StructuredContent)
	}
	c, err := receipt.Canonicalize(v.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	leaf := sha256.Sum256(c)
	var proof tlog.RecordProof
	for _, p := range rec.Log.InclusionProof {
		b, _ := base64.StdEncoding.DecodeString(p)
		var h tlog.Hash
		copy(h[:], b)
		proof = append(proof, h)
	}
	if _, err := translog.CheckInclusion([]byte(rec.Log.Checkpoint), testsvc.LogKey(e.svc.BaseURL()).VerifierKey, leaf, rec.Log.Index, proof); err != nil {
		t.Errorf("inclusion: %v", err)
	}
	for _, bad := range []string{`{}`, `{"verification_id":""}`, `{"verification_id":"x","more":1}`, `[]`} {
		r := e.call(t, ToolReceipt, []byte(bad), nil)
		var env struct {
			Code   string `json:"code"`
			Fields []struct {
				Field string `json:"field"`
			} `json:"fields"`
		}
		json.Unmarshal(r.StructuredContent, &env)
		if !r.IsError || env.Code != "invalid_request" || len(env.Fields) != 1 {
			t.Errorf("get_receipt %s: %s, want invalid_request naming one field", bad, r.StructuredContent)
		}
	}
	if r := e.call(t, ToolReceipt, []byte(`{"verification_id":"never-issued"}`), nil); !r.IsError {
		t.Errorf("an unknown id: %s, want not_found", r.StructuredContent)
	}
}
