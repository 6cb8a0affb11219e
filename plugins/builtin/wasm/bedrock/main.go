//go:build wasip1

// Command bedrock is the built-in bedrock adapter as a seat-abi/1 WebAssembly
// module. Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o bedrock.wasm ./plugins/builtin/wasm/bedrock
package main

import (
	"github.com/conclavehq/conclave/adapters/bedrock"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

func init() { wasmguest.ServeAdapter(bedrock.New()) }

// main never runs: a reactor is initialised by _initialize, which runs init.
func main() {}
