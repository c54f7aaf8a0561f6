package x402

import (
	"context"
	"fmt"
	"maps"
	"strings"
)

// BazaarExtension builds extensions.bazaar for a 402 answer (SPEC §8.2, x402's bazaar
// extension), so that x402 catalogues can list the route and tell agents how to call it. example
// is a request that works (the body of a POST/PUT/PATCH, the query parameters of a
// GET/HEAD/DELETE); inputSchema is the JSON Schema of that body or query. As the extension
// requires, "schema" is the JSON Schema of "info", with inputSchema in the place of the body.
func BazaarExtension(method string, example any, inputSchema any) map[string]any {
	return BazaarExtensionWithOutput(method, example, inputSchema, nil)
}

// BazaarExtensionWithOutput is BazaarExtension with an example answer, which catalogues show so
// that a buyer knows what it pays for. A nil outputExample leaves the output out.
func BazaarExtensionWithOutput(method string, example, inputSchema, outputExample any) map[string]any {
	method = strings.ToUpper(method)
	input := map[string]any{"type": "http", "method": method}
	props := map[string]any{"type": map[string]any{"type": "string", "const": "http"}}
	var required []any
	switch method {
	case "POST", "PUT", "PATCH":
		if example == nil {
			example = map[string]any{}
		}
		if inputSchema == nil {
			inputSchema = map[string]any{"type": "object"}
		}
		input["bodyType"] = "json"
		input["body"] = example
		props["method"] = map[string]any{"type": "string", "enum": []any{"POST", "PUT", "PATCH"}}
		props["bodyType"] = map[string]any{"type": "string", "enum": []any{"json", "form-data", "text"}}
		props["body"] = inputSchema
		required = []any{"type", "method", "bodyType", "body"}
	default:
		if example == nil {
			example = map[string]any{}
		}
		query := map[string]any{}
		if m, ok := inputSchema.(map[string]any); ok {
			query = maps.Clone(m)
		}
		query["type"] = "object"
		input["queryParams"] = example
		props["method"] = map[string]any{"type": "string", "enum": []any{"GET", "HEAD", "DELETE"}}
		props["queryParams"] = query
		required = []any{"type", "method"}
	}
	info := map[string]any{"input": input}
	schemaProps := map[string]any{
		"input": map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false},
	}
	if outputExample != nil {
		info["output"] = map[string]any{"type": "json", "example": outputExample}
		schemaProps["output"] = map[string]any{
			"type":       "object",
			"properties": map[string]any{"type": map[string]any{"type": "string"}, "example": map[string]any{}},
			"required":   []any{"type"},
		}
	}
	return map[string]any{
		"info": info,
		"schema": map[string]any{
			"$schema":    "https://json-schema.org/draft/2020-12/schema",
			"type":       "object",
			"properties": schemaProps,
			"required":   []any{"input"},
		},
	}
}

// ManifestItem is one paid route of /.well-known/x402: its absolute URL, HTTP method, what it
// does, and its price in USD.
type ManifestItem struct {
	Resource    string
	Method      string
	Description string
	PriceUSD    string
	// Extensions are the x402 extensions the route's 402 answers declare that a client may use
	// (payment-identifier), nil for none.
	Extensions map[string]any
}

// Manifest builds /.well-known/x402 (SPEC §8.5) from the same Requirements as the 402 answers,
// so the document always shows the live prices, networks, assets and payees. freeAllowance and
// instructions are passed through (nil and "" are left out).
func (p *Payments) Manifest(ctx context.Context, items []ManifestItem, freeAllowance map[string]any, instructions string) (map[string]any, error) {
	resources := []string{}
	seen := map[string]bool{}
	entries := make([]map[string]any, 0, len(items))
	for _, it := range items {
		accepts, err := p.Requirements(ctx, it.PriceUSD)
		if err != nil {
			return nil, fmt.Errorf("x402 manifest: %s %s: %w", it.Method, it.Resource, err)
		}
		if !seen[it.Resource] {
			seen[it.Resource] = true
			resources = append(resources, it.Resource)
		}
		entry := map[string]any{
			"resource":    it.Resource,
			"method":      strings.ToUpper(it.Method),
			"description": it.Description,
			"accepts":     accepts,
		}
		if it.Extensions != nil {
			entry["extensions"] = it.Extensions
		}
		entries = append(entries, entry)
	}
	m := map[string]any{
		"version":     1,
		"x402Version": Version,
		"resources":   resources,
		"items":       entries,
	}
	if freeAllowance != nil {
		m["free_allowance"] = freeAllowance
	}
	if instructions != "" {
		m["instructions"] = instructions
	}
	return m, nil
}
