//go:build wasip1

// Package wasmguest turns a core.Adapter or core.Protocol into a WebAssembly
// plugin speaking seat-abi/1, the contract plugins/wasmhost loads. A guest's
// main package registers its implementation and is built as a WASI reactor:
//
//	//go:build wasip1
//
//	package main
//
//	import (
//		"github.com/conclavehq/conclave/adapters/openai"
//		"github.com/conclavehq/conclave/plugins/wasmguest"
//	)
//
//	func init() { wasmguest.ServeAdapter(openai.New()) }
//
//	func main() {}
//
//	GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared -o openai.wasm ./path/to/main
//
// The package defines the module's exports (abi_version, alloc, free, kind,
// describe, build_request, parse_response, plan, score); docs/plugins.md
// describes them. A guest must not define exports of the same names.
//
// A module instance runs one call at a time (the host serialises calls into
// an instance, and WebAssembly has one thread), so nothing here locks.
package wasmguest

//lint:file-ignore U1000 the functions marked go:wasmexport are called by the host, which staticcheck cannot see

import (
	"context"
	"encoding/json"
	"unsafe"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/abi"
)

// served is what the guest registered: at most one of adapter and protocol.
var served struct {
	adapter  core.Adapter
	protocol core.Protocol
}

// ServeAdapter registers a as the module's implementation. Call it once,
// from init or main, before the host calls any method. A later call to
// ServeAdapter or ServeProtocol replaces the registration.
func ServeAdapter(a core.Adapter) {
	served.adapter, served.protocol = a, nil
}

// ServeProtocol registers p as the module's implementation. Call it once,
// from init or main, before the host calls any method.
func ServeProtocol(p core.Protocol) {
	served.adapter, served.protocol = nil, p
}

// Log sends msg to the host's log, tagged with the plugin's name. The host
// caps the length of a message and the number of messages per call.
func Log(msg string) {
	if msg == "" {
		return
	}
	hostLog(unsafe.Pointer(unsafe.StringData(msg)), uint32(len(msg)))
}

//go:wasmimport conclave log
func hostLog(ptr unsafe.Pointer, size uint32)

// pinned holds every buffer whose address the host knows, keyed by that
// address, until the host frees it: the buffers alloc hands out for inputs
// and the results the methods return. Go's collector does not move objects,
// so keeping a buffer reachable keeps its address valid.
var pinned = map[uint32][]byte{}

func addr(b []byte) uint32 { return uint32(uintptr(unsafe.Pointer(unsafe.SliceData(b)))) }

// pin keeps b alive and returns it packed as ptr<<32 | len.
func pin(b []byte) uint64 {
	if len(b) == 0 {
		return 0
	}
	p := addr(b)
	pinned[p] = b
	return uint64(p)<<32 | uint64(len(b))
}

//go:wasmexport abi_version
func abiVersion() uint64 { return pin([]byte(abi.Version)) }

//go:wasmexport kind
func kind() uint64 {
	switch {
	case served.adapter != nil:
		return pin([]byte(abi.KindAdapter))
	case served.protocol != nil:
		return pin([]byte(abi.KindProtocol))
	}
	return 0
}

// alloc returns the address of a new buffer of size bytes that the host may
// write into; 0 when size is 0.
//
//go:wasmexport alloc
func alloc(size uint32) uint32 {
	if size == 0 {
		return 0
	}
	b := make([]byte, size)
	p := addr(b)
	pinned[p] = b
	return p
}

// free releases a buffer from alloc or a method's result. Unknown addresses
// are ignored.
//
//go:wasmexport free
func free(ptr uint32) { delete(pinned, ptr) }

//go:wasmexport describe
func describe(ptr, size uint32) uint64 { return serve(abi.MethodDescribe, ptr, size) }

//go:wasmexport build_request
func buildRequest(ptr, size uint32) uint64 { return serve(abi.MethodBuildRequest, ptr, size) }

//go:wasmexport parse_response
func parseResponse(ptr, size uint32) uint64 { return serve(abi.MethodParseResponse, ptr, size) }

//go:wasmexport plan
func plan(ptr, size uint32) uint64 { return serve(abi.MethodPlan, ptr, size) }

//go:wasmexport score
func score(ptr, size uint32) uint64 { return serve(abi.MethodScore, ptr, size) }

// serve runs method on the input the host wrote at ptr (a buffer from alloc)
// and returns the pinned envelope. The input is looked up among the pinned
// buffers rather than trusted as a raw address.
func serve(method string, ptr, size uint32) uint64 {
	var in []byte
	if size > 0 {
		b, ok := pinned[ptr]
		if !ok || uint32(len(b)) < size {
			return pin(failure(abi.CodeBadInput, "the input is not a buffer from alloc"))
		}
		in = b[:size]
	}
	// The guest is the top of its own call path: the host enforces the
	// caller's deadline from outside by interrupting the instance.
	ctx := context.Background()
	switch {
	case served.adapter != nil:
		return pin(abi.ServeAdapter(ctx, served.adapter, method, in))
	case served.protocol != nil:
		return pin(abi.ServeProtocol(ctx, served.protocol, method, in))
	}
	return pin(failure(abi.CodeFailed, "the module registered no adapter or protocol"))
}

func failure(code, msg string) []byte {
	b, _ := json.Marshal(struct {
		Error *abi.Error `json:"error"`
	}{&abi.Error{Code: code, Message: msg}})
	return b
}
