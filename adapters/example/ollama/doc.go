// Package ollama is the worked example of docs/adapters.md: a complete
// adapter, outside the built-ins, for Ollama's native chat API, with golden
// fixtures in core/adaptertest/testdata/ollama and mains that build it for
// the WebAssembly carrier (./wasm) and the go-plugin carrier (./goplugin).
// It is not registered in package adapters: a deployment loads it as a
// plugin (make plugins builds and pins both), which is how a third-party
// adapter arrives.
//
// # Request
//
// POST {endpoint}/api/chat with
//
//	{"model","messages":[{"role","content"}],"stream":false,
//	 "format":"json"?,"options":{"temperature"?,"num_predict"?}?}
//
// The seat's system prompt becomes a leading system message; the other
// messages keep their roles and places. stream is always false: Ollama
// streams by default, and a seat call wants one answer. MaxTokens becomes
// options.num_predict and Temperature options.temperature; options is left
// out when neither is set, so the model's own defaults apply. JSONOutput
// sets format to "json", which constrains Ollama's sampler to JSON; Ollama
// advises saying so in the prompt too, because a model constrained without
// being told tends to emit whitespace, so the adapter appends a one-line
// instruction to the system prompt when no prompt text mentions JSON.
//
// # Response
//
//	{"model","created_at","message":{"role":"assistant","content"},
//	 "done":true,"done_reason":"stop"|"length","prompt_eval_count","eval_count",…}
//
// The answer is message.content; a thinking model's message.thinking is
// not part of it, though eval_count, which becomes OutputTokens, counts it
// (Ollama does not report thinking tokens separately). prompt_eval_count
// becomes InputTokens. done_reason "length" is FinishLength; "stop", an
// unknown reason, or none at all (servers older than done_reason) is
// FinishStop. A 200 that is not one JSON object (a proxy's page, a streamed
// body), is a streamed chunk (done false), loaded or unloaded the model
// instead of answering (done_reason load or unload), lacks message.content,
// or has empty content without running out of tokens is a malformed answer.
//
// Ollama has no content filter: done_reason is only ever stop, length, load
// or unload, and a model's refusal is ordinary text. So this adapter never
// answers FinishFiltered.
//
// # Errors
//
// Ollama answers a failure with its HTTP status and {"error":"…"}. The class
// comes from the status: 429 rate_limited; 500, 502, 503 (and any other 5xx
// but 504) overloaded; 408 and 504 timeout; 401 and 403 auth_refused; 413
// context_too_long; 400 context_too_long when the message says the input
// does not fit the context, else bad_request; 404 (model not pulled) and any
// other 4xx bad_request. The message is Ollama's, cut to one short line, or
// "provider answered HTTP N" when the body carries none.
//
// # Authentication
//
// Describe names core.AuthNone: a local Ollama server takes no credential,
// and the egress layer then asks for none and injects none. An Ollama
// behind an authenticating reverse proxy, or a hosted one, wants
// "Authorization: Bearer <key>"; because an adapter names its scheme in
// Describe, that is a second adapter value whose Describe says
// core.AuthBearer, built into its own plugin — docs/adapters.md shows the
// few lines.
//
// The adapter is pure, deterministic and safe for concurrent use, and it
// compiles for GOOS=wasip1.
package ollama
