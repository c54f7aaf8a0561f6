package httpapi

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"

	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// The receipt log's routes (SPEC §15), all free.
const (
	checkpointPath      = "/log/checkpoint"
	tilePrefix          = "/log/tile/"
	verificationsPrefix = "/verifications/"
	attestationSuffix   = "/attestation"
)

// Cache-Control of the log's answers: a full tile never changes; the checkpoint and a record do.
const (
	immutable = "public, max-age=31536000, immutable"
	noCache   = "no-cache"
)

// MountLog adds the receipt log's routes to rt: GET /log/checkpoint, GET /log/tile/…, GET
// /verifications/{verification_id} and GET /verifications/{verification_id}/attestation.
func MountLog(rt *edge.Router, svc *service.Service) {
	a := api{svc}
	rt.Handle(http.MethodGet, checkpointPath, a.handleCheckpoint)
	rt.Handle(http.MethodGet, tilePrefix+"{height}/{level}/{n}", a.handleTile)
	rt.Handle(http.MethodGet, verificationsPrefix+"{verification_id}", a.handleVerification)
	rt.Handle(http.MethodGet, verificationsPrefix+"{verification_id}"+attestationSuffix, a.handleVerification)
}

func (a api) handleCheckpoint(w http.ResponseWriter, r *http.Request) {
	cp, err := a.svc.LogCheckpoint(r.Context())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", noCache)
	w.WriteHeader(http.StatusOK)
	w.Write(cp)
}

func (a api) handleTile(w http.ResponseWriter, r *http.Request) {
	path := "tile/" + strings.TrimPrefix(r.URL.Path, tilePrefix)
	data, full, err := a.svc.LogTile(r.Context(), path)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	if full {
		w.Header().Set("Cache-Control", immutable)
	} else {
		// A partial tile's bytes do not change either, but the tree outgrows it within seconds:
		// clients should ask again for the wider one rather than keep it.
		w.Header().Set("Cache-Control", noCache)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(data)
}

func (a api) handleVerification(w http.ResponseWriter, r *http.Request) {
	raw := strings.TrimPrefix(r.URL.EscapedPath(), verificationsPrefix)
	if before, ok := strings.CutSuffix(raw, attestationSuffix); ok {
		a.handleAttestation(w, r, before)
		return
	}
	id, err := url.PathUnescape(raw)
	if err != nil || strings.Contains(raw, "/") {
		id = "" // refused below as no verification id
	}
	rec, err := a.svc.VerificationRecord(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	body, err := json.Marshal(rec)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", noCache)
	if rec.Pending() {
		w.Header().Set("Retry-After", "1")
	}
	edge.WriteJSON(w, http.StatusOK, body)
}

// handleAttestation answers GET /verifications/{verification_id}/attestation (SPEC §16): the DSSE
// envelope of the record's in-toto statement. It is not cached by shared caches: the record, and
// so the attestation, goes when it expires, and a key rotation signs it anew.
func (a api) handleAttestation(w http.ResponseWriter, r *http.Request, raw string) {
	id, err := url.PathUnescape(raw)
	if err != nil || strings.Contains(raw, "/") {
		id = "" // refused below as no verification id
	}
	env, err := a.svc.Attestation(r.Context(), id)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	// application/json: a DSSE envelope is JSON, and every client and the OpenAPI validator read
	// it as such (DSSE's application/vnd.dsse.envelope.v1+json would tell them no more).
	w.Header().Set("Cache-Control", noCache)
	edge.WriteJSON(w, http.StatusOK, env)
}
