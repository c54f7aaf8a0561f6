package keys

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"strings"
	"testing"
)

// fakeKMS is a fake of the KMS API (JSON 1.1, as documented for GetPublicKey and Sign) holding one
// asymmetric key: it answers GetPublicKey with the key's DER SubjectPublicKeyInfo and spec, and
// Sign with a real signature, refusing any algorithm or message type but ED25519_SHA_512 RAW.
type fakeKMS struct {
	spec, usage string
	pub         any // the public key GetPublicKey reports
	priv        ed25519.PrivateKey
	failSign    bool
	signs       int
}

func (f *fakeKMS) serve(t *testing.T) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(f.pub)
	if err != nil {
		t.Fatal(err)
	}
	const keyID = "arn:aws:kms:us-east-1:111122223333:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	return awsJSONServer(t, func(op string, in map[string]any) (map[string]any, string) {
		switch op {
		case "GetPublicKey":
			return map[string]any{"KeyId": keyID, "KeySpec": f.spec, "KeyUsage": f.usage,
				"PublicKey": base64.StdEncoding.EncodeToString(der), "SigningAlgorithms": []string{"ED25519_SHA_512", "ED25519_PH_SHA_512"}}, ""
		case "Sign":
			f.signs++
			if f.failSign {
				return nil, "KMSInternalException"
			}
			if in["SigningAlgorithm"] != "ED25519_SHA_512" || in["MessageType"] != "RAW" {
				return nil, "InvalidKeyUsageException"
			}
			msg, err := base64.StdEncoding.DecodeString(in["Message"].(string))
			if err != nil || len(msg) > MaxKMSMessage {
				return nil, "ValidationException"
			}
			return map[string]any{"KeyId": keyID, "SigningAlgorithm": "ED25519_SHA_512",
				"Signature": base64.StdEncoding.EncodeToString(ed25519.Sign(f.priv, msg))}, ""
		}
		return nil, "UnsupportedOperationException"
	})
}

func newFakeKMS(t *testing.T) (*fakeKMS, *KMS) {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeKMS{spec: "ECC_NIST_EDWARDS25519", usage: "SIGN_VERIFY", pub: pub, priv: priv}
	return f, testKMS(t, testAWSConfig(f.serve(t)))
}

// A kms-sign key's signatures are KMS's, and byte-identical to a local key's over the same bytes.
func TestKMSSignerSignsAsALocalKey(t *testing.T) {
	f, c := newFakeKMS(t)
	ctx := context.Background()
	s, err := NewKMSSigner(ctx, c.c, "alias/verifier-signing", "v5")
	if err != nil {
		t.Fatal(err)
	}
	if pub := s.Public(); pub.Version != "v5" || !pub.Key.Equal(f.priv.Public()) {
		t.Fatalf("public key %v, want the KMS key's under v5", pub)
	}
	for _, msg := range [][]byte{[]byte("{}"), bytes.Repeat([]byte("x"), MaxKMSMessage)} {
		sig, err := s.Sign(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		if local := ed25519.Sign(f.priv, msg); !bytes.Equal(sig, local) {
			t.Errorf("the KMS signature of %d bytes differs from the local key's", len(msg))
		}
	}
	if f.signs != 2 {
		t.Errorf("%d Sign calls, want 2", f.signs)
	}
	if _, err := s.Sign(ctx, make([]byte, MaxKMSMessage+1)); err == nil || f.signs != 2 {
		t.Errorf("a message over KMS's limit: %v after %d calls, want an error and no call", err, f.signs)
	}
	f.failSign = true
	if _, err := s.Sign(ctx, []byte("{}")); err == nil || !strings.Contains(err.Error(), "KMSInternalException") {
		t.Errorf("a failing Sign: %v, want the service's error", err)
	}
}

// A key that is not an Ed25519 signing key stops the start-up with a clear error.
func TestKMSSignerRefusesOtherKeys(t *testing.T) {
	ec, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	for name, mutate := range map[string]func(*fakeKMS){
		"P-256 key":           func(f *fakeKMS) { f.spec, f.pub = "ECC_NIST_P256", &ec.PublicKey },
		"encryption key":      func(f *fakeKMS) { f.usage = "ENCRYPT_DECRYPT" },
		"spec lies about DER": func(f *fakeKMS) { f.pub = &ec.PublicKey },
	} {
		f, _ := newFakeKMS(t)
		mutate(f)
		c := testKMS(t, testAWSConfig(f.serve(t)))
		if _, err := NewKMSSigner(context.Background(), c.c, "k", "v1"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	_, c := newFakeKMS(t)
	if _, err := NewKMSSigner(context.Background(), c.c, "", "v1"); err == nil {
		t.Error("an empty key id was accepted")
	}
}
