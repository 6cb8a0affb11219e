package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/wire"
)

// JSON-RPC 2.0 error codes, and the two MCP adds for its transport.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	// codeServerError is JSON-RPC's implementation-defined server error: a
	// refusal whose wire code rides in the error's data.
	codeServerError = -32000
	// codeUnauthorized is the tool server's "sign in" error.
	codeUnauthorized = -32001
)

// internalErrorMessage is the spec's message for a fault.
const internalErrorMessage = "Internal error. Retry."

// message is one JSON-RPC message as received. A request has an id; a
// notification has none.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  *string         `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	hasID   bool
	// tool is the label of the tool a tools/call calls (toolSet.label),
	// noted when the message is read; "" for another method.
	tool string
}

// response is one JSON-RPC response: Result or Error.
type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *rpcError       `json:"error,omitempty"`
}

type rpcError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Data    any    `json:"data,omitempty"`
}

// refusalData is the data of an error that carries a wire code: the HTTP
// status and code REST would answer, so a client can branch on the code.
type refusalData struct {
	HTTPStatus int    `json:"http_status"`
	Code       string `json:"code"`
}

var nullID = json.RawMessage("null")

func resultOf(id json.RawMessage, v any) *response {
	return &response{JSONRPC: "2.0", ID: id, Result: v}
}

func errorOf(id json.RawMessage, code int, msg string, data any) *response {
	if id == nil {
		id = nullID
	}
	return &response{JSONRPC: "2.0", ID: id, Error: &rpcError{Code: code, Message: msg, Data: data}}
}

// decodeMessage reads one element of a body: a request, a notification, or
// (for a message the server need not answer) a client's response. It
// returns the error response for an element that is none of them.
func decodeMessage(raw json.RawMessage) (*message, *response) {
	if firstByte(raw) != '{' {
		return nil, errorOf(nil, codeInvalidRequest, "Invalid Request: each message must be a JSON object.", nil)
	}
	var m message
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, errorOf(nil, codeInvalidRequest, "Invalid Request: a member has the wrong type.", nil)
	}
	// A present id, null included, decodes to its raw bytes; only an
	// absent one leaves it nil.
	m.hasID = m.ID != nil
	if m.hasID && !validID(m.ID) {
		return nil, errorOf(nil, codeInvalidRequest, fmt.Sprintf("Invalid Request: id must be a string or a number, of at most %d bytes.", maxIDBytes), nil)
	}
	if m.JSONRPC != "2.0" {
		return nil, errorOf(m.ID, codeInvalidRequest, `Invalid Request: jsonrpc must be "2.0".`, nil)
	}
	if m.Method == nil {
		if m.Result != nil || m.Error != nil {
			m.hasID = false // a client's response: nothing to answer
			return &m, nil
		}
		return nil, errorOf(m.ID, codeInvalidRequest, "Invalid Request: method is required.", nil)
	}
	return &m, nil
}

// maxIDBytes bounds a request id as sent (a string's quotes and escapes
// included): every answer echoes it.
const maxIDBytes = 128

// validID reports whether id is a JSON string or number of at most
// maxIDBytes.
func validID(id json.RawMessage) bool {
	id = bytes.TrimSpace(id)
	if len(id) == 0 || len(id) > maxIDBytes {
		return false
	}
	if id[0] == '"' {
		var s string
		return json.Unmarshal(id, &s) == nil
	}
	var n json.Number
	return json.Unmarshal(id, &n) == nil && id[0] != '{' && id[0] != '['
}

// firstByte is the first non-space byte of b, or 0.
func firstByte(b []byte) byte {
	b = bytes.TrimLeft(b, " \t\r\n")
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

// marshal encodes v as every carrier does (wire.Marshal), without the
// trailing newline: an event stream's data line must end with the event.
func marshal(v any) ([]byte, error) {
	b, err := wire.Marshal(v)
	return bytes.TrimSuffix(b, []byte("\n")), err
}

// writeJSON writes v as an application/json answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		// Only a value JSON cannot encode gets here: a fault.
		status = http.StatusOK
		body, _ = marshal(errorOf(nil, codeInternalError, internalErrorMessage, nil))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing useful to do
}

// writeRefusal answers a request refused before any message in it was
// read, with the HTTP status of e's code and a JSON-RPC error (id null)
// whose data names the code. A refusal with a wait sets Retry-After.
func writeRefusal(w http.ResponseWriter, r *http.Request, rpcCode int, msg string, e *core.Error) {
	info := core.InfoFor(e.Code)
	if secs := carrier.RetryAfterSeconds(e); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	answer(w, r, info.Status, errorOf(nil, rpcCode, msg, refusalData{HTTPStatus: info.Status, Code: string(e.Code)}))
}
