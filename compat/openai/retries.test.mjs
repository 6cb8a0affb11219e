// The two things a new user of the official OpenAI Node client met, on a
// server with Conclave's defaults (TestNodeOpenAIClientRetries runs this
// file and checks the ledger after it):
//
// - a duplicate (same Idempotency-Key) sent while the first call still
//   deliberates, for about 12 seconds, ends in the replay with the client's
//   defaults (two retries), where it used to end in a ConflictError;
// - a client with a 3-second timeout gives up on a longer deliberation,
//   which goes on without it; its retry with the same Idempotency-Key gets
//   the stored answer, billed once.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAI, apiKey, ask, client, env, recording } from './client.mjs';

test('a duplicate during a 12-second deliberation ends in its replay with the default retries', async (t) => {
  const seen = [];
  const duplicate = client(apiKey, { fetch: recording(seen) });
  assert.equal(duplicate.maxRetries, 2, "the client's default");
  const { data: res, response } = await duplicate.chat.completions
    .create(ask('The same request, sent again.'), {
      headers: { 'Idempotency-Key': env('CONCLAVE_RUNNING_IDEMPOTENCY_KEY') },
    })
    .withResponse();
  t.diagnostic(`attempts: ${seen.join(', ')}`);
  assert.equal(response.headers.get('idempotent-replayed'), 'true');
  assert.equal(res.panel.replayed, true);
  assert.match(res.panel.request_id, /^req_/);
  assert.ok(res.choices[0].message.content.length > 0);
});

test('a client with a 3-second timeout gives up; its retry with the same Idempotency-Key gets the stored answer', async (t) => {
  const impatient = client(apiKey, { timeout: 3000 });
  const params = ask(env('CONCLAVE_SLOW_QUESTION'));
  const key = { 'Idempotency-Key': 'node-timeout-1' };

  await assert.rejects(
    impatient.chat.completions.create(params, { headers: key, maxRetries: 0 }),
    OpenAI.APIConnectionTimeoutError,
  );
  // The deliberation goes on without its caller. The retry, with the same
  // key and the same 3-second timeout, is answered as soon as the stored
  // answer exists: an attempt that gives up first is retried by the client,
  // and (on a loaded machine, where the deliberation runs longer than the
  // client's retries) by this loop, as a caller would.
  const seen = [];
  const again = client(apiKey, { timeout: 3000, fetch: recording(seen) });
  let res;
  for (let tries = 1; !res; tries++) {
    try {
      res = await again.chat.completions.create(params, { headers: key });
    } catch (err) {
      if (!(err instanceof OpenAI.APIConnectionTimeoutError) || tries === 10) throw err;
    }
  }
  t.diagnostic(`attempts of the retry: ${seen.join(', ')}`);
  assert.equal(res.panel.replayed, true, 'the stored answer of the call that outlived its caller');
  assert.ok(res.choices[0].message.content.length > 0);
});
