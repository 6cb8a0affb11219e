// The official OpenAI Node client against Conclave: a chat completion with
// only the base URL changed, the panel block read at run time, every
// refusal as the client's APIError carrying our code, and the client's own
// retries after a 500 ending in the replay of the one call billed (the Go
// test that runs this file, TestNodeOpenAIClient, checks the ledger).
//
// The server answers a repeat of a running call at once here (its wait for
// the call is off), so that the 409 reaches the client without delay.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { OpenAI, apiKey, ask, client, env, model, recording } from './client.mjs';

// Runs first: the Go test started a deliberation under this Idempotency-Key
// that is still running when this file starts.
test('every refusal is an APIError with our status, code and type', async () => {
  const busy = env('CONCLAVE_BUSY_IDEMPOTENCY_KEY');
  const once = { maxRetries: 0 };
  const limited = client(env('CONCLAVE_LIMITED_KEY'), once);
  await limited.models.list(); // the key's one request of the minute

  const cases = [
    {
      name: 'no messages',
      call: () => client(apiKey, once).chat.completions.create({ model, messages: [] }),
      is: OpenAI.BadRequestError, status: 400, code: 'invalid_messages', type: 'invalid_request_error',
    },
    {
      name: 'an estimate without a model, through the generic post',
      call: () => client(apiKey, once).post('/estimate', { body: { messages: [{ role: 'user', content: 'hi' }] } }),
      is: OpenAI.BadRequestError, status: 400, code: 'invalid_model', type: 'invalid_request_error',
    },
    {
      name: 'a key that is not ours',
      call: () => client('sk-not-ours', once).chat.completions.create(ask('Hello?')),
      is: OpenAI.AuthenticationError, status: 401, code: 'invalid_api_key', type: 'authentication_error',
    },
    {
      name: 'a call ceiling above the balance',
      call: () => client(env('CONCLAVE_RICH_KEY'), once).chat.completions.create(ask('Should we hire?')),
      is: OpenAI.APIError, status: 402, code: 'insufficient_balance', type: 'invalid_request_error',
    },
    {
      name: 'an unknown mode',
      call: () => client(apiKey, once).chat.completions.create({ ...ask('Hello?'), model: 'gpt-4o' }),
      is: OpenAI.NotFoundError, status: 404, code: 'model_not_found', type: 'invalid_request_error',
    },
    {
      name: 'a repeat of a running call',
      call: () => client(apiKey, once).chat.completions.create(ask('Should we hire?'), { headers: { 'Idempotency-Key': busy } }),
      is: OpenAI.ConflictError, status: 409, code: 'request_in_progress', type: 'invalid_request_error', retryAfter: true,
    },
    {
      name: "another API key's Idempotency-Key",
      call: () => client(env('CONCLAVE_OTHER_KEY'), once).chat.completions.create(ask('Should we hire?'), { headers: { 'Idempotency-Key': busy } }),
      is: OpenAI.UnprocessableEntityError, status: 422, code: 'idempotency_key_reused', type: 'invalid_request_error',
    },
    {
      name: "over the key's rate",
      call: () => limited.chat.completions.create(ask('Should we hire?')),
      is: OpenAI.RateLimitError, status: 429, code: 'rate_limit_exceeded', type: 'rate_limit_error', retryAfter: true,
    },
  ];
  for (const c of cases) {
    await assert.rejects(c.call(), (err) => {
      assert.ok(err instanceof c.is, `${c.name}: ${err}`);
      assert.equal(err.status, c.status, c.name);
      assert.equal(err.code, c.code, c.name);
      assert.equal(err.type, c.type, c.name);
      assert.ok(err.message.length > 0, c.name);
      assert.match(err.requestID, /^req_/, c.name);
      if (c.retryAfter) {
        assert.ok(Number(err.headers.get('retry-after')) >= 1, `${c.name}: Retry-After`);
      }
      return true;
    }, c.name);
  }
});

test('a chat completion with only the base URL changed, and its panel', async () => {
  const { data: res, response } = await client()
    .chat.completions.create(
      ask('Should a twelve-person team split its monolith into microservices this year? Compare the trade-offs.'),
      { headers: { 'Idempotency-Key': 'node-completion-1' } },
    )
    .withResponse();
  assert.equal(res.object, 'chat.completion');
  assert.equal(res.model, model);
  assert.equal(res.choices.length, 1);
  assert.equal(res.choices[0].message.role, 'assistant');
  assert.ok(res.choices[0].message.content.length > 0);
  assert.ok(['stop', 'length', 'cost_cap'].includes(res.choices[0].finish_reason));
  assert.ok(res.usage.prompt_tokens > 0);
  assert.equal(res.usage.total_tokens, res.usage.prompt_tokens + res.usage.completion_tokens);

  // panel is not in the client's types; it is on the object at run time.
  const panel = res.panel;
  assert.match(panel.request_id, /^req_/);
  assert.equal(response.headers.get('x-request-id'), panel.request_id);
  assert.equal(panel.mode, model);
  assert.equal(panel.persisted, true);
  assert.equal(panel.replayed, undefined, 'a fresh answer is no replay');
  assert.ok(panel.billed_usd > 0);
  assert.ok(panel.seats >= panel.seats_answered && panel.seats_answered > 0);
  assert.ok(panel.engines.length > 0 && panel.engines.every((e) => e.startsWith('sim/')));
  assert.ok(Array.isArray(panel.deliberation) && Array.isArray(panel.substitutions));
});

test("the client's retries after a 500 replay the call billed, never bill it again", async () => {
  // The server bills calls under this key prefix and then reports that it
  // could not confirm the bill: 500 internal_error, which the client retries.
  const seen = [];
  const { data: res, response } = await client(apiKey, { fetch: recording(seen) })
    .chat.completions.create(ask('Should we adopt trunk-based development? Compare the risks.'), {
      headers: { 'Idempotency-Key': 'unconfirmed-node-1' },
    })
    .withResponse();
  assert.deepEqual(seen, [500, 200]);
  assert.equal(response.headers.get('idempotent-replayed'), 'true');
  assert.equal(res.panel.replayed, true);
  assert.equal(res.panel.billed_usd, undefined, 'the replay form holds no bill');
  assert.ok(res.choices[0].message.content.length > 0);
});
