package service_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// transportWords are texts only a transport may write (STYLE.md rule 17): its paths, URLs, tool
// names, header names and the places its callers put a payment.
var transportWords = []string{
	"/mcp", "mcp://", "streamable-http", "verify_schema", "get_verification_record", "get_receipt",
	"PAYMENT-", "X-PAYMENT", "_meta", "x402/payment", "Free-Allowance", "X-Forwarded-For", "Retry-After",
	"Content-Type", "Cache-Control", "http://", "https://", "REST", "MCP",
}

// The application writes no transport's words: no string literal of pkg/service's code names a
// route, tool, header or URL; REST and MCP render its codes and typed values in their own.
func TestNoTransportWords(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			checked++
			text, err := strconv.Unquote(lit.Value)
			if err != nil {
				t.Fatalf("%s: %v", fset.Position(lit.Pos()), err)
			}
			for _, w := range transportWords {
				if strings.Contains(text, w) {
					t.Errorf("%s: %q names %q, a transport's word", fset.Position(lit.Pos()), shorten(text), w)
				}
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no string literals read")
	}
}

func shorten(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
