package edge

import (
	"net/http"
	"testing"
)

// A request's route is logged as the template it matched, never as the caller's path: a prefix
// route's caller-chosen part is its variable, and a template with a fixed ending names the paths
// that end so.
func TestRouteLabel(t *testing.T) {
	rt := &Router{}
	nop := func(http.ResponseWriter, *http.Request) {}
	rt.Handle(http.MethodPost, "/verify/schema", nop)
	rt.Handle(http.MethodGet, "/score/{agent_id}", nop)
	rt.Handle(http.MethodGet, "/verifications/{verification_id}", nop)
	rt.Handle(http.MethodGet, "/verifications/{verification_id}/attestation", nop)
	rt.Handle(http.MethodGet, "/log/tile/{height}/{level}/{n}", nop)
	for path, want := range map[string]string{
		"/verify/schema":                            "/verify/schema",
		"/score/agent-CANARY":                       "/score/{agent_id}",
		"/verifications/3f0c-CANARY":                "/verifications/{verification_id}",
		"/verifications/3f0c-CANARY/attestation":    "/verifications/{verification_id}/attestation",
		"/log/tile/8/0/001.p/7":                     "/log/tile/{height}/{level}/{n}",
		"/log/tile/8/data/000":                      "/log/tile/{height}/{level}/{n}",
		"/score/":                                   "/score/{agent_id}",
		"/CANARY":                                   "(no route)",
		"/verify/schema/CANARY":                     "(no route)",
		"/verifications/x/attestation/extra-CANARY": "/verifications/{verification_id}",
	} {
		if got := rt.routeLabel(path); got != want {
			t.Errorf("routeLabel(%q) = %q, want %q", path, got, want)
		}
	}
	if n := len(rt.routes); n != 4 {
		t.Errorf("%d routes, want 4: templates of one prefix share it", n)
	}
}
