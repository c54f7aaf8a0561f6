// Package discovery serves the documents that let agents and people find, understand and trust
// the service (SPEC §11): the OpenAPI 3.1 description, the docs viewer, llms.txt, llms-full.txt,
// the RFC 9727 API catalog, the agent card, /health, the index and the x402 manifest, each
// generated from the code's own sources so that none can drift from the service.
package discovery

import (
	"net/http"
	"sync"

	"github.com/agent-output-verifier/verifier/pkg/edge"
	"github.com/agent-output-verifier/verifier/pkg/service"
)

// Route paths of the documents this package serves.
const (
	PathOpenAPI    = "/openapi.json"
	PathDocs       = "/docs"
	PathLLMs       = "/llms.txt"
	PathLLMsFull   = "/llms-full.txt"
	PathAPICatalog = "/.well-known/api-catalog"
)

// Cache lifetimes. The documents change only with a deployment (new code or configuration), so
// clients may keep them a while; the ETag makes a revalidation cheap.
const (
	documentMaxAge = "max-age=300"
)

// Documents builds and serves the discovery documents of one service. They depend only on the
// code and the configuration, so each is built once, on first use (never at cold start: a Lambda
// that answers /health should not pay for running the worked examples).
//
// Each is generated from the route table, the request and response schemas, the error codes and
// the live configuration; the worked examples are the engine's answers, generated ahead into
// examples.json and held to the engine by a test (see examples.go), so the function that serves
// them does not link the engine. The package embeds the docs viewer's assets, so only the
// binaries that serve these routes import it: functions/wellknown and the local server. It reads
// the service (pkg/service) and shares the HTTP edge (pkg/edge) with REST and MCP, and imports
// neither transport.
type Documents struct {
	svc *service.Service

	once  sync.Once
	built *built
	err   error
}

// built holds every document's bytes.
type built struct {
	openapi  []byte
	llms     []byte
	llmsFull []byte
	catalog  []byte
	docsPage []byte
	examples *Examples
}

// New returns the documents of svc. Nothing is built until a document is first asked for.
func New(svc *service.Service) *Documents { return &Documents{svc: svc} }

// Mount adds every discovery route to rt: the index, /health, the agent card and the x402
// manifest (MountWellKnown), and the documents.
func (d *Documents) Mount(rt *edge.Router) {
	MountWellKnown(rt, d.svc)
	rt.Handle(http.MethodGet, PathOpenAPI, d.handleOpenAPI)
	rt.Handle(http.MethodGet, PathDocs, d.handleDocs)
	rt.Handle(http.MethodGet, PathLLMs, d.handleLLMs)
	rt.Handle(http.MethodGet, PathLLMsFull, d.handleLLMsFull)
	rt.Handle(http.MethodGet, PathAPICatalog, d.handleAPICatalog)
}

// Handler serves the wellknown function's routes: every route Mount adds.
func Handler(svc *service.Service) *edge.Router {
	rt := edge.NewRouter(svc)
	New(svc).Mount(rt)
	return rt
}

// get builds the documents on first use. A failure is kept and answered as a 500 each time: the
// inputs are fixed for the life of the process, so building again would fail again.
func (d *Documents) get() (*built, error) {
	d.once.Do(func() {
		d.built, d.err = build(d.svc)
		if d.err != nil {
			d.svc.Log().Error("discovery documents could not be built", "err", d.err.Error())
		}
	})
	return d.built, d.err
}

func build(svc *service.Service) (*built, error) {
	ex, err := loadExamples(svc.BaseURL())
	if err != nil {
		return nil, err
	}
	b := &built{examples: ex}
	if b.openapi, err = openAPIDocument(svc, ex); err != nil {
		return nil, err
	}
	b.llms = llmsText(svc, nil)
	b.llmsFull = llmsText(svc, ex)
	if b.catalog, err = apiCatalog(svc.BaseURL()); err != nil {
		return nil, err
	}
	b.docsPage = docsPage()
	return b, nil
}

// serve answers with one built document.
func (d *Documents) serve(w http.ResponseWriter, r *http.Request, contentType string, pick func(*built) []byte) {
	b, err := d.get()
	if err != nil {
		edge.Fail(w, r, d.svc, err)
		return
	}
	edge.WriteDocument(w, r, contentType, documentMaxAge, pick(b))
}

func (d *Documents) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	d.serve(w, r, "application/json", func(b *built) []byte { return b.openapi })
}

func (d *Documents) handleLLMs(w http.ResponseWriter, r *http.Request) {
	d.serve(w, r, "text/plain; charset=utf-8", func(b *built) []byte { return b.llms })
}

func (d *Documents) handleLLMsFull(w http.ResponseWriter, r *http.Request) {
	d.serve(w, r, "text/plain; charset=utf-8", func(b *built) []byte { return b.llmsFull })
}

// handleDocs serves the viewer under a Content-Security-Policy that lets the page run only its
// own inline script and style and talk only to this origin: nothing is loaded from, or sent to,
// anywhere else.
func (d *Documents) handleDocs(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", docsCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	d.serve(w, r, "text/html; charset=utf-8", func(b *built) []byte { return b.docsPage })
}

// handleAPICatalog serves the RFC 9727 catalog. Every answer, HEAD included, carries the Link
// header that names the catalog (RFC 9727 §2).
func (d *Documents) handleAPICatalog(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Link", "<"+d.svc.BaseURL()+PathAPICatalog+`>; rel="api-catalog"`)
	d.serve(w, r, linksetMediaType, func(b *built) []byte { return b.catalog })
}
