// Package mcp serves Conclave's MCP tool server at /mcp: stateless
// Streamable HTTP, every message a POST, answered by a small JSON-RPC 2.0
// layer of its own (the official SDKs' server handlers break the spec's
// HTTP contract; they serve here only as test clients).
//
// A request is checked before any message in it runs — method (405),
// browser Origin (403), bearer credential (401 with the protected-resource
// challenge), body cap (413) — then parsed: one message or a batch, each
// element answered on its own. The tools call the same core services as
// the REST carrier (core/calls, core/access, core/modes, core/bench/runs),
// so limits, idempotency, billing and error codes are exactly REST's; the
// forwarding tools answer the REST endpoint's JSON (core/wire). A
// deliberate call that asks for progress is answered with an event stream
// of notifications/progress and then its result.
//
// Every request is observed as REST's are (observe.go, metrics.go): an
// X-Request-Id, one log line "request" once it is answered, and REST's
// HTTP series under the route "/mcp", with a series of its own for the
// tool calls.
//
// mcp imports only core of this module (beside the tracing and metrics
// libraries). docs/mcp.md is the caller's guide.
package mcp
