// MCP clients that sign a person in, against a Conclave whose embedded
// authorization server a Go test started (cmd/conclave/oauth_node_test.go):
// the official TypeScript client 2.x (@modelcontextprotocol/client) by a
// Client ID Metadata Document and by dynamic registration, and the
// TypeScript SDK 1.x (@modelcontextprotocol/sdk) by dynamic registration.
// Each discovers the server from /mcp's 401, registers or names its
// metadata document, sends the person to /authorize, exchanges the code
// and ends in a successful tools/call. Environment:
//   CONCLAVE_MCP_URL   the tool endpoint, {public_url}/mcp
//   CONCLAVE_APPROVER  a test-only endpoint that, given an authorization
//                      URL (?url=…), signs the person in, approves the
//                      consent page and answers {"location": …}: where the
//                      authorization server sent the browser back
//   CONCLAVE_CIMD_URL  the https URL of this client's metadata document
//   CONCLAVE_REDIRECT  the redirect URI the clients register (loopback)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as v2 from '@modelcontextprotocol/client';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { UnauthorizedError as UnauthorizedV1 } from '@modelcontextprotocol/sdk/client/auth.js';

const url = new URL(process.env.CONCLAVE_MCP_URL);
const approver = process.env.CONCLAVE_APPROVER;
const cimdURL = process.env.CONCLAVE_CIMD_URL;
const redirect = process.env.CONCLAVE_REDIRECT;

// provider is an OAuthClientProvider kept in memory, as a CLI keeps one in
// a file. With cimd set it names its metadata document instead of
// registering.
function provider(name, cimd) {
  const rec = { client: undefined, tokens: undefined, verifier: undefined, authorizationURL: undefined, registered: 0 };
  const p = {
    rec,
    get redirectUrl() { return redirect; },
    state() { return crypto.randomUUID(); },
    get clientMetadata() {
      return {
        client_name: name, redirect_uris: [redirect], grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'], token_endpoint_auth_method: 'none',
      };
    },
    clientInformation() { return rec.client; },
    saveClientInformation(info) { rec.client = info; rec.registered++; },
    tokens() { return rec.tokens; },
    saveTokens(t) { rec.tokens = t; },
    redirectToAuthorization(u) { rec.authorizationURL = new URL(u); },
    saveCodeVerifier(v) { rec.verifier = v; },
    codeVerifier() { return rec.verifier; },
  };
  if (cimd) {
    p.clientMetadataUrl = cimd;
  }
  return p;
}

// approve has the test's person sign in and approve the app, and returns
// the callback URL the authorization server redirected to.
async function approve(authorizationURL) {
  const res = await fetch(approver + '?url=' + encodeURIComponent(authorizationURL.href));
  const body = await res.text();
  assert.equal(res.status, 200, body);
  return new URL(JSON.parse(body).location);
}

// signIn runs the whole flow with one SDK: a first connection refused with
// 401 sends the person to the authorization URL; the code comes back; a
// second connection calls list_modes with the token.
async function signIn({ Client, Transport, Unauthorized, p }) {
  const first = new Transport(url, { authProvider: p });
  const client = new Client({ name: 'conclave-compat-oauth', version: '1.0.0' });
  await assert.rejects(client.connect(first), (err) => err instanceof Unauthorized, 'the first connection needs a sign-in');
  const authorizationURL = p.rec.authorizationURL;
  assert.ok(authorizationURL, 'the client was sent to the authorization server');
  assert.equal(authorizationURL.origin + authorizationURL.pathname, url.origin + '/authorize');
  assert.equal(authorizationURL.searchParams.get('code_challenge_method'), 'S256');
  const callback = await approve(authorizationURL);
  assert.equal(callback.origin + callback.pathname, new URL(redirect).origin + new URL(redirect).pathname);
  assert.equal(callback.searchParams.get('iss'), url.origin, 'the issuer rides on the response (RFC 9207)');
  assert.equal(callback.searchParams.get('state'), authorizationURL.searchParams.get('state'));
  if (Transport === v2.StreamableHTTPClientTransport) {
    await first.finishAuth(callback.searchParams); // 2.x checks iss against the issuer it recorded
  } else {
    await first.finishAuth(callback.searchParams.get('code'));
  }
  assert.ok(p.rec.tokens?.access_token, 'an access token was issued');
  const second = new Transport(url, { authProvider: p });
  const signedIn = new Client({ name: 'conclave-compat-oauth', version: '1.0.0' });
  await signedIn.connect(second);
  try {
    const modes = await signedIn.callTool({ name: 'list_modes', arguments: {} });
    assert.equal(modes.isError, undefined, JSON.stringify(modes));
    assert.ok(modes.structuredContent.data.some((m) => m.id === 'conclave-standard'), JSON.stringify(modes.structuredContent));
  } finally {
    await signedIn.close();
  }
  return p.rec;
}

test('client 2.x signs in with a Client ID Metadata Document', async () => {
  const p = provider('Conclave compat (CIMD)', cimdURL);
  const st = await signIn({ Client: v2.Client, Transport: v2.StreamableHTTPClientTransport, Unauthorized: v2.UnauthorizedError, p });
  // The client keeps the document's URL as its client_id: it did not register.
  assert.equal(st.client?.client_id ?? cimdURL, cimdURL, 'no dynamic registration when the metadata document is offered');
  assert.equal(st.authorizationURL.searchParams.get('client_id'), cimdURL);
  assert.ok(st.tokens.refresh_token, 'offline_access is asked for and a refresh token issued');
});

test('client 2.x signs in by dynamic registration', async () => {
  const p = provider('Conclave compat (DCR 2.x)');
  const st = await signIn({ Client: v2.Client, Transport: v2.StreamableHTTPClientTransport, Unauthorized: v2.UnauthorizedError, p });
  assert.equal(st.registered, 1, 'the client registered once');
  assert.ok(st.client.client_id && !st.client.client_id.startsWith('https://'));
});

test('SDK 1.x signs in by dynamic registration', async () => {
  const p = provider('Conclave compat (DCR 1.x)');
  const st = await signIn({ Client: ClientV1, Transport: TransportV1, Unauthorized: UnauthorizedV1, p });
  assert.equal(st.registered, 1, 'the client registered once');
});
