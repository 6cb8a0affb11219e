// Package oauth is the OAuth 2.1 authorization server connected apps sign
// people in with, embedded in `conclave serve` (see
// ../shared/design/OAUTH.md and docs/oauth.md), and the verifier of the
// access tokens it — or an external authorization server — issues.
//
// Server answers at the issuer's root: /authorize and its callback,
// /token, /revoke, /jwks, /register, and the discovery documents at
// /.well-known/oauth-authorization-server and
// /.well-known/openid-configuration. The protocol is zitadel's op.Provider
// over a PostgreSQL storage (Store, implemented by internal/pgstore); what
// zitadel lacks or does otherwise is done here:
//
//   - /authorize is written here on zitadel's parser: clients are public,
//     known by their metadata document (Fetcher, CIMD) or their
//     registration (Registrar, DCR); redirect URIs match exactly but for a
//     loopback URI's port and host (core/oauth.MatchRedirect); PKCE is
//     S256 only; RFC 8707's resource must be {issuer}/mcp (the default);
//     unknown scopes are left out and no scope asks for every key scope;
//     an error that must not redirect (an unknown client, a redirect URI
//     not registered) is a page; every authorization response, success or
//     error, carries iss (RFC 9207), as the metadata advertises.
//   - The discovery documents are written here, trimmed to what is served.
//   - /token and /revoke check what zitadel does not (the grant types,
//     resource) before it and complete its answers after it: no id_token,
//     a readable error_description, server errors without their cause.
//   - Access tokens are RS256 JWTs for {issuer}/mcp alone, ten minutes
//     long, with scope, client_id, org_id, grant_id and sub (the person).
//     Refresh tokens are opaque, stored as SHA-256, issued only with
//     offline_access, rotated on every use; one used twice revokes its
//     grant.
//   - The consent page (api/web) asks the Server through Pending, Approve
//     and Deny.
//
// Verifier checks access tokens in-process for /mcp; NewExternalVerifier
// checks another server's by its published keys.
package oauth
