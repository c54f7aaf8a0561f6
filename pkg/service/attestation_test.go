package service_test

import (
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/agent-output-verifier/verifier/internal/kmstest"
	"github.com/agent-output-verifier/verifier/internal/testclock"
	"github.com/agent-output-verifier/verifier/internal/testsvc"
	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/intoto"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/receipt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/store"
	"github.com/agent-output-verifier/verifier/pkg/store/memstore"
)

// kmsAttestations is a service with a receipt log in memory whose receipt key is a kms-sign key
// inside a test KMS, holding n sequenced records.
func kmsAttestations(t *testing.T, n int) (*service.Service, *kmstest.Server, *testclock.Clock, []string) {
	t.Helper()
	kms := kmstest.Start(t)
	c, err := keys.NewKMS(aws.Config{Region: "us-east-1", RetryMaxAttempts: 1, BaseEndpoint: aws.String(kms.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDATTEST", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	key, err := keys.FromKMSSign(context.Background(), c.API(), "alias/verifier-receipts", "v-kms")
	if err != nil {
		t.Fatal(err)
	}
	clk := testclock.New(testclock.Epochs()[0])
	st := memstore.New(clk.Now)
	d := testsvc.Complete(service.Deps{Now: clk.Now, Store: st})
	d.Keys.Current = key
	svc := testsvc.New(t, d)
	ctx := context.Background()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("rec-%04d", i)
		r := store.Receipt{VerificationID: ids[i], ReceiptHash: sha256.Sum256([]byte(ids[i])), Result: "pass",
			VerifiedAt: clk.Now(), KeyVersion: key.Version, OutputHash: fmt.Sprintf("%064x", i), SchemaHash: fmt.Sprintf("%064x", i+1),
			RulesHash: fmt.Sprintf("%064x", i+2), VerifierVersion: "1.0.0", Expires: clk.Now().Add(time.Hour)}
		if i == 0 {
			r.TaskID, r.EnforceRules = "public-task", true
		}
		if err := st.RecordReceipt(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Sequence(ctx); err != nil {
		t.Fatal(err)
	}
	return svc, kms, clk, ids
}

// Under a kms-sign key the attestation is signed by KMS (one kms:Sign, the PAE message well
// under its 4096 bytes) and verifies under KMS's public key; a repeat is the kept envelope,
// signed no more; fresh envelopes are rationed (429 past the burst, refilled with time); a
// KMS that does not sign is a retryable 503 that keeps nothing; an expired record has none.
func TestAttestationUnderKMSIsKeptAndRationed(t *testing.T) {
	burst := service.FreshAttestationsBurst
	svc, kms, clk, ids := kmsAttestations(t, burst+3)
	ctx := context.Background()

	env, err := svc.Attestation(ctx, ids[0])
	if err != nil || kms.Signs() != 1 {
		t.Fatalf("first attestation: %v, %d signs", err, kms.Signs())
	}
	var e struct {
		Payload    string `json:"payload"`
		Signatures []struct {
			KeyID string `json:"keyid"`
			Sig   string `json:"sig"`
		} `json:"signatures"`
	}
	json.Unmarshal(env, &e)
	payload, _ := base64.StdEncoding.DecodeString(e.Payload)
	sig, _ := base64.StdEncoding.DecodeString(e.Signatures[0].Sig)
	if e.Signatures[0].KeyID != "v-kms" || !ed25519.Verify(kms.Public(), intoto.PAE(intoto.PayloadType, payload), sig) {
		t.Fatalf("the envelope does not verify under the KMS key: %s", env)
	}
	if !strings.Contains(string(payload), `"name":"public-task"`) || !strings.Contains(string(payload), intoto.LevelRules) {
		t.Errorf("statement of the public record: %s", payload)
	}
	for range 5 {
		again, err := svc.Attestation(ctx, ids[0])
		if err != nil || string(again) != string(env) {
			t.Fatalf("a repeat: %v", err)
		}
	}
	if kms.Signs() != 1 {
		t.Errorf("%d kms:Sign calls for one record asked 6 times, want 1", kms.Signs())
	}

	// The burst's other fresh signatures, then a refusal.
	for i := 1; i < burst; i++ {
		if _, err := svc.Attestation(ctx, ids[i]); err != nil {
			t.Fatalf("attestation %d within the burst: %v", i, err)
		}
	}
	_, err = svc.Attestation(ctx, ids[burst])
	if ae, ok := apperr.As(err); !ok || ae.Code != apperr.RateLimited || ae.RetryAfter != 1 {
		t.Fatalf("past the burst: %v, want rate_limited with retry_after 1", err)
	}
	if kms.Signs() != int64(burst) {
		t.Errorf("%d kms:Sign calls, want the burst %d", kms.Signs(), burst)
	}
	if _, err := svc.Attestation(ctx, ids[0]); err != nil {
		t.Errorf("a kept envelope is refused when the ration is spent: %v", err)
	}
	clk.Advance(time.Second)
	if _, err := svc.Attestation(ctx, ids[burst]); err != nil {
		t.Errorf("a second later: %v", err)
	}

	// KMS failing: a retryable 503 through PublicError, nothing kept.
	clk.Advance(time.Minute)
	kms.FailSign(true)
	_, err = svc.Attestation(ctx, ids[burst+1])
	if !errors.Is(err, receipt.ErrSignerUnavailable) {
		t.Fatalf("KMS down: %v, want ErrSignerUnavailable", err)
	}
	if pe := svc.PublicError("attestation", err); pe.Status() != 503 || !pe.Retryable {
		t.Errorf("KMS down answers %+v", pe)
	}
	kms.FailSign(false)
	if _, err := svc.Attestation(ctx, ids[burst+1]); err != nil {
		t.Errorf("KMS back: %v", err)
	}

	// Past the record's expiry, the kept envelope is not handed out either.
	clk.Advance(2 * time.Hour)
	if _, err := svc.Attestation(ctx, ids[0]); err == nil {
		t.Error("an expired record's attestation was served")
	} else if ae, ok := apperr.As(err); !ok || ae.Code != apperr.NotFound {
		t.Errorf("expired: %v, want not_found", err)
	}
}
