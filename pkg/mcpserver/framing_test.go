package mcpserver

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agent-output-verifier/verifier/pkg/wire"
)

// A message with a member name repeated anywhere (the envelope, params, arguments, _meta, deep
// inside a value, spelled with an escape), a message followed by more, or a batch without an
// MCP-Protocol-Version header is refused as an unreadable message before any tool runs: the one
// free call the allowance has is still there afterwards. A batch that names a version with
// batches is served, and a duplicate in any of its members refuses the whole batch.
func TestFramingRefused(t *testing.T) {
	e := newEnv(t, withLimit(1))
	args, _ := json.Marshal(wire.ExampleRequest())
	a := string(args)
	inner := a[1 : len(a)-1] // the arguments' members, to repeat one of them
	call := func(params string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + params + `}`
	}
	verifyCall := call(`{"name":"verify_schema","arguments":` + a + `}`)
	refused := map[string]string{
		"tool name":         call(`{"name":"verify_schema","name":"get_receipt","arguments":` + a + `}`),
		"escaped tool name": call(`{"name":"get_receipt","n\u0061me":"verify_schema","arguments":` + a + `}`),
		"method":            `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"verify_schema","arguments":` + a + `}}`,
		"id":                `{"jsonrpc":"2.0","id":1,"id":2,"method":"tools/call","params":{"name":"verify_schema","arguments":` + a + `}}`,
		"jsonrpc":           `{"jsonrpc":"1.0","jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"verify_schema","arguments":` + a + `}}`,
		"params":            `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_receipt","arguments":{}},"params":{"name":"verify_schema","arguments":` + a + `}}`,
		"arguments":         call(`{"name":"verify_schema","arguments":{` + inner + `,` + inner + `}}`),
		"argument member":   call(`{"name":"verify_schema","arguments":{` + inner + `,"output":{"a":1,"a":2}}}`),
		"nested in array":   call(`{"name":"verify_schema","arguments":{"x":[1,[{"k":{"z":1,"y":2,"z":3}}]],` + inner + `}}`),
		"_meta":             call(`{"name":"verify_schema","arguments":` + a + `,"_meta":{"progressToken":1,"progressToken":2}}`),
		"_meta twice":       call(`{"_meta":{},"name":"verify_schema","arguments":` + a + `,"_meta":{}}`),
		"trailing value":    verifyCall + ` {}`,
		"batch, no header":  `[` + verifyCall + `]`,
		"batch, spaced":     " \r\n\t[" + verifyCall + `]`,
	}
	for name, body := range refused {
		t.Run(name, func(t *testing.T) {
			for _, accept := range []string{"application/json", "text/event-stream"} {
				resp, b := sendMCP(t, e.url+Path, []byte(body), "Accept", accept)
				var env struct {
					Code   string `json:"code"`
					Status int    `json:"status"`
				}
				json.Unmarshal(b, &env)
				if resp.StatusCode != 400 || env.Code != "invalid_request" || env.Status != 400 || resp.Header.Get("Content-Type") != "application/json" {
					t.Errorf("Accept %s: %d %s %.300s", accept, resp.StatusCode, resp.Header.Get("Content-Type"), b)
				}
				if strings.Contains(string(b), "get_receipt") || strings.Contains(string(b), "progressToken") {
					t.Errorf("the refusal echoes the message: %s", b)
				}
			}
		})
	}
	// With a version that has batches, a duplicate in any member refuses the whole batch.
	for _, body := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},` + call(`{"name":"verify_schema","name":"get_receipt","arguments":`+a+`}`) + `]`,
		`[` + call(`{"name":"verify_schema","arguments":{`+inner+`,`+inner+`}}`) + `,{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
	} {
		if resp, b := sendMCP(t, e.url+Path, []byte(body), "MCP-Protocol-Version", "2025-03-26"); resp.StatusCode != 400 || !strings.Contains(string(b), `"invalid_request"`) {
			t.Errorf("batch with a duplicate: %d %.300s", resp.StatusCode, b)
		}
	}
	if resp, b := sendMCP(t, e.url+Path, []byte(`[{"jsonrpc":"2.0","id":1,"method":"tools/list"}]`), "MCP-Protocol-Version", "2025-03-26"); resp.StatusCode != 200 || !strings.Contains(string(b), ToolVerify) {
		t.Errorf("batch with a version that has batches: %d %.300s", resp.StatusCode, b)
	}
	// Nothing above ran a tool: the one free call is still there, and then spent.
	if r := e.call(t, ToolVerify, args, nil); r.IsError {
		t.Fatalf("the free call after the refusals: %s", r.StructuredContent)
	}
	if r := e.call(t, ToolVerify, args, nil); !r.IsError || r.sc(t)["code"] != "free_trial_exhausted" {
		t.Errorf("second call: %s", r.StructuredContent)
	}
}
