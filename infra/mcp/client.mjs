// client.mjs drives an MCP server with the official TypeScript SDK's Client over Streamable HTTP,
// the way an MCP host would: connect (initialize), list the tools (which makes the client check
// every later structuredContent against the tool's outputSchema), then call tools in order.
//
//   node client.mjs --url http://127.0.0.1:8080/mcp --plan plan.json
//
// plan.json: {"calls": [{"name": "verify_schema", "arguments": {...}, "_meta": {...}}, ...]}
// ("arguments" and "_meta" optional). It prints one JSON line:
//   {"serverInfo", "instructions", "tools", "results": [{"sent", "result"} | {"sent", "error"}]}
// where "sent" is the exact JSON of the arguments the client sent (JSON.stringify), so that the
// caller can send the same bytes to the REST API, and "error" is what the client threw (an
// outputSchema mismatch, a protocol error). Nothing but the given URL is contacted.
import { readFileSync } from 'node:fs';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

function arg(name) {
  const i = process.argv.indexOf(name);
  if (i < 0 || i + 1 >= process.argv.length) {
    console.error(`usage: node client.mjs --url URL --plan FILE (missing ${name})`);
    process.exit(2);
  }
  return process.argv[i + 1];
}

const url = new URL(arg('--url'));
const plan = JSON.parse(readFileSync(arg('--plan'), 'utf8'));

const client = new Client({ name: 'agent-output-verifier-tests', version: '1.0.0' });
const transport = new StreamableHTTPClientTransport(url);
await client.connect(transport);
const { tools } = await client.listTools();

const results = [];
for (const call of plan.calls ?? []) {
  const params = { name: call.name };
  if (call.arguments !== undefined) params.arguments = call.arguments;
  if (call._meta !== undefined) params._meta = call._meta;
  const sent = call.arguments === undefined ? null : JSON.stringify(call.arguments);
  try {
    results.push({ sent, result: await client.callTool(params) });
  } catch (e) {
    results.push({ sent, error: String(e?.message ?? e) });
  }
}
await client.close();

process.stdout.write(JSON.stringify({
  serverInfo: client.getServerVersion(),
  instructions: client.getInstructions(),
  tools,
  results,
}) + '\n');
