//go:build wasip1

// Command gemini is the built-in gemini adapter as a seat-abi/1 WebAssembly
// module. Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o gemini.wasm ./plugins/builtin/wasm/gemini
package main

import (
	"github.com/conclavehq/conclave/adapters/gemini"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

func init() { wasmguest.ServeAdapter(gemini.New()) }

// main never runs: a reactor is initialised by _initialize, which runs init.
func main() {}
