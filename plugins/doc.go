// Package plugins holds no code: the folder holds both sides of Conclave's
// plugins. The guest side is what a plugin is built with (abi, wasmguest,
// the serving half of goplugin, the built-in plugins' main packages); the
// host side is what loads and calls them (manifest, wasmhost, the host half
// of goplugin, the judging protocols) and what their requests go through
// to reach a provider (egress with its credential sources, byok, and
// providers, which wires each engine to its carrier). Its test states the
// folder's import rule.
package plugins
