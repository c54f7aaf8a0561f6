package x402

import "testing"

func TestSolanaKeyRoundTrip(t *testing.T) {
	for _, a := range []string{
		"11111111111111111111111111111111", // the system program: 32 zero bytes
		"TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA",
		usdcSolana,
		"9hSR6S7WPtxmTojgo6GG3k4yDPecgJY292j7xrsUGWBu",
	} {
		k, err := SolanaPublicKey(a)
		if err != nil {
			t.Fatalf("SolanaPublicKey(%s): %v", a, err)
		}
		if got := SolanaAddress(k); got != a {
			t.Errorf("SolanaAddress(SolanaPublicKey(%s)) = %s", a, got)
		}
	}
	if k, _ := SolanaPublicKey("11111111111111111111111111111111"); k != [32]byte{} {
		t.Errorf("the system program decodes to %x", k)
	}
	for _, bad := range []string{"", "0OIl" + usdcSolana[4:], usdcSolana[:30], "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"} {
		if _, err := SolanaPublicKey(bad); err == nil {
			t.Errorf("SolanaPublicKey(%q): no error", bad)
		}
	}
}
