// The MCP Inspector's CLI against a Conclave tool server that a Go test
// started (mcp/node_test.go). Environment: CONCLAVE_MCP_URL, CONCLAVE_KEY.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const bin = fileURLToPath(new URL('../node_modules/.bin/mcp-inspector', import.meta.url));
const url = process.env.CONCLAVE_MCP_URL;
const key = process.env.CONCLAVE_KEY;

// inspect runs the CLI once and returns its exit code, the last JSON object
// it printed on stdout (a result) and the last on stderr (an error). Its output goes to files rather than pipes:
// the launcher runs the CLI as a child that writes to the descriptors it
// inherits, and a pipe can be read to its end before that child is done.
function inspect(args, apiKey = key) {
  const auth = apiKey ? ['--header', 'Authorization: Bearer ' + apiKey] : [];
  const dir = mkdtempSync(join(tmpdir(), 'inspector-'));
  const outFD = openSync(join(dir, 'stdout'), 'w');
  const errFD = openSync(join(dir, 'stderr'), 'w');
  const r = spawnSync(bin, ['--cli', url, '--transport', 'http', ...auth, ...args, '--format', 'json'], {
    stdio: ['ignore', outFD, errFD], timeout: 60_000,
  });
  closeSync(outFD);
  closeSync(errFD);
  const stdout = readFileSync(join(dir, 'stdout'), 'utf8');
  const stderr = readFileSync(join(dir, 'stderr'), 'utf8');
  const last = (text) => {
    const objects = text.split('\n').filter((l) => l.trim().startsWith('{'));
    return objects.length ? JSON.parse(objects[objects.length - 1]) : null;
  };
  return { code: r.status, out: last(stdout), err: last(stderr), stdout, stderr };
}

// The tools the server lists, in the spec's order.
const toolNames = ['deliberate', 'estimate', 'list_modes', 'get_receipt', 'run_test', 'certify_mode', 'list_engines', 'validate_mode', 'ask_genie', 'approve_quote', 'genie_propose_mode', 'save_mode', 'list_mode'];

test('tools/list', () => {
  const r = inspect(['--method', 'tools/list']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.deepEqual(r.out.result.tools.map((t) => t.name), toolNames);
});

test('tools/list after probing server/discover', () => {
  const r = inspect(['--protocol-era', 'auto', '--method', 'tools/list']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.equal(r.out.result.tools.length, toolNames.length);
});

test('tools/call', () => {
  const r = inspect(['--method', 'tools/call', '--tool-name', 'list_engines', '--tool-args-json', '{}']);
  assert.equal(r.code, 0, r.stdout + r.stderr);
  assert.ok(r.out.result.structuredContent.engines.length > 0);
});

test('a failed tool exits with tool_is_error', () => {
  const r = inspect(['--method', 'tools/call', '--tool-name', 'estimate',
    '--tool-args-json', JSON.stringify({ messages: [{ role: 'user', content: 'Is it worth it?' }] })]);
  assert.equal(r.code, 5, r.stdout + r.stderr);
  assert.equal(r.out.result.isError, true);
  assert.equal(JSON.parse(r.out.result.content[0].text).error.code, 'invalid_model');
  assert.equal(r.err.error.code, 'tool_is_error');
});

test('an argument a self-answered tool does not take is -32602', () => {
  const r = inspect(['--method', 'tools/call', '--tool-name', 'list_engines', '--tool-args-json', '{"tier":"pro"}']);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(r.err.error.code, 'error');
  assert.match(r.err.error.message, /Invalid params/);
});

test('an unknown method is -32601', () => {
  const r = inspect(['--method', 'resources/read', '--uri', 'conclave://nothing']);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  assert.equal(r.err.error.code, 'error');
  assert.match(r.err.error.message, /Method not found/);
});

test('a wrong key is auth_required', () => {
  const r = inspect(['--method', 'tools/list'], 'ccl_live_' + 'A'.repeat(43));
  assert.equal(r.code, 3, r.stdout + r.stderr);
  assert.equal(r.err.error.code, 'auth_required');
});

test('no key at all is auth_required', () => {
  const r = inspect(['--method', 'tools/list', '--stored-auth-only'], '');
  assert.equal(r.code, 3, r.stdout + r.stderr);
  assert.equal(r.err.error.code, 'auth_required');
  assert.match(r.err.error.message, /-32001/);
});
