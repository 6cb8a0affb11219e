//go:build wasip1

// Command openai is the built-in openai adapter as a seat-abi/1 WebAssembly
// module. Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o openai.wasm ./plugins/builtin/wasm/openai
package main

import (
	"github.com/conclavehq/conclave/adapters/openai"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

func init() { wasmguest.ServeAdapter(openai.New()) }

// main never runs: a reactor is initialised by _initialize, which runs init.
func main() {}
