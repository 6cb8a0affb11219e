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
// it; struct field order makes the bytes deterministic.
func Body(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}
