package wasmhost

import (
	"errors"
	"fmt"
	"strings"
)

// ErrCarrier matches every error a call returns because the WebAssembly
// carrier failed rather than the plugin's method: the egress layer treats
// such a call as adapter_failed. Each such error also matches one of the
// sentinels below.
var ErrCarrier = errors.New("wasm carrier failed")

// Why a call failed. The instance that failed is discarded in every case but
// ErrInputTooLarge, ErrClosed, and a wait for a free instance that ended.
var (
	// ErrTrapped: the guest trapped, panicked, exited, or exceeded its
	// memory cap (the Go runtime reports that as a fatal error and exits).
	ErrTrapped = errors.New("wasm plugin trapped")
	// ErrTimeout: the call reached its deadline (Config.CallTimeout or the
	// caller's) and the instance was interrupted.
	ErrTimeout = errors.New("wasm plugin call timed out")
	// ErrCanceled: the caller's context was cancelled before or during the
	// call.
	ErrCanceled = errors.New("wasm plugin call canceled")
	// ErrOutputTooLarge: the result is larger than Config.MaxOutputBytes.
	ErrOutputTooLarge = errors.New("wasm plugin result exceeds the output cap")
	// ErrInputTooLarge: the input cannot fit in the guest's memory cap.
	ErrInputTooLarge = errors.New("input exceeds the wasm plugin's memory cap")
	// ErrBadResult: the guest returned a result outside its memory, an empty
	// one, or an input buffer the host could not write to.
	ErrBadResult = errors.New("wasm plugin returned an invalid result")
	// ErrClosed: the Host was closed.
	ErrClosed = errors.New("wasm host closed")
)

// Why a module was refused at load.
var (
	// ErrBadModule: the module is not a seat-abi reactor: an export is
	// missing or has the wrong signature, or it imports something the host
	// does not provide.
	ErrBadModule = errors.New("not a seat-abi WebAssembly module")
	// ErrABIVersion: the module speaks another ABI version than abi.Version.
	ErrABIVersion = errors.New("wasm plugin speaks another ABI version")
	// ErrKind: the module is not the kind (adapter or protocol) it was
	// loaded as, or the manifest entry says otherwise.
	ErrKind = errors.New("wasm plugin is not of the kind it was loaded as")
)

// CallError is a failed call into a plugin instance. It matches ErrCarrier,
// its Err (one of the sentinels above) and its Cause.
type CallError struct {
	Plugin string // the manifest entry's name
	Method string // the export called: a method name, alloc, free, _initialize…
	Err    error  // ErrTrapped, ErrTimeout, …
	Cause  error  // what wazero or the context reported; may be nil
	// Stderr is the end of what the guest wrote to stderr during the call
	// (a Go panic's message and stack, say), at most 2 KiB. It is the
	// guest's text, untrusted, and kept out of Error.
	Stderr string
}

func (e *CallError) Error() string {
	msg := fmt.Sprintf("wasm plugin %s: %s: %v", e.Plugin, e.Method, e.Err)
	if e.Cause != nil {
		// wazero appends a multi-line guest stack trace; the first line says
		// what happened.
		first, _, _ := strings.Cut(e.Cause.Error(), "\n")
		msg += ": " + first
	}
	return msg
}

// Unwrap returns the sentinels and the cause.
func (e *CallError) Unwrap() []error {
	errs := []error{ErrCarrier, e.Err}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}
