package translog_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/agent-output-verifier/verifier/internal/kmstest"
	"github.com/agent-output-verifier/verifier/pkg/keys"
	"github.com/agent-output-verifier/verifier/pkg/translog"
)

// A log key inside KMS (kms-sign) signs checkpoints that note's own verifier opens: the signature
// line's key hash is note's for the key's name and public half, the signature is made by KMS (one
// Sign call), and the note is byte-identical to the one a local key with the same seed signs.
func TestCheckpointSignedInKMS(t *testing.T) {
	srv := kmstest.Start(t)
	c, err := keys.NewKMS(aws.Config{Region: "us-east-1", RetryMaxAttempts: 1, BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("AKIDLOG", "test", "")})
	if err != nil {
		t.Fatal(err)
	}
	remote, err := keys.FromKMSSign(context.Background(), c.API(), "alias/verifier-log", "log-kms")
	if err != nil {
		t.Fatal(err)
	}
	const origin = "verifier.example.com/log"
	lk, err := translog.NewLogKey(origin, remote)
	if err != nil {
		t.Fatal(err)
	}
	root := tlog.RecordHash([]byte("root"))
	before := srv.Signs()
	signed, err := lk.WithContext(context.Background()).Sign(42, root)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.Signs() - before; got != 1 {
		t.Errorf("%d KMS Sign calls for one checkpoint, want 1", got)
	}
	v, err := note.NewVerifier(lk.VerifierKey)
	if err != nil {
		t.Fatal(err)
	}
	n, err := note.Open(signed, note.VerifierList(v))
	if err != nil {
		t.Fatalf("note.Open of a KMS-signed checkpoint: %v\n%s", err, signed)
	}
	if len(n.Sigs) != 1 || n.Sigs[0].Name != origin || n.Sigs[0].Hash != v.KeyHash() {
		t.Errorf("signatures %+v, want one by %s with hash %08x", n.Sigs, origin, v.KeyHash())
	}
	cp, err := translog.OpenCheckpoint(signed, lk.VerifierKey)
	if err != nil || cp.Size != 42 || cp.Hash != root || cp.Origin != origin {
		t.Errorf("OpenCheckpoint = %+v, %v", cp, err)
	}
	// note's own Ed25519 signer over the same seed (its private key form, PRIVATE+KEY+<name>+
	// <hash>+<base64 of 0x01 and the seed>) signs the same bytes: the key hash and the signature
	// line are note's.
	skey := fmt.Sprintf("PRIVATE+KEY+%s+%08x+%s", origin, v.KeyHash(),
		base64.StdEncoding.EncodeToString(append([]byte{1}, srv.Private.Seed()...)))
	ns, err := note.NewSigner(skey)
	if err != nil {
		t.Fatal(err)
	}
	want, err := note.Sign(&note.Note{Text: translog.Checkpoint{Origin: origin, Size: 42, Hash: root}.Text()}, ns)
	if err != nil || string(want) != string(signed) {
		t.Errorf("note's signer signs\n%s\nKMS signed\n%s (%v)", want, signed, err)
	}
	// A KMS that does not sign leaves no checkpoint.
	srv.FailSign(true)
	if _, err := lk.Sign(43, root); err == nil {
		t.Error("a checkpoint was signed while KMS failed")
	}
}
