//go:build wasip1

// Command plurality is the built-in plurality judging protocol as a seat-abi/1
// WebAssembly module. Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o plurality.wasm ./plugins/builtin/wasm/plurality
package main

import (
	"github.com/conclavehq/conclave/plugins/protocol/plurality"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

func init() { wasmguest.ServeProtocol(plurality.New()) }

// main never runs: a reactor is initialised by _initialize, which runs init.
func main() {}
