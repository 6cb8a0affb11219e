// Package abi is the wire contract between Conclave and its plugins
// ("seat-abi/1"): JSON in, JSON out, one method name per call. The same
// encoding is used by both plugin carriers — WebAssembly modules
// (plugins/wasmhost) and go-plugin processes (plugins/goplugin) — so that a
// plugin behaves identically on either.
//
// Guest side: Serve runs one method of a core.Adapter or core.Protocol on a
// JSON input and returns the JSON result. Host side: Adapter and Protocol
// turn a Caller (one round trip to the plugin) back into core.Adapter and
// core.Protocol.
//
// Every result is an envelope: {"ok": <value>} or {"error": {"code",
// "message", "retryable"}}. docs/plugins.md documents it in full.
package abi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/conclavehq/conclave/core"
)

// Version is the ABI version a plugin must report.
const Version = "seat-abi/1"

// Method names.
const (
	MethodDescribe      = "describe"
	MethodBuildRequest  = "build_request"
	MethodParseResponse = "parse_response"
	MethodPlan          = "plan"
	MethodScore         = "score"
)

// Kinds of plugin.
const (
	KindAdapter  = "adapter"
	KindProtocol = "protocol"
)

// Error is a failure a plugin reports.
type Error struct {
	Code      string `json:"code"`
	Message   string `json:"message"`
	Retryable bool   `json:"retryable"`
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Error codes a guest reports.
const (
	CodeBadInput      = "bad_input"      // the input JSON did not decode
	CodeUnknownMethod = "unknown_method" // no such method for this plugin kind
	CodeFailed        = "failed"         // the adapter or protocol returned an error
)

// envelope is the result of one call.
type envelope struct {
	OK    json.RawMessage `json:"ok,omitempty"`
	Error *Error          `json:"error,omitempty"`
}

func fail(code, format string, args ...any) []byte {
	b, _ := json.Marshal(envelope{Error: &Error{Code: code, Message: fmt.Sprintf(format, args...)}})
	return b
}

func ok(v any, err error) []byte {
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			b, _ := json.Marshal(envelope{Error: e})
			return b
		}
		return fail(CodeFailed, "%v", err)
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fail(CodeFailed, "encoding the result: %v", err)
	}
	b, _ := json.Marshal(envelope{OK: raw})
	return b
}

func decode[T any](in []byte) (*T, []byte) {
	if t := bytes.TrimSpace(in); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		// A nil request or response crosses the ABI as null: refuse it, as
		// the adapter would natively, rather than run on a zero value.
		return nil, fail(CodeBadInput, "no input")
	}
	var v T
	if err := json.Unmarshal(in, &v); err != nil {
		return nil, fail(CodeBadInput, "decoding the input: %v", err)
	}
	return &v, nil
}

// ServeAdapter runs method on a with the JSON input in and returns the JSON
// envelope. It never panics on bad input.
func ServeAdapter(ctx context.Context, a core.Adapter, method string, in []byte) []byte {
	switch method {
	case MethodDescribe:
		return ok(a.Describe(ctx))
	case MethodBuildRequest:
		req, bad := decode[core.SeatRequest](in)
		if bad != nil {
			return bad
		}
		return ok(a.BuildRequest(ctx, req))
	case MethodParseResponse:
		res, bad := decode[core.HTTPResponse](in)
		if bad != nil {
			return bad
		}
		return ok(a.ParseResponse(ctx, res))
	}
	return fail(CodeUnknownMethod, "an adapter has no method %q", method)
}

// ServeProtocol runs method on p with the JSON input in and returns the JSON
// envelope.
func ServeProtocol(ctx context.Context, p core.Protocol, method string, in []byte) []byte {
	switch method {
	case MethodDescribe:
		return ok(p.Describe(ctx))
	case MethodPlan:
		task, bad := decode[core.JudgeTask](in)
		if bad != nil {
			return bad
		}
		return ok(p.Plan(ctx, task))
	case MethodScore:
		v, bad := decode[core.JudgeVerdicts](in)
		if bad != nil {
			return bad
		}
		return ok(p.Score(ctx, v))
	}
	return fail(CodeUnknownMethod, "a protocol has no method %q", method)
}

// Caller makes one round trip to a plugin: method name and JSON input in,
// JSON envelope out. An error means the carrier failed (a trap, a timeout,
// a crashed process), not the plugin's method.
type Caller interface {
	Call(ctx context.Context, method string, in []byte) ([]byte, error)
}

// CallerFunc adapts a function to Caller.
type CallerFunc func(ctx context.Context, method string, in []byte) ([]byte, error)

// Call implements Caller.
func (f CallerFunc) Call(ctx context.Context, method string, in []byte) ([]byte, error) {
	return f(ctx, method, in)
}

// call sends v to method and decodes the envelope's value into a new T.
func call[T any](ctx context.Context, c Caller, method string, v any) (*T, error) {
	var in []byte
	if v != nil {
		var err error
		if in, err = json.Marshal(v); err != nil {
			return nil, fmt.Errorf("abi: encoding %s input: %w", method, err)
		}
	}
	out, err := c.Call(ctx, method, in)
	if err != nil {
		return nil, err
	}
	var env envelope
	if err := json.Unmarshal(out, &env); err != nil {
		return nil, fmt.Errorf("abi: %s returned a result that is not an envelope: %w", method, err)
	}
	if env.Error != nil {
		return nil, env.Error
	}
	if len(env.OK) == 0 {
		return nil, fmt.Errorf("abi: %s returned neither ok nor error", method)
	}
	var res T
	if err := json.Unmarshal(env.OK, &res); err != nil {
		return nil, fmt.Errorf("abi: decoding %s result: %w", method, err)
	}
	return &res, nil
}

// Adapter is a core.Adapter whose methods run in a plugin through c.
type Adapter struct{ C Caller }

// Describe implements core.Adapter.
func (a Adapter) Describe(ctx context.Context) (*core.AdapterInfo, error) {
	return call[core.AdapterInfo](ctx, a.C, MethodDescribe, nil)
}

// BuildRequest implements core.Adapter.
func (a Adapter) BuildRequest(ctx context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	return call[core.HTTPRequest](ctx, a.C, MethodBuildRequest, req)
}

// ParseResponse implements core.Adapter.
func (a Adapter) ParseResponse(ctx context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	return call[core.SeatAnswer](ctx, a.C, MethodParseResponse, res)
}

// Protocol is a core.Protocol whose methods run in a plugin through c.
type Protocol struct{ C Caller }

// Describe implements core.Protocol.
func (p Protocol) Describe(ctx context.Context) (*core.ProtocolInfo, error) {
	return call[core.ProtocolInfo](ctx, p.C, MethodDescribe, nil)
}

// Plan implements core.Protocol.
func (p Protocol) Plan(ctx context.Context, task *core.JudgeTask) (*core.JudgePlan, error) {
	return call[core.JudgePlan](ctx, p.C, MethodPlan, task)
}

// Score implements core.Protocol.
func (p Protocol) Score(ctx context.Context, in *core.JudgeVerdicts) (*core.JudgeScores, error) {
	return call[core.JudgeScores](ctx, p.C, MethodScore, in)
}

var (
	_ core.Adapter  = Adapter{}
	_ core.Protocol = Protocol{}
)
