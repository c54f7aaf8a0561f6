package httpapi

import (
	"context"
	"fmt"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"net/http"
	"testing"
)

// Every spelling of one client's address draws on one free allowance, and the history records
// the same identity's caller id: IPv6 by its /64, IPv4-mapped as IPv4, and every request without
// an address in one shared bucket, so that neither rewriting an address nor dropping it buys
// more free calls.
func TestAllowanceFollowsClientIdentity(t *testing.T) {
	groups := []struct {
		identity string
		spell    []string // X-Forwarded-For values of one client
	}{
		{"2001:db8::/64", []string{"2001:db8::1", "2001:DB8::1", "2001:db8:0:0::1", "[2001:db8::ffff]:443", "2001:db8::abcd:1"}},
		{"9.9.9.5", []string{"9.9.9.5", "::ffff:9.9.9.5", "9.9.9.5:1234", "[::ffff:909:905]:80", " 9.9.9.5 "}},
		{service.UnknownClient, []string{"not-an-ip", "unknown", "009.009.009.005", "9.9.2309", "::"}},
	}
	for _, g := range groups {
		t.Run(g.identity, func(t *testing.T) {
			const limit = 3
			e := newPayEnv(t, openBolt, limit, nil)
			e.rebuild(t, func(d *service.Deps) { d.TrustedProxyHops = 1 })
			for i, xff := range g.spell {
				body := fmt.Sprintf(`{"task_id":"t%d","agent_id":"seller-id","expected_schema":{},"submitted_output":1}`, i)
				resp, m := post(t, e.srv.URL+"/verify/schema", body, "X-Forwarded-For", xff)
				want := http.StatusOK
				if i >= limit {
					want = http.StatusTooManyRequests
				}
				if resp.StatusCode != want {
					t.Fatalf("call %d from %q: %d %v, want %d: the spellings are not one client", i+1, xff, resp.StatusCode, m, want)
				}
			}
			// Another client still has its whole allowance.
			if resp, m := post(t, e.srv.URL+"/verify/schema", okBody, "X-Forwarded-For", "198.51.100.200"); resp.StatusCode != http.StatusOK {
				t.Fatalf("another client: %d %v", resp.StatusCode, m)
			}
			page, _, err := e.st.History(context.Background(), "seller-id", 10, "")
			if err != nil {
				t.Fatal(err)
			}
			if len(page) != limit {
				t.Fatalf("%d verifications recorded, want %d", len(page), limit)
			}
			for _, v := range page {
				if got, want := v.CallerID, e.svc.CallerID(g.identity); got != want {
					t.Errorf("recorded caller id %s, want the allowance's %s (of %q)", got, want, g.identity)
				}
			}
		})
	}
}
