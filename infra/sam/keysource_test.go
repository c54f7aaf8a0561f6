package sam

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/keys"
)

// stackSecretPattern is how the roles name the secret the stack creates (the name, then the six
// characters Secrets Manager appends in the ARN), and stackSecretARN one ARN it matches, as
// CloudFormation resolves Ref SigningKeySecret for the stack agent-output-verifier.
const (
	stackSecretPattern = "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:${AWS::StackName}/receipt-signing-key-??????"
	stackSecretARN     = "arn:aws:secretsmanager:us-east-1:123456789012:secret:agent-output-verifier/receipt-signing-key-Ab3dEf"
)

// secretsManagerVia is the kms:ViaService value of calls Secrets Manager makes in the stack's
// region.
const secretsManagerVia = "secretsmanager.${AWS::Region}.${AWS::URLSuffix}"

// TestSigningKeySecret checks the template's default key source: KeySource secretsmanager with
// no SigningKeySecretArn makes the stack create the secret, encrypted with a customer-managed
// KMS key it also creates; every function reads that one secret (its role names it and nothing
// else of Secrets Manager's) and may decrypt with that key only through Secrets Manager; the
// account administers the key and may write new values but never decrypt; both are kept when
// the stack stops using them; and the functions get the secret as VERIFIER_SIGNING_KEY
// (TestEnvironment) with no manual step before the first deploy.
func TestSigningKeySecret(t *testing.T) {
	tmpl := load(t)
	p := parameter(tmpl.raw, "KeySource")
	if p["Default"] != "secretsmanager" || fmt.Sprint(p["AllowedValues"]) != "[secretsmanager kms-sign kms]" {
		t.Errorf("KeySource: default %v, values %v; want secretsmanager of secretsmanager, kms-sign, kms", p["Default"], p["AllowedValues"])
	}
	for _, name := range []string{"SigningKeySecretArn", "SigningKeyKmsKeyArn"} {
		if d := parameter(tmpl.raw, name)["Default"]; d != "" {
			t.Errorf("%s defaults to %v; the default deploy names no key of its own", name, d)
		}
	}
	res, _ := tmpl.raw["Resources"].(map[string]any)
	for _, name := range []string{"SigningKeySecret", "SigningKeySecretKmsKey"} {
		raw, _ := res[name].(map[string]any)
		if raw["Condition"] != "CreatesSigningKeySecret" || raw["DeletionPolicy"] != "Retain" || raw["UpdateReplacePolicy"] != "Retain" {
			t.Errorf("%s: condition %v, deletion %v, replacement %v; want CreatesSigningKeySecret, Retain, Retain",
				name, raw["Condition"], raw["DeletionPolicy"], raw["UpdateReplacePolicy"])
		}
	}
	// With the defaults the condition holds: KeySource secretsmanager, SigningKeySecretArn empty.
	if p["Default"] != "secretsmanager" || tmpl.Conditions["CreatesSigningKeySecret"] != "and[KeySourceIsSecretsManager !(HasSigningKeySecret)]" {
		t.Errorf("CreatesSigningKeySecret = %v: the default deploy must create the secret", tmpl.Conditions["CreatesSigningKeySecret"])
	}

	secret, ok := tmpl.GetAllSecretsManagerSecretResources()["SigningKeySecret"]
	if !ok {
		t.Fatal("no SigningKeySecret")
	}
	if got := deref(secret.KmsKeyId); got != "${SigningKeySecretKmsKey.Arn}" {
		t.Errorf("SigningKeySecret is encrypted with %q, want the stack's own key ${SigningKeySecretKmsKey.Arn}", got)
	}
	if got := deref(secret.Name) + "-??????"; got != strings.TrimPrefix(stackSecretPattern, "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:") {
		t.Errorf("SigningKeySecret's name %q is not the one the roles' policies name (%s)", deref(secret.Name), stackSecretPattern)
	}
	if !regexp.MustCompile("^" + strings.ReplaceAll(regexp.QuoteMeta(strings.NewReplacer(
		"${AWS::Partition}", "aws", "${AWS::Region}", "us-east-1", "${AWS::AccountId}", "123456789012", "${AWS::StackName}", "agent-output-verifier",
	).Replace(stackSecretPattern)), `\?`, ".") + "$").MatchString(stackSecretARN) {
		t.Errorf("%s does not match the roles' pattern %s", stackSecretARN, stackSecretPattern)
	}
	if secret.SecretString != nil {
		t.Error("SigningKeySecret has a SecretString: the value must be generated, never written in the template")
	}

	// Every function loads the key ring, so each role reads the secret: once, by its pattern,
	// only when the stack creates it (TestIAMIsLeastPrivilege checks the condition and that no
	// other Secrets Manager resource is named).
	var roles []string
	for _, fn := range tmpl.GetAllServerlessFunctionResources() {
		roles = append(roles, deref(fn.Role))
	}
	slices.Sort(roles)
	readers := 0
	for roleName, role := range tmpl.GetAllIAMRoleResources() {
		n := 0
		for _, pol := range role.Policies {
			for _, s := range statements(t, roleName+" "+pol.PolicyName, pol.PolicyDocument) {
				if slices.Contains(strs(s.body["Resource"]), stackSecretPattern) {
					n++
					if a := strs(s.body["Action"]); !slices.Equal(a, []string{"secretsmanager:GetSecretValue"}) || s.condition != "CreatesSigningKeySecret" {
						t.Errorf("%s: %v on the stack's secret under %q, want secretsmanager:GetSecretValue under CreatesSigningKeySecret", s.where, a, s.condition)
					}
				}
				for _, a := range strs(s.body["Action"]) {
					if strings.HasPrefix(a, "kms:") && s.condition == "" {
						t.Errorf("%s: %s whatever the key source; the stack's keys grant the roles in their key policies", s.where, a)
					}
				}
			}
		}
		if n != 1 {
			t.Errorf("%s names the stack's secret %d times, want once", roleName, n)
		}
		readers++
	}
	if readers != len(roles) {
		t.Errorf("%d roles read the secret, want all %d", readers, len(roles))
	}

	key, ok := tmpl.GetAllKMSKeyResources()["SigningKeySecretKmsKey"]
	if !ok {
		t.Fatal("no SigningKeySecretKmsKey")
	}
	if deref(key.KeySpec) != "SYMMETRIC_DEFAULT" || deref(key.KeyUsage) != "ENCRYPT_DECRYPT" || !deref(key.EnableKeyRotation) {
		t.Errorf("SigningKeySecretKmsKey: spec %v usage %v rotation %v, want SYMMETRIC_DEFAULT ENCRYPT_DECRYPT with rotation",
			deref(key.KeySpec), deref(key.KeyUsage), deref(key.EnableKeyRotation))
	}
	const account = "arn:${AWS::Partition}:iam::${AWS::AccountId}:root"
	// What may decrypt, encrypt or grant with the key: the functions decrypt (reading the secret),
	// the account's principals may only make data keys for a new value, both through Secrets
	// Manager; no one else uses it.
	use := []string{"kms:Decrypt", "kms:Encrypt", "kms:GenerateDataKey", "kms:GenerateDataKeyWithoutPlaintext",
		"kms:ReEncryptFrom", "kms:ReEncryptTo", "kms:CreateGrant", "kms:Sign"}
	uses := func(action, u string) bool {
		return action == "kms:*" || action == u || strings.HasSuffix(action, "*") && strings.HasPrefix(u, strings.TrimSuffix(action, "*"))
	}
	decrypters, writers := 0, 0
	for _, s := range statements(t, "SigningKeySecretKmsKey key policy", key.KeyPolicy) {
		principal, _ := s.body["Principal"].(map[string]any)
		who := strs(principal["AWS"])
		slices.Sort(who)
		actions := strs(s.body["Action"])
		if s.body["Effect"] != "Allow" || s.condition != "" || fmt.Sprint(s.body["Resource"]) != "*" {
			t.Errorf("%s: %v", s.where, s.body)
		}
		via := ""
		if c, ok := s.body["Condition"].(map[string]any); ok {
			eq, _ := c["StringEquals"].(map[string]any)
			via, _ = eq["kms:ViaService"].(string)
			if len(c) != 1 || len(eq) != 1 {
				t.Errorf("%s: condition %v, want kms:ViaService alone", s.where, c)
			}
		}
		var used []string
		for _, a := range actions {
			for _, u := range use {
				if uses(a, u) {
					used = append(used, u)
				}
			}
		}
		switch {
		case len(used) == 0:
			if !slices.Equal(who, []string{account}) || via != "" {
				t.Errorf("%s: %v may %v", s.where, who, actions)
			}
		case slices.Equal(used, []string{"kms:GenerateDataKey"}) && slices.Equal(actions, used) && slices.Equal(who, []string{account}):
			writers++
			if via != secretsManagerVia {
				t.Errorf("%s: the account may make data keys outside Secrets Manager (kms:ViaService %q)", s.where, via)
			}
		case slices.Equal(actions, []string{"kms:Decrypt"}) && slices.Equal(who, roles):
			decrypters++
			if via != secretsManagerVia {
				t.Errorf("%s: the functions may decrypt outside Secrets Manager (kms:ViaService %q)", s.where, via)
			}
		default:
			t.Errorf("%s: %v may %v (uses %v); only the functions' roles decrypt, and the account only writes new values", s.where, who, actions, used)
		}
	}
	if decrypters != 1 || writers != 1 {
		t.Errorf("%d statements let the functions decrypt and %d let the account write values, want one of each", decrypters, writers)
	}

	// The rule that refuses a KMS key of one's own with the stack's secret, and the output that
	// names the secret.
	rules, _ := tmpl.raw["Rules"].(map[string]any)
	if _, ok := rules["StackSecretTakesNoKmsKey"]; !ok {
		t.Error("no rule StackSecretTakesNoKmsKey")
	}
	if _, ok := rules["SecretsManagerKeyGiven"]; ok {
		t.Error("the rule SecretsManagerKeyGiven would refuse the default deploy")
	}
	out := tmpl.Outputs["ReceiptKeySecretArn"]
	if fmt.Sprint(out.Value) != "${SigningKeySecret}" || out.Condition == nil || *out.Condition != "CreatesSigningKeySecret" {
		t.Errorf("Output ReceiptKeySecretArn = %v under %v, want ${SigningKeySecret} under CreatesSigningKeySecret", out.Value, out.Condition)
	}
}

// TestStackSecretIsReadable generates values as Secrets Manager would from the template's
// GenerateSecretString (its template, its key, its length and its character set) and reads each
// through pkg/keys' Secrets Manager source: a first deploy's functions must start with the key
// CloudFormation made, and every character the settings allow must be one the reader takes.
func TestStackSecretIsReadable(t *testing.T) {
	tmpl := load(t)
	secret, ok := tmpl.GetAllSecretsManagerSecretResources()["SigningKeySecret"]
	if !ok || secret.GenerateSecretString == nil {
		t.Fatal("SigningKeySecret has no GenerateSecretString")
	}
	g := secret.GenerateSecretString
	// Secrets Manager's character set (GetRandomPassword): letters, digits and punctuation, a
	// space only when asked, less what is excluded; 32 characters unless a length is given.
	var set string
	if !deref(g.ExcludeUppercase) {
		set += "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	}
	if !deref(g.ExcludeLowercase) {
		set += "abcdefghijklmnopqrstuvwxyz"
	}
	if !deref(g.ExcludeNumbers) {
		set += "0123456789"
	}
	if !deref(g.ExcludePunctuation) {
		set += "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"
	}
	if deref(g.IncludeSpace) {
		set += " "
	}
	set = strings.Map(func(r rune) rune {
		if strings.ContainsRune(deref(g.ExcludeCharacters), r) {
			return -1
		}
		return r
	}, set)
	length := 32
	if g.PasswordLength != nil {
		length = *g.PasswordLength
	}
	if g.GenerateStringKey == nil || g.SecretStringTemplate == nil {
		t.Fatal("GenerateSecretString needs SecretStringTemplate and GenerateStringKey: the reader takes a JSON object")
	}
	generate := func(s string) string {
		var doc map[string]any
		if err := json.Unmarshal([]byte(*g.SecretStringTemplate), &doc); err != nil {
			t.Fatalf("SecretStringTemplate is not a JSON object: %v", err)
		}
		doc[*g.GenerateStringKey] = s
		b, _ := json.Marshal(doc)
		return string(b)
	}
	values := []string{}
	for range 20 {
		b := make([]byte, length)
		for i := range b {
			n, _ := rand.Int(rand.Reader, big.NewInt(int64(len(set))))
			b[i] = set[n.Int64()]
		}
		values = append(values, string(b))
	}
	// Each allowed character once, in a string of the template's length.
	for i := 0; i < len(set); i++ {
		values = append(values, strings.Repeat("a", length-1)+set[i:i+1])
	}
	seen := map[string]bool{}
	for _, v := range values {
		k, err := keys.FromSecretsManager(context.Background(), secretValue(generate(v)), stackSecretARN, "v1-2030-12-31")
		if err != nil {
			t.Fatalf("a value Secrets Manager could generate (%d characters from %q) is refused: %v", length, set, err)
		}
		seen[string(k.Public().Key)] = true
	}
	if len(seen) != len(values) {
		t.Errorf("%d values gave %d keys: the key must depend on the whole value", len(values), len(seen))
	}
}

// secretValue is a Secrets Manager that holds one value: the API cannot run here, and what is
// tested is the value the template makes (pkg/keys tests the client against a served API).
type secretValue string

func (v secretValue) GetSecretValue(context.Context, string) ([]byte, error) { return []byte(v), nil }
