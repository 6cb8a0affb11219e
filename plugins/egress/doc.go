// Package egress is the only part of Conclave that talks to model providers.
// Egress implements core.Egress: for each seat call it asks the adapter to
// build the provider request, checks the request (method, a path that stays
// under the engine's endpoint, header syntax), refuses hosts outside its
// allow-list, strips every authentication header the adapter set, injects
// the engine's credential for the scheme the adapter names (bearer,
// x-api-key, x-goog-api-key, or AWS SigV4 over the final bytes), sends it
// with a per-attempt timeout and no redirects, reads at most
// MaxResponseBytes, scrubs the credential out of the response, hands the
// response to the adapter to parse, and retries rate limits, overloads and
// timeouts with capped, jittered back-off.
//
// Credentials come from a core.Credentials; package creds has the service's
// own (environment, static, STS AssumeRole) and a Chain for
// bring-your-own-key to wrap them.
//
// # Why does the egress layer, not the adapter, own authentication?
//
// Adapters may be third-party WebAssembly modules or plugin processes. If
// they never hold a credential they cannot leak one, so the egress layer
// removes whatever auth an adapter set and adds the real one itself, last,
// after every byte it signs is final. For the same reason the response an
// adapter parses has auth headers (and cookies) removed and every
// occurrence of the secret (eight bytes or longer) replaced by
// "[redacted]": a provider or proxy that echoes request headers must not
// hand the key to the adapter.
//
// # Why is a refused request an answer and not an error?
//
// A refusal (host not allowed, path escaping the endpoint, response too
// large) is a fact about one engine call, like a provider's 400; the caller
// moves on to the seat's backup. A Go error from Call means the call could
// not be attempted at all: the caller's context ended, or the credential
// could not be found, which is a deployment problem.
//
// # Why are adapter failures not retried?
//
// An adapter is pure: the same input gives the same output, so a failed
// BuildRequest or ParseResponse fails again. Only the classes
// core.ErrorClass.Retryable names (rate_limited, overloaded, timeout) are
// retried, and never past the caller's deadline.
package egress
