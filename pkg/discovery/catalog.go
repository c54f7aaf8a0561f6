package discovery

import "encoding/json"

// linksetMediaType is the API catalog's content type: a linkset in JSON (RFC 9264) with the
// profile RFC 9727 §4.2 registers for API catalogs.
const linksetMediaType = `application/linkset+json; profile="https://www.rfc-editor.org/info/rfc9727"`

// link is one target of a linkset relation (RFC 9264 §4.2.3).
type link struct {
	Href  string `json:"href"`
	Type  string `json:"type,omitempty"`
	Title string `json:"title,omitempty"`
}

// apiCatalog is /.well-known/api-catalog (RFC 9727): one linkset context, the API at the base
// URL, with its machine-readable description (service-desc), its documentation (service-doc)
// and its status endpoint (status, RFC 8631).
func apiCatalog(baseURL string) ([]byte, error) {
	doc := map[string]any{
		"linkset": []any{obj(
			"anchor", baseURL,
			"service-desc", []link{{Href: baseURL + PathOpenAPI, Type: "application/vnd.oai.openapi+json;version=3.1", Title: "OpenAPI 3.1 description"}},
			"service-doc", []link{
				{Href: baseURL + PathDocs, Type: "text/html", Title: "Interactive API documentation"},
				{Href: baseURL + PathLLMs, Type: "text/plain", Title: "llms.txt"},
			},
			"status", []link{{Href: baseURL + "/health", Type: "application/json", Title: "Liveness, version and key version"}},
		)},
	}
	return json.Marshal(doc)
}
