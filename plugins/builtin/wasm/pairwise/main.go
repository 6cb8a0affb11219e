//go:build wasip1

// Command pairwise is the built-in pairwise judging protocol as a seat-abi/1
// WebAssembly module. Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o pairwise.wasm ./plugins/builtin/wasm/pairwise
package main

import (
	"github.com/conclavehq/conclave/plugins/protocol/pairwise"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

func init() { wasmguest.ServeProtocol(pairwise.New()) }

// main never runs: a reactor is initialised by _initialize, which runs init.
func main() {}
