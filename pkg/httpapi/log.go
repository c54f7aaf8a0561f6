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
)

// Cache-Control of the log's answers: a full tile never changes; the checkpoint and a record do.
const (
	immutable = "public, max-age=31536000, immutable"
	noCache   = "no-cache"
)

// MountLog adds the receipt log's routes to rt: GET /log/checkpoint, GET /log/tile/… and GET
// /verifications/{verification_id}.
func MountLog(rt *edge.Router, svc *service.Service) {
	a := api{svc}
	rt.Handle(http.MethodGet, checkpointPath, a.handleCheckpoint)
	rt.Handle(http.MethodGet, tilePrefix, a.handleTile)
	rt.Handle(http.MethodGet, verificationsPrefix, a.handleVerification)
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
