//go:build wasip1

// Command direct is the built-in direct judging protocol as a seat-abi/1
// WebAssembly module. Build it as a WASI reactor:
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o direct.wasm ./plugins/builtin/wasm/direct
package main

import (
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/wasmguest"
)

func init() { wasmguest.ServeProtocol(direct.New()) }

// main never runs: a reactor is initialised by _initialize, which runs init.
func main() {}
