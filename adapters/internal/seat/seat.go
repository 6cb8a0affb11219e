// Package seat holds the checks every provider adapter makes of a seat
// request before translating it, and the encoding of the request body it
// translates it to. It is pure and compiles for WebAssembly, like the
// adapters that use it.
package seat

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/conclavehq/conclave/core"
)

// Check refuses a request no provider could serve: none at all, no model, a
// negative token cap, or a message whose role is not system, user or
// assistant.
func Check(req *core.SeatRequest) error {
	if req == nil {
		return errors.New("no seat request")
	}
	if req.Model == "" {
		return errors.New("model is required")
	}
	if req.MaxTokens < 0 {
		return fmt.Errorf("max_tokens must not be negative, got %d", req.MaxTokens)
	}
	for i, m := range req.Messages {
		if !core.ValidRole(m.Role) {
			return fmt.Errorf("message %d has unknown role %q", i, m.Role)
		}
	}
	return nil
}

// Conversational refuses a request with no user or assistant message, for
// providers that reject a conversation of system messages alone.
func Conversational(req *core.SeatRequest) error {
	for _, m := range req.Messages {
		if m.Role != core.RoleSystem {
			return nil
		}
	}
	return errors.New("no user or assistant message")
}

// Body encodes a provider request body as JSON without HTML escaping, so
// that prompts reach the provider as written, and with no newline after
// it; struct field order makes the bytes deterministic. It encodes into a
// pooled buffer and returns a copy of exactly the body's length: growing a
// fresh buffer to a judge's prompt allocated about twice the body.
func Body(v any) ([]byte, error) {
	buf := bodyBuffers.Get().(*bytes.Buffer)
	defer putBodyBuffer(buf)
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})), nil
}

// maxPooledBody is the largest buffer kept for reuse: a rare huge request
// does not pin its buffer for the life of the process.
const maxPooledBody = 1 << 20

var bodyBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

func putBodyBuffer(buf *bytes.Buffer) {
	if buf.Cap() > maxPooledBody {
		return
	}
	buf.Reset()
	bodyBuffers.Put(buf)
}
