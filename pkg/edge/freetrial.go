package edge

import (
	"fmt"
	"time"

	"github.com/agent-output-verifier/verifier/pkg/apperr"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// FreeTrial is the free_trial document of SPEC §8.2 that a verification's refusal carries, in
// REST's body and in MCP's _meta alike: ft in the words both transports share, pointing a caller
// at the free MCP tool of the deployment at baseURL. nil for nil.
func FreeTrial(ft *service.FreeTrial, baseURL string) map[string]any {
	if ft == nil {
		return nil
	}
	resets := ft.Resets.Format(time.RFC3339)
	doc := map[string]any{
		"available":                ft.Remaining > 0,
		"via":                      "mcp+rest",
		"transport":                "streamable-http",
		"url":                      baseURL + "/mcp",
		"tool":                     "verify_schema",
		"calls_per_client_per_day": ft.Limit,
		"remaining_calls_today":    ft.Remaining,
		"resets_at":                resets,
		"client":                   service.ClientRule + "; the same client's REST and MCP verification calls share one allowance",
		"rest_free":                true,
	}
	switch {
	case ft.Remaining > 0:
		doc["message"] = fmt.Sprintf("This client has %d of %d free checks left today (REST and MCP share them); they reset at %s.", ft.Remaining, ft.Limit, resets)
	case ft.FreeOnly:
		// Free-only (SPEC §8.6): nothing can be paid, as the 429 free_trial_exhausted says.
		doc["message"] = fmt.Sprintf("This client's %d free checks for today are used up (REST and MCP share them); they reset at %s. This deployment takes no payments, so calls are refused until then.", ft.Limit, resets)
	default:
		doc["message"] = fmt.Sprintf("This client's %d free checks for today are used up (REST and MCP share them); they reset at %s. Payment applies until then.", ft.Limit, resets)
	}
	if ft.Remaining == 0 {
		doc["code"] = string(apperr.FreeTrialExhausted)
	}
	return doc
}

// Words are one transport's texts for the answers that speak of what its caller sent (the
// service's Prompts): REST speaks of a body and a PAYMENT-SIGNATURE header, MCP of arguments and
// _meta.
type Words struct {
	Probe              string // the discovery probe's PaymentRequired message
	OverFreeSize       string // a free call over FreeMaxBody; %d is the limit
	ScorePaid          string // a priced score asked for without a payment
	PaymentField       string // where a payment came from, for a deployment that takes none
	NoPaymentsFix      string // the fix of that refusal
	UndecodablePayment string // a payment the transport could not decode
}

// Word writes o's prompt, if it has one, in w: the PaymentRequired's message, or the refusal of
// a payment to a deployment that takes none. freeMaxBody is the deployment's free size limit.
func (w *Words) Word(o service.Outcome, freeMaxBody int64) service.Outcome {
	switch o.Prompt {
	case service.PromptProbe:
		o.PaymentRequired.Error = w.Probe
	case service.PromptOverFreeSize:
		o.PaymentRequired.Error = fmt.Sprintf(w.OverFreeSize, freeMaxBody)
	case service.PromptScorePaid:
		o.PaymentRequired.Error = w.ScorePaid
	case service.PromptUndecodablePayment:
		o.PaymentRequired.Error = w.UndecodablePayment
	case service.PromptNoPayments:
		o.Err = apperr.Field(w.PaymentField, "was sent to a deployment that takes no payments", w.NoPaymentsFix)
	}
	return o
}
