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
		isError = true
	}
	return &toolResult{Content: []textContent{{Type: "text", Text: string(b)}}, IsError: isError}
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
		return textResult(transportError{Error: string(core.CodeInternalError),
			Detail: "The call failed before the service answered. Retry with the same arguments."}, true)
	}
	body, merr := marshal(wire.ErrorOf(e))
	if merr != nil {
		return textResult(transportError{Error: string(core.CodeInternalError), Detail: "The error could not be encoded. Retry."}, true)
	}
	fe := forwardedError{HTTPStatus: core.InfoFor(e.Code).Status, Error: body}
	if requestID != "" || carrier.RetryAfterSeconds(e) > 0 {
		fe.Conclave = &forwardedBlock{RequestID: requestID, RetryAfterSeconds: carrier.RetryAfterSeconds(e)}
	}
	return textResult(fe, true)
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
	return textResult(selfAnsweredError{HTTPStatus: e.HTTPStatus(),
		Error: selfAnsweredBody{Code: string(e.Code), Message: e.Message}, Conclave: extra}, true)
}
