// The official MCP TypeScript SDK client against a Conclave tool server
// that a Go test started (mcp/node_test.go). Environment:
//   CONCLAVE_MCP_URL        the tool endpoint, {base_url}/mcp
//   CONCLAVE_KEY            a live API key with a balance
//   CONCLAVE_SLOW_QUESTIONS two JSON-encoded questions whose deliberations
//                           last several seconds, progress arriving all along
//   CONCLAVE_TIMEOUT_MS     a request timeout shorter than those deliberations
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { EmptyResultSchema, ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.env.CONCLAVE_MCP_URL);
const key = process.env.CONCLAVE_KEY;
const [slowA, slowB] = JSON.parse(process.env.CONCLAVE_SLOW_QUESTIONS);
const timeout = Number(process.env.CONCLAVE_TIMEOUT_MS);
const question = 'Should a five-person team adopt trunk-based development, or keep long-lived feature branches?';

async function connect(apiKey) {
  const headers = apiKey ? { Authorization: 'Bearer ' + apiKey } : {};
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers } });
  const client = new Client({ name: 'conclave-compat', version: '1.0.0' });
  await client.connect(transport);
  return client;
}

function textJSON(result) {
  assert.equal(result.content.length, 1);
  assert.equal(result.content[0].type, 'text');
  return JSON.parse(result.content[0].text);
}

test('lists the tools with titles and annotations', async () => {
  const client = await connect(key);
  try {
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['deliberate', 'estimate', 'list_modes', 'get_receipt', 'run_test', 'certify_mode', 'list_engines', 'validate_mode', 'ask_genie', 'approve_quote', 'genie_propose_mode', 'save_mode', 'list_mode']);
    for (const t of tools) {
      assert.ok(t.title, t.name);
      assert.equal(typeof t.annotations.readOnlyHint, 'boolean', t.name);
      assert.equal(t.inputSchema.type, 'object', t.name);
    }
    assert.equal(client.getServerVersion().name, 'conclave');
  } finally {
    await client.close();
  }
});

test('calls tools with output schemas and gets matching structured content', async () => {
  const client = await connect(key);
  try {
    await client.listTools(); // the client validates results against the listed output schemas
    const engines = await client.callTool({ name: 'list_engines', arguments: {} });
    assert.equal(engines.isError, undefined);
    assert.deepEqual(textJSON(engines), engines.structuredContent);
    assert.ok(engines.structuredContent.engines.length > 0);
    const modes = await client.callTool({ name: 'list_modes', arguments: {} });
    assert.ok(modes.structuredContent.data.some((m) => m.id === 'conclave-standard'));
    const est = await client.callTool({
      name: 'estimate',
      arguments: { model: 'conclave-standard', messages: [{ role: 'user', content: question }] },
    });
    assert.equal(est.structuredContent.mode, 'conclave-standard');
  } finally {
    await client.close();
  }
});

test('a failed tool is a result with isError and the REST code', async () => {
  const client = await connect(key);
  try {
    const res = await client.callTool({ name: 'deliberate', arguments: { messages: [{ role: 'user', content: question }] } });
    assert.equal(res.isError, true);
    const body = textJSON(res);
    assert.equal(body.http_status, 400);
    assert.equal(body.error.code, 'invalid_messages');
    assert.equal(body.error.param, 'model');
    assert.match(body.conclave.request_id, /^req_/);
  } finally {
    await client.close();
  }
});

test('an unknown tool is -32602 and an unknown method -32601', async () => {
  const client = await connect(key);
  try {
    await assert.rejects(client.callTool({ name: 'no_such_tool', arguments: {} }),
      (e) => e instanceof McpError && e.code === ErrorCode.InvalidParams);
    await assert.rejects(client.request({ method: 'resources/list', params: {} }, EmptyResultSchema),
      (e) => e instanceof McpError && e.code === ErrorCode.MethodNotFound);
  } finally {
    await client.close();
  }
});

test('a missing or wrong key is refused with 401', async () => {
  for (const bad of ['', 'ccl_live_' + 'A'.repeat(43)]) {
    await assert.rejects(connect(bad), (e) => e instanceof StreamableHTTPError && e.code === 401 && /-32001/.test(e.message));
  }
});

test('a raw batch gets one answer per request, by id', async () => {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer ' + key } } });
  const answers = [];
  transport.onmessage = (m) => answers.push(m);
  await transport.start();
  const calls = Array.from({ length: 10 }, (_, i) => ({
    jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'list_engines', arguments: {} },
  }));
  await transport.send(calls);
  await transport.close();
  assert.equal(answers.length, 10);
  const byID = new Map(answers.map((a) => [a.id, a]));
  for (let i = 1; i <= 8; i++) assert.ok(byID.get(i).result, `call ${i} ran`);
  for (const i of [9, 10]) assert.equal(byID.get(i).error.data.error.code, 'batch_too_large');
});

test('a deliberation longer than the request timeout completes while progress arrives', async () => {
  const client = await connect(key);
  try {
    await client.listTools();
    const steps = [];
    const started = Date.now();
    const res = await client.callTool(
      { name: 'deliberate', arguments: { model: 'conclave-standard', messages: [{ role: 'user', content: slowA }] } },
      undefined,
      { timeout, resetTimeoutOnProgress: true, onprogress: (p) => steps.push(p) },
    );
    const elapsed = Date.now() - started;
    assert.ok(elapsed > timeout, `the deliberation took ${elapsed} ms, longer than the ${timeout} ms timeout`);
    assert.equal(res.isError, undefined);
    assert.ok(res.structuredContent.panel.billed_usd > 0);
    assert.ok(steps.length >= 4, `progress arrived: ${JSON.stringify(steps)}`);
    for (let i = 1; i < steps.length; i++) assert.ok(steps[i].progress > steps[i - 1].progress);
    assert.match(steps.map((s) => s.message).join('\n'), /Synthesising the answer/);

    // Without resetTimeoutOnProgress the same kind of call times out.
    await assert.rejects(
      client.callTool(
        { name: 'deliberate', arguments: { model: 'conclave-standard', messages: [{ role: 'user', content: slowB }] } },
        undefined,
        { timeout, onprogress: () => {} },
      ),
      (e) => e instanceof McpError && e.code === ErrorCode.RequestTimeout,
    );
  } finally {
    await client.close();
  }
});
