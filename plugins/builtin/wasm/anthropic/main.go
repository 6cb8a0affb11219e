//go:build wasip1

// Command anthropic is the built-in anthropic adapter as a seat-abi/1 WebAssembly
// module. Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o anthropic.wasm ./plugins/builtin/wasm/anthropic
package main

import (
	"github.com/conclavehq/conclave/adapters/anthropic"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

func init() { wasmguest.ServeAdapter(anthropic.New()) }

// main never runs: a reactor is initialised by _initialize, which runs init.
func main() {}
