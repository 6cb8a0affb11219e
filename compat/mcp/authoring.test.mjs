// Mode authoring through the official MCP TypeScript SDK client, against a
// Conclave tool server that a Go test started (mcp/node_test.go), which
// approves the listing as the operator once it is requested. Environment:
//   CONCLAVE_MCP_URL     the tool endpoint, {base_url}/mcp
//   CONCLAVE_AUTHOR_KEY  a live key of the organisation with ticker ACME
//   CONCLAVE_CALLER_KEY  a live key of another organisation, with a balance
//   CONCLAVE_SPEC        a valid mode spec with the ticker PANL
//   CONCLAVE_SPEC_V2     the same mode with other seats
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';

const url = new URL(process.env.CONCLAVE_MCP_URL);
const spec = JSON.parse(process.env.CONCLAVE_SPEC);
const specV2 = JSON.parse(process.env.CONCLAVE_SPEC_V2);
const question = 'Should a five-person team adopt trunk-based development, or keep long-lived feature branches?';

async function connect(apiKey) {
  const transport = new StreamableHTTPClientTransport(url, { requestInit: { headers: { Authorization: 'Bearer ' + apiKey } } });
  const client = new Client({ name: 'conclave-compat', version: '1.0.0' });
  await client.connect(transport);
  await client.listTools(); // the client validates results against the listed output schemas
  return client;
}

const author = await connect(process.env.CONCLAVE_AUTHOR_KEY);
const caller = await connect(process.env.CONCLAVE_CALLER_KEY);
after(async () => {
  await author.close();
  await caller.close();
});

// ok is a successful call's structured content, which its text repeats.
async function ok(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError, undefined, res.content[0].text);
  assert.deepEqual(JSON.parse(res.content[0].text), res.structuredContent);
  return res.structuredContent;
}

// refused is a failed self-answered call's body: {http_status, error: {code, message}, conclave}.
async function refused(client, name, args) {
  const res = await client.callTool({ name, arguments: args });
  assert.equal(res.isError, true);
  assert.equal(res.structuredContent, undefined);
  const body = JSON.parse(res.content[0].text);
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message']);
  assert.equal(typeof body.conclave, 'object');
  return body;
}

let v1;

test('the author validates, saves and releases a mode, then asks for its listing', async () => {
  const checked = await ok(author, 'validate_mode', { spec });
  assert.equal(checked.ok, true);
  assert.deepEqual(checked.refusals, []);
  assert.equal(typeof checked.mode_config_hash, 'string');
  assert.ok(checked.floor_usd > 0 && checked.recommended_usd >= checked.floor_usd);

  const saved = await ok(author, 'save_mode', { spec, release: true });
  assert.equal(saved.mode.id, 'acme-panl');
  assert.equal(saved.mode.ticker, 'ACME:PANL');
  assert.equal(saved.mode.latest_version, 1);
  assert.equal(saved.version.version, 1);
  assert.equal(saved.version.mode_config_hash, checked.mode_config_hash);
  v1 = saved.version;

  // The operator (the Go side of this test) approves as soon as the
  // listing is pending, so what a second list_mode meets is a race; the Go
  // tests check its refusal while pending (conflict).
  const listed = await ok(author, 'list_mode', { mode: 'ACME:PANL' });
  assert.equal(listed.mode.listing.state, 'pending');
});

test('a spec that fails validation saves nothing and lists every refusal', async () => {
  const body = await refused(author, 'save_mode', { spec: { ...spec, ticker: 'BADX', max_rounds: 9 } });
  assert.equal(body.http_status, 422);
  assert.equal(body.error.code, 'mode_invalid');
  assert.ok(body.conclave.refusals.some((r) => r.code === 'invalid_value' && r.path === 'max_rounds'), JSON.stringify(body));
  const missing = await refused(author, 'save_mode', { mode_id: 'acme-badx', release: true });
  assert.equal(missing.error.code, 'mode_not_found');
  assert.equal(missing.http_status, 404);
});

test('a call without its required arguments is -32602', async () => {
  for (const [name, args] of [['validate_mode', {}], ['save_mode', { release: true }], ['list_mode', { version: 1 }]]) {
    await assert.rejects(author.callTool({ name, arguments: args }), (e) => e instanceof McpError && e.code === ErrorCode.InvalidParams);
  }
});

test('once the operator approves it, another organisation lists the mode and is billed for it', async () => {
  let entry;
  for (const deadline = Date.now() + 60_000; !entry && Date.now() < deadline; await sleep(100)) {
    entry = (await ok(caller, 'list_modes', {})).data.find((m) => m.id === 'acme-panl');
  }
  assert.ok(entry, 'the approved mode was listed to the other organisation');
  assert.equal(entry.conclave.ticker, 'ACME:PANL');
  assert.equal(entry.conclave.mode_config_hash, v1.mode_config_hash);

  const forbidden = await refused(caller, 'save_mode', { spec, mode_id: 'acme-panl' });
  assert.equal(forbidden.error.code, 'forbidden');
  assert.equal(forbidden.http_status, 403);

  const comp = await ok(caller, 'deliberate', { model: 'acme-panl', messages: [{ role: 'user', content: question }] });
  assert.equal(comp.object, 'chat.completion');
  assert.ok(comp.panel.billed_usd > 0);
});

test('a second release with other seats has another mode_config_hash', async () => {
  const saved = await ok(author, 'save_mode', { spec: specV2, mode_id: 'acme-panl', release: true });
  assert.equal(saved.version.version, 2);
  assert.notEqual(saved.version.mode_config_hash, v1.mode_config_hash);
  assert.equal(saved.mode.published_version, 1, 'the marketplace keeps the approved version');
});

test('the author tests its mode: a quote, a launch, its retry and a poll; a certification is quoted; another organisation may test it but not certify it', async () => {
  const args = { model: 'acme-panl', questions: { easy: 1 } };
  const quote = await ok(author, 'run_test', { ...args, dry_run: true });
  assert.equal(quote.dry_run, true);
  assert.equal(quote.total_questions, 1);
  assert.equal(quote.batch_id, undefined);
  assert.ok(quote.total_cost_usd > 0);

  const launched = await ok(author, 'run_test', args);
  assert.equal(launched.dry_run, false);
  assert.equal(launched.billed_usd, quote.total_cost_usd);
  const retry = await author.callTool({ name: 'run_test', arguments: args });
  assert.deepEqual(retry.structuredContent, launched, 'a retry answers the same batch');
  assert.equal(retry._meta['conclave/idempotent-replayed'], true);

  const polled = await ok(author, 'run_test', { batch_id: launched.batch_id });
  assert.equal(polled.batch.id, launched.batch_id);
  assert.equal(polled.batch.status, 'queued');

  const certify = await ok(author, 'certify_mode', { model: 'acme-panl', dry_run: true });
  assert.equal(certify.requires_listing, false, 'the listing is approved');
  assert.equal(certify.total_cost_usd, 50);

  // Another organisation may test the listed mode it can call, billed to
  // its balance; certifying it needs the mode to be its own.
  const theirs = await ok(caller, 'run_test', { ...args, dry_run: true });
  assert.equal(theirs.dry_run, true);
  const res = await caller.callTool({ name: 'certify_mode', arguments: { model: 'acme-panl', dry_run: true } });
  assert.equal(res.isError, true);
  const body = JSON.parse(res.content[0].text);
  assert.equal(body.http_status, 403);
  assert.equal(body.error.code, 'mode_not_owned');
  assert.deepEqual(Object.keys(body.error).sort(), ['code', 'message', 'param', 'type']);
  await assert.rejects(author.callTool({ name: 'certify_mode', arguments: {} }),
    (e) => e instanceof McpError && e.code === ErrorCode.InvalidParams);
});
