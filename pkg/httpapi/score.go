package httpapi

import (
	"net/http"
	"net/url"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
	"github.com/agent-output-verifier/verifier/pkg/x402"
)

// MountScore adds GET /score/{agent_id} to rt.
func MountScore(rt *edge.Router, svc *service.Service) {
	rt.Handle(http.MethodGet, scorePrefix+"{agent_id}", api{svc}.handleScore)
}

// handleScore is GET /score/{agent_id}: a free signed no_data answer for unknown and test- ids
// (and every answer of a deployment without a payee); otherwise PriceScore through x402, with no
// free allowance. Nothing is settled unless the signed score was built.
func (a api) handleScore(w http.ResponseWriter, r *http.Request) {
	id, err := agentIDFromPath(r, scorePrefix)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	header := r.Header.Get(x402.HeaderPaymentSignature)
	if r.Method == http.MethodHead && header != "" {
		// HEAD answers no document, so there is nothing to pay for.
		a.fail(w, r, apperr.Field(x402.HeaderPaymentSignature, "is not taken with HEAD, which answers no document", "Send the payment with GET."))
		return
	}
	o := a.svc.Score(r.Context(), service.ScoreCall{
		AgentID: id, Payment: payment(r),
		Resource: a.svc.BaseURL() + scorePrefix + url.PathEscape(id), Description: service.ScoreDescription,
		Extensions: scoreExtensions(), Route: r.URL.Path,
	})
	a.render(w, r, o, false)
}
