package discovery

import (
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"strings"
)

// The docs viewer is a small handwritten page (HTML, vanilla JavaScript and CSS):
// third-party OpenAPI viewers are megabytes, which every cold start of the wellknown function
// would pay for. Its assets are embedded in the binary and inlined into one page, so /docs is a
// single response that needs nothing from any other host.
var (
	//go:embed viewer/index.html
	viewerHTML string
	//go:embed viewer/viewer.js
	viewerJS string
	//go:embed viewer/viewer.css
	viewerCSS string
)

// docsCSP lets the page run exactly its own inline script and style (by hash) and fetch only from
// its own origin: no asset can come from, and no request can go to, anywhere else (no CDN, no
// telemetry), and nothing can frame it.
var docsCSP = "default-src 'none'; script-src '" + cspHash(viewerJS) + "'; style-src '" + cspHash(viewerCSS) +
	"'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// cspHash is the CSP source expression of an inline element's exact text.
func cspHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256-" + base64.StdEncoding.EncodeToString(sum[:])
}

// docsPage is the viewer with its script and style inlined.
func docsPage() []byte {
	page := strings.Replace(viewerHTML, "{{STYLE}}", viewerCSS, 1)
	page = strings.Replace(page, "{{SCRIPT}}", viewerJS, 1)
	return []byte(page)
}
