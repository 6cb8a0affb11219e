// Package wasmhost is the WebAssembly carrier for Conclave plugins: it loads
// seat-abi/1 modules (built with plugins/wasmguest) into wazero and gives
// them back as a core.Adapter or core.Protocol.
//
// The host treats every module as untrusted code. A module is verified
// against its manifest digest, compiled once, and run in a bounded pool of
// instances, each with a capped linear memory, no filesystem, environment,
// arguments, network or real clock, and a deterministic random source.
// Every call has a deadline; an instance that traps, panics, exits, runs out
// of memory or time, or answers with a result the host cannot accept is
// closed and replaced by a fresh one on a later call, so one bad call never
// poisons the next.
//
// A failure of the carrier comes back as a *CallError matching ErrCarrier and
// one of the sentinels (ErrTrapped, ErrTimeout, ErrOutputTooLarge, …); a
// failure the plugin reports itself comes back as an *abi.Error.
// docs/plugins.md documents the ABI and the sandbox in full.
//
// A Host and everything it returns are safe for concurrent use.
package wasmhost
