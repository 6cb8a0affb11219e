package api

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/carrier"
	"github.com/conclavehq/conclave/core/wire"
)

// errorEnvelope is the spec's error body.
type errorEnvelope struct {
	Error    wire.ErrorObject `json:"error"`
	Conclave requestBlock     `json:"conclave"`
}

// requestBlock is the envelope's conclave block: the request id, then the
// error's Detail (mode_invalid's refusals, say) under the wire names core
// gave them. Detail never replaces the request id.
type requestBlock struct {
	RequestID *string
	Detail    map[string]any
}

// MarshalJSON writes request_id first, then the detail by name, so that
// equal errors are written byte for byte alike; like every body, with HTML
// left unescaped (wire.Marshal).
func (b requestBlock) MarshalJSON() ([]byte, error) {
	var out bytes.Buffer
	out.WriteString(`{"request_id":`)
	id, err := wire.Marshal(b.RequestID)
	if err != nil {
		return nil, err
	}
	out.Write(bytes.TrimSpace(id))
	names := make([]string, 0, len(b.Detail))
	for name := range b.Detail {
		if name != "request_id" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		k, err := wire.Marshal(name)
		if err != nil {
			return nil, err
		}
		v, err := wire.Marshal(b.Detail[name])
		if err != nil {
			return nil, err
		}
		out.WriteByte(',')
		out.Write(bytes.TrimSpace(k))
		out.WriteByte(':')
		out.Write(bytes.TrimSpace(v))
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// writeError answers with err in the spec's envelope. Errors without a code
// are internal errors. The cause of any 5xx is logged, never sent. What the
// error carries beside its object (core.Error.Detail) is written into the
// conclave block, next to the request id: this is the one place that does.
func writeError(w http.ResponseWriter, r *http.Request, err error) {
	e := core.AsError(err)
	info := core.InfoFor(e.Code)
	st := stateOf(r)
	if st != nil {
		st.code = string(e.Code)
	}
	if info.Status >= 500 && e.Err != nil && st != nil && st.logger != nil {
		st.logger.ErrorContext(r.Context(), "request failed", slog.String("request_id", st.id),
			slog.String("code", string(e.Code)), slog.String("error", e.Err.Error()))
	}
	body := errorEnvelope{Error: wire.ErrorOf(e), Conclave: requestBlock{Detail: e.Detail}}
	if id := RequestID(r.Context()); id != "" {
		body.Conclave.RequestID = &id
	}
	if secs := carrier.RetryAfterSeconds(e); secs > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
	writeJSON(w, info.Status, body)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := wire.Marshal(v)
	if err != nil {
		// Only a programming error (a value JSON cannot encode) gets here.
		info := core.InfoFor(core.CodeInternalError)
		status = info.Status
		body, _ = wire.Marshal(errorEnvelope{Error: wire.ErrorOf(core.Errorf(core.CodeInternalError,
			"The service failed to encode its answer. Retry with the same Idempotency-Key."))})
	}
	writeRawJSON(w, status, body)
}

// writeRawJSON writes an already encoded JSON body, with its length, so
// the response is complete for the client as soon as it is flushed.
func writeRawJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing useful to do
}

// decodeJSON reads a JSON object body into v and returns the refusal every
// JSON endpoint shares: wrong media type, too large, not JSON, not an
// object, or a body that could not be read in full. Fields v does not have
// are ignored: the OpenAI-shaped endpoints accept what OpenAI clients send.
func decodeJSON(w http.ResponseWriter, r *http.Request, maxBytes int64, v any) error {
	return decodeBody(w, r, maxBytes, v, false, false)
}

// decodeClosedJSON is decodeJSON for a closed body: a field v does not have
// is refused (400 invalid_request, naming it). With emptyOK an empty body
// reads as {}.
func decodeClosedJSON(w http.ResponseWriter, r *http.Request, maxBytes int64, v any, emptyOK bool) error {
	return decodeBody(w, r, maxBytes, v, true, emptyOK)
}

func decodeBody(w http.ResponseWriter, r *http.Request, maxBytes int64, v any, closed, emptyOK bool) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONMediaType(ct) {
		return core.Errorf(core.CodeUnsupportedMediaType, "Send the body as application/json, not %s.", ct)
	}
	var body io.Reader = http.MaxBytesReader(w, r.Body, maxBytes)
	if emptyOK {
		br := bufio.NewReader(body)
		if _, err := br.Peek(1); errors.Is(err, io.EOF) {
			return nil
		}
		body = br
	}
	dec := json.NewDecoder(body)
	if closed {
		dec.DisallowUnknownFields()
	}
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		var typeErr *json.UnmarshalTypeError
		var syntaxErr *json.SyntaxError
		switch {
		case errors.As(err, &tooBig):
			return carrier.BodyTooLarge(maxBytes)
		case errors.As(err, &typeErr) && typeErr.Field == "":
			return core.Errorf(core.CodeInvalidJSON, "The request body must be a JSON object.")
		case typeErr != nil:
			// A field of the wrong type: the endpoint validates fields
			// itself and decodes them loosely, so this is a malformed body.
			return core.Errorf(core.CodeInvalidJSON, "The request body field %q has the wrong type.", typeErr.Field).WithParam(typeErr.Field)
		case errors.As(err, &syntaxErr):
			return core.Errorf(core.CodeInvalidJSON, "The request body is not valid JSON: %v.", err)
		case errors.Is(err, io.EOF):
			return core.Errorf(core.CodeInvalidJSON, "The request body is empty: send a JSON object.")
		case errors.Is(err, io.ErrUnexpectedEOF):
			return core.Errorf(core.CodeInvalidJSON, "The request body is not valid JSON: it ends before its JSON object does.")
		}
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok && closed {
			name = strings.Trim(name, `"`)
			return core.Errorf(core.CodeInvalidRequest, "The request body has a field this endpoint does not read: %q. It reads only %s.",
				name, strings.Join(jsonFields(v), ", ")).WithParam(name)
		}
		// The body could not be read: the connection ended or timed out
		// before it was complete. The reader's error names sockets, so it
		// stays out of the answer.
		return core.Errorf(core.CodeInvalidJSON, "The request body could not be read in full: the connection ended or timed out before it was complete.")
	}
	if dec.More() {
		return core.Errorf(core.CodeInvalidJSON, "The request body must hold exactly one JSON object.")
	}
	return nil
}

// jsonFields are the JSON names of the fields of the struct v points to.
func jsonFields(v any) []string {
	t := reflect.TypeOf(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var names []string
	if t.Kind() != reflect.Struct {
		return names
	}
	for f := range t.Fields() {
		if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "" && name != "-" {
			names = append(names, name)
		}
	}
	return names
}

func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}
