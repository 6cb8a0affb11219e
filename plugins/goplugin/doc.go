// Package goplugin is the go-plugin carrier of Conclave's plugins: adapters
// and judging protocols that run as separate, operator-trusted processes,
// started and spoken to through hashicorp/go-plugin over gRPC.
//
// A plugin's main is one line — goplugin.ServeAdapter(myadapter.New()) or
// goplugin.ServeProtocol(myprotocol.New()). A Host loads the plugins a
// manifest lists, refusing any binary whose SHA-256 is not the pinned one,
// and returns them as plain core.Adapter and core.Protocol values. Every
// call's ctx crosses the process boundary: gRPC carries its deadline and
// cancellation, and the plugin's method receives them.
//
// Calls carry the seat-abi/1 JSON of package abi over one hand-described
// gRPC method per kind, so this carrier marshals exactly like the
// WebAssembly one and needs no generated code. A process that crashes fails
// the calls in flight with ErrPluginCrashed; the next call starts a fresh
// process. docs/plugins.md describes the handshake, wire format and lifecycle.
package goplugin
