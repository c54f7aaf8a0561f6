package keys

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// generatedVectors are the golden generated secrets of testdata/generated-secret-vectors.json,
// each with the seed and public key an independent implementation derived from it.
func generatedVectors(t *testing.T) []struct{ Name, SecretString, Seed, PublicKey string } {
	t.Helper()
	var doc struct {
		Vectors []struct{ Name, SecretString, Seed, PublicKey string }
	}
	b, err := os.ReadFile("testdata/generated-secret-vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &doc); err != nil || len(doc.Vectors) == 0 {
		t.Fatalf("vectors: %v", err)
	}
	return doc.Vectors
}

// secretsServer is a Secrets Manager for the test (its API cannot run here): GetSecretValue of
// the secrets in values, by name, as SecretString, over the SDK's own client.
func secretsServer(t *testing.T, values map[string]string) *SecretsManager {
	t.Helper()
	url := awsJSONServer(t, func(op string, in map[string]any) (map[string]any, string) {
		v, ok := values[in["SecretId"].(string)]
		if op != "GetSecretValue" || !ok {
			return nil, "ResourceNotFoundException"
		}
		return map[string]any{"Name": in["SecretId"], "SecretString": v}, ""
	})
	return testSecretsManager(t, testAWSConfig(url))
}

// A generated secret (the one template.yaml creates by default) is read through Secrets Manager
// into the key the golden vectors give, under the configured version, whatever whitespace
// Secrets Manager's template leaves around its members.
func TestFromSecretsManagerGenerated(t *testing.T) {
	vectors := generatedVectors(t)
	values := map[string]string{}
	for i, v := range vectors {
		values[v.Name] = v.SecretString
		if i == 0 { // a template written with spaces, as a console user might
			values["spaced"] = strings.NewReplacer(`{`, "{ ", `,`, " , ", `:`, " : ", `}`, " }\n").Replace(v.SecretString)
		}
	}
	c := secretsServer(t, values)
	check := func(id string, v struct{ Name, SecretString, Seed, PublicKey string }) {
		t.Helper()
		k, err := FromSecretsManager(context.Background(), c, id, "v1-generated")
		if err != nil {
			t.Fatalf("%s: %v", id, err)
		}
		if got := hex.EncodeToString(k.Private.Seed()); got != v.Seed {
			t.Errorf("%s: seed %s, want %s", id, got, v.Seed)
		}
		if got := base64.StdEncoding.EncodeToString(k.Public().Key); got != v.PublicKey || k.Version != "v1-generated" {
			t.Errorf("%s: key %s %s, want %s v1-generated", id, k.Version, got, v.PublicKey)
		}
	}
	for _, v := range vectors {
		check(v.Name, v)
	}
	check("spaced", vectors[0])
}

// Anything that is not exactly a generated secret of a long enough string of letters and digits
// is refused at start-up, and no error quotes the value.
func TestGeneratedSecretRefuses(t *testing.T) {
	good := strings.Repeat("aZ3", 21) // 63 letters and digits
	for name, value := range map[string]string{
		"another kdf":        `{"kdf":"SHA-256","secret":"` + good + `"}`,
		"kdf in lower case":  `{"kdf":"hkdf-sha256","secret":"` + good + `"}`,
		"no secret":          `{"kdf":"HKDF-SHA256"}`,
		"an empty secret":    `{"kdf":"HKDF-SHA256","secret":""}`,
		"too short":          `{"kdf":"HKDF-SHA256","secret":"` + good[:42] + `"}`,
		"too long":           `{"kdf":"HKDF-SHA256","secret":"` + strings.Repeat("a", 4097) + `"}`,
		"punctuation":        `{"kdf":"HKDF-SHA256","secret":"` + good + `!"}`,
		"a space":            `{"kdf":"HKDF-SHA256","secret":"` + good[:40] + ` ` + good[40:] + `"}`,
		"non-ASCII letters":  `{"kdf":"HKDF-SHA256","secret":"` + good + `é"}`,
		"an escaped letter":  `{"kdf":"HKDF-SHA256","secret":"` + good + `\u00e9"}`,
		"another member":     `{"kdf":"HKDF-SHA256","secret":"` + good + `","keyVersion":"v1"}`,
		"a repeated member":  `{"kdf":"HKDF-SHA256","secret":"` + good + `","secret":"` + good + `"}`,
		"a repeated kdf":     `{"kdf":"HKDF-SHA256","kdf":"HKDF-SHA256","secret":"` + good + `"}`,
		"a number secret":    `{"kdf":"HKDF-SHA256","secret":12345678901234567890123456789012345678901234567890}`,
		"data after":         `{"kdf":"HKDF-SHA256","secret":"` + good + `"} {}`,
		"unterminated":       `{"kdf":"HKDF-SHA256","secret":"` + good,
		"an array":           `[{"kdf":"HKDF-SHA256","secret":"` + good + `"}]`,
		"kdf without secret": `{"kdf":"HKDF-SHA256","seed":"` + base64.StdEncoding.EncodeToString(testSeed) + `"}`,
	} {
		t.Run(name, func(t *testing.T) {
			c := secretsServer(t, map[string]string{"s": value})
			_, err := FromSecretsManager(context.Background(), c, "s", "v1")
			if err == nil {
				t.Fatalf("%s was accepted", value)
			}
			if strings.Contains(err.Error(), good[:20]) || strings.Contains(err.Error(), "aaaaaaaaaa") {
				t.Errorf("the error quotes the value: %v", err)
			}
		})
	}
}

// The two other forms a secret may hold keep their meaning beside the generated one: a key file
// (whose members are strings too) is not taken for a generated secret.
func TestGeneratedSecretIsNotAKeyFile(t *testing.T) {
	k, _ := FromSeed("v7", testSeed)
	kf, _ := json.Marshal(File{KeyVersion: "v7", Algorithm: "Ed25519", PublicKey: base64.StdEncoding.EncodeToString(k.Public().Key), Seed: base64.StdEncoding.EncodeToString(testSeed)})
	if isGeneratedSecret(kf) {
		t.Error("a key file is read as a generated secret")
	}
	c := secretsServer(t, map[string]string{"file": string(kf)})
	if got, err := FromSecretsManager(context.Background(), c, "file", "v7"); err != nil || !got.Private.Equal(k.Private) {
		t.Errorf("key file: %v", err)
	}
}

// FuzzSecretValue reads arbitrary secret values: none panics, and an error never quotes a value
// long enough to be a secret's.
func FuzzSecretValue(f *testing.F) {
	f.Add(`{"kdf":"HKDF-SHA256","secret":"` + strings.Repeat("aZ3", 21) + `"}`)
	f.Add(`{"kdf":"HKDF-SHA256","secret":"` + strings.Repeat("aZ3", 21) + `","secret":"x"}`)
	f.Add(base64.StdEncoding.EncodeToString(testSeed))
	f.Add(`{"keyVersion":"v1","algorithm":"Ed25519","publicKey":"","seed":""}`)
	f.Fuzz(func(t *testing.T, value string) {
		c := stubGetter(value)
		k, err := FromSecretsManager(context.Background(), c, "s", "v1")
		if err != nil {
			if len(value) >= 16 && strings.Contains(err.Error(), value) {
				t.Errorf("the error quotes the value: %v", err)
			}
			return
		}
		if len(k.Private) == 0 || k.Version == "" {
			t.Errorf("accepted %q as an empty key", value)
		}
	})
}

// stubGetter answers every GetSecretValue with one value, for the fuzz target (no server per input).
type stubGetter string

func (s stubGetter) GetSecretValue(context.Context, string) ([]byte, error) { return []byte(s), nil }
