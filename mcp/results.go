package mcp

import (
	"encoding/json"
	"errors"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/wire"
)

// The three shapes of a failed tool's result text (the spec's "Tool result
// error shapes"). A client branches on error.code when error is an object
// and on error when it is a string.

// forwardedError is a forwarding tool's failure: the REST status and the
// REST error object, with the request id when there is one.
type forwardedError struct {
	HTTPStatus int             `json:"http_status"`
	Error      json.RawMessage `json:"error"`
	Conclave   *forwardedBlock `json:"conclave,omitempty"`
}

type forwardedBlock struct {
	RequestID         string `json:"request_id,omitempty"`
	RetryAfterSeconds int    `json:"retry_after_seconds,omitempty"`
}

// selfAnsweredError is a self-answered tool's failure: the status, the
// code and message, and the tool's extra detail.
type selfAnsweredError struct {
	HTTPStatus int              `json:"http_status"`
	Error      selfAnsweredBody `json:"error"`
	Conclave   map[string]any   `json:"conclave"`
}

type selfAnsweredBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// transportError is a failure before any answer: a plain string code.
type transportError struct {
	Error  string `json:"error"`
	Detail string `json:"detail"`
}

// textResult is a result whose text is v's JSON.
func textResult(v any, isError bool) *toolResult {
	b, err := marshal(v)
	if err != nil {
		b, _ = marshal(transportError{Error: string(core.CodeInternalError), Detail: "The answer could not be encoded. Retry."})
		return &toolResult{Content: []textContent{{Type: "text", Text: string(b)}}, IsError: true, code: core.CodeInternalError}
	}
	return &toolResult{Content: []textContent{{Type: "text", Text: string(b)}}, IsError: isError}
}

// failure is a failed result whose text is v's JSON and whose code is
// code (internal_error when v cannot be encoded).
func failure(v any, code core.Code) *toolResult {
	r := textResult(v, true)
	if r.code == "" {
		r.code = code
	}
	return r
}

// structuredResult is a successful result of a tool that declares an
// output schema: v as structuredContent and the same JSON as text.
func structuredResult(v any) *toolResult {
	r := textResult(v, false)
	if !r.IsError {
		r.StructuredContent = json.RawMessage(r.Content[0].Text)
	}
	return r
}

// forwardedFailure renders a forwarding tool's failure. An error without a
// wire code failed before the service answered: the transport shape.
func forwardedFailure(err error, requestID string) *toolResult {
	var e *core.Error
	if !errors.As(err, &e) {
		return failure(transportError{Error: string(core.CodeInternalError),
			Detail: "The call failed before the service answered. Retry with the same arguments."}, core.CodeInternalError)
	}
	body, merr := marshal(wire.ErrorOf(e))
	if merr != nil {
		return failure(transportError{Error: string(core.CodeInternalError), Detail: "The error could not be encoded. Retry."}, core.CodeInternalError)
	}
	fe := forwardedError{HTTPStatus: core.InfoFor(e.Code).Status, Error: body}
	if requestID != "" || carrier.RetryAfterSeconds(e) > 0 {
		fe.Conclave = &forwardedBlock{RequestID: requestID, RetryAfterSeconds: carrier.RetryAfterSeconds(e)}
	}
	return failure(fe, e.Code)
}

// selfAnsweredFailure renders a self-answered tool's failure. Its extra
// block is the error's Detail (mode_invalid's refusals, say; the keys are
// the wire's names) and the wait of a refusal that has one: the one place
// a refusal's detail reaches the caller.
func selfAnsweredFailure(err error) *toolResult {
	e := core.AsError(err)
	extra := make(map[string]any, len(e.Detail)+1)
	for k, v := range e.Detail {
		extra[k] = v
	}
	if secs := carrier.RetryAfterSeconds(e); secs > 0 {
		extra["retry_after_seconds"] = secs
	}
	return failure(selfAnsweredError{HTTPStatus: e.HTTPStatus(),
		Error: selfAnsweredBody{Code: string(e.Code), Message: e.Message}, Conclave: extra}, e.Code)
}
