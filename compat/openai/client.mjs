// What the compatibility tests of the official OpenAI Node client share.
// A Go test (api/openai_node_test.go) starts a real Conclave server on
// loopback, passes its base URL and keys in the environment, runs a
// node:test file of this folder, and checks the ledger once it has run.
import assert from 'node:assert/strict';
import OpenAI from 'openai';

// env reads a variable the Go test sets.
export function env(name) {
  const v = process.env[name];
  assert.ok(v, `${name} is set by the Go test that runs this file`);
  return v;
}

export const baseURL = env('CONCLAVE_BASE_URL');
export const apiKey = env('CONCLAVE_API_KEY');
export const model = 'conclave-standard';

// client is the official client with only the base URL changed; options
// are the client's own (timeout, maxRetries, fetch).
export function client(key = apiKey, options = {}) {
  return new OpenAI({ baseURL, apiKey: key, ...options });
}

// ask is the body of a chat completion with one user message.
export function ask(content) {
  return { model, messages: [{ role: 'user', content }] };
}

// recording is a fetch that notes the status of every attempt the client
// makes, its automatic retries included ('timeout' when it gave up first).
export function recording(seen) {
  return async (url, init) => {
    try {
      const res = await fetch(url, init);
      seen.push(res.status);
      return res;
    } catch (err) {
      seen.push(init?.signal?.aborted ? 'timeout' : 'error');
      throw err;
    }
  };
}

export { OpenAI };
