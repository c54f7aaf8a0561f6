package httpapi

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// Limits of GET /reputation/{agent_id} beyond the service's page sizes.
const (
	// maxCursorLen bounds ?cursor before the store decodes it; the store's own cursors are under
	// 800 characters.
	maxCursorLen = 1024
)

// The path prefixes of the two agent routes; {agent_id} is the rest of the path.
const (
	reputationPrefix = "/reputation/"
	scorePrefix      = "/score/"
)

// MountReputation adds GET /reputation/{agent_id} to rt.
func MountReputation(rt *edge.Router, svc *service.Service) {
	rt.Handle(http.MethodGet, reputationPrefix+"{agent_id}", api{svc}.handleReputation)
}

// agentIDFromPath reads {agent_id}, the percent-decoded path segment after prefix. A path with
// more segments is no route of this service.
func agentIDFromPath(r *http.Request, prefix string) (string, error) {
	raw, _ := strings.CutPrefix(r.URL.EscapedPath(), prefix)
	if strings.Contains(raw, "/") {
		return "", apperr.New(apperr.NotFound, "No route matches this path. The agent id is one path segment; percent-encode any '/' in it as %2F.")
	}
	id, err := url.PathUnescape(raw)
	if err != nil {
		return "", apperr.Field("agent_id", "is not a valid percent-encoded path segment", "Percent-encode the agent_id (RFC 3986) in the path.")
	}
	return service.AgentID(id)
}

// reputationQuery reads ?limit and ?cursor, refusing anything the route cannot honour with a 422
// naming the parameter.
func reputationQuery(r *http.Request) (limit int, cursor string, err error) {
	q, perr := url.ParseQuery(r.URL.RawQuery)
	if perr != nil {
		return 0, "", apperr.Field("query", "is not a valid URL query string", "Send ?limit=50&cursor=<next_cursor>, percent-encoded.")
	}
	limit = service.DefaultReputationPage
	limitFix := fmt.Sprintf("Send limit as an integer from 1 to %d, or leave it out for %d.", service.MaxReputationPage, service.DefaultReputationPage)
	switch vs := q["limit"]; {
	case len(vs) > 1:
		return 0, "", apperr.Field("limit", "is given more than once", limitFix)
	case len(vs) == 1:
		n, err := strconv.Atoi(vs[0])
		if err != nil || n < 1 || n > service.MaxReputationPage {
			return 0, "", apperr.Field("limit", fmt.Sprintf("must be an integer from 1 to %d", service.MaxReputationPage), limitFix)
		}
		limit = n
	}
	cursorFix := "Send back the next_cursor of the previous page unchanged, or leave cursor out for the newest page."
	switch vs := q["cursor"]; {
	case len(vs) > 1:
		return 0, "", apperr.Field("cursor", "is given more than once", cursorFix)
	case len(vs) == 1:
		if vs[0] == "" || len(vs[0]) > maxCursorLen {
			return 0, "", apperr.Field("cursor", "is not a cursor this service returned", cursorFix)
		}
		cursor = vs[0]
	}
	return limit, cursor, nil
}

// handleReputation is GET /reputation/{agent_id}: free, paginated, signed with the reputation
// context.
func (a api) handleReputation(w http.ResponseWriter, r *http.Request) {
	id, err := agentIDFromPath(r, reputationPrefix)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	limit, cursor, err := reputationQuery(r)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body, err := a.svc.ReputationPage(r.Context(), id, limit, cursor)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	edge.WriteJSON(w, http.StatusOK, body)
}
