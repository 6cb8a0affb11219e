//go:build wasip1

// Command wasm is the Ollama example adapter as a seat-abi/1 WebAssembly
// module, for the wasm carrier (plugins/wasmhost). Build it as a WASI
// reactor, then pin its sha256 in the plugin manifest (make plugins does
// both, as ollama-example-wasm):
//
//	GOOS=wasip1 GOARCH=wasm go build -trimpath -buildmode=c-shared -o ollama-example.wasm ./adapters/example/ollama/wasm
package main

import (
	"github.com/conclavehq/conclave/adapters/example/ollama"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

// init registers the adapter: a reactor's _initialize runs init, never main.
func init() { wasmguest.ServeAdapter(ollama.New()) }

func main() {}
