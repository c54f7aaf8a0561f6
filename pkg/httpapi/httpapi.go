// Package httpapi is the REST transport of the service: it translates HTTP requests into the
// operations of pkg/service (the application, which decides everything: free or paid or
// refused, checked, charged, recorded) and renders their outcomes as status, headers and body.
// The same handlers run behind the local server and behind each Lambda function, so local and
// cloud behave identically. The router, the error envelope and the client identity of a request
// are pkg/edge's, which the MCP transport shares; this package imports no other transport.
package httpapi

import (
	"net/http"

	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// api is the REST handlers over one service.
type api struct{ svc *service.Service }

// fail answers err in the §7 envelope (see edge.Fail).
func (a api) fail(w http.ResponseWriter, r *http.Request, err error) { edge.Fail(w, r, a.svc, err) }

// Handler serves every REST route on one handler: the local server's. extra mounts the routes of
// adapters this package does not import (the MCP server adds /mcp, pkg/discovery the index,
// /health, the agent card and its documents), so that the MCP SDK and the docs assets stay out
// of the binaries that do not serve them.
func Handler(svc *service.Service, extra ...func(*edge.Router)) http.Handler {
	rt := edge.NewRouter(svc)
	MountVerify(rt, svc)
	MountReputation(rt, svc)
	MountScore(rt, svc)
	MountLog(rt, svc)
	for _, mount := range extra {
		mount(rt)
	}
	return rt
}

// VerifyHandler serves the verify function's routes.
func VerifyHandler(svc *service.Service) *edge.Router {
	rt := edge.NewRouter(svc)
	MountVerify(rt, svc)
	MountReputation(rt, svc)
	MountLog(rt, svc)
	return rt
}

// ScoreHandler serves the score function's routes.
func ScoreHandler(svc *service.Service) *edge.Router {
	rt := edge.NewRouter(svc)
	MountScore(rt, svc)
	return rt
}
