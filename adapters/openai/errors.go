package openai

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/core"
)

// errorBody is every shape of error the OpenAI-compatible servers send:
// {"error":{…}} (OpenAI, Groq, Together, OpenRouter), {"error":"…"}
// (Ollama), or the fields at the top level (vLLM).
type errorBody struct {
	Error   json.RawMessage `json:"error"`
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"`
}

type errorObject struct {
	Message string          `json:"message"`
	Type    string          `json:"type"`
	Code    json.RawMessage `json:"code"` // a string (OpenAI) or a number (OpenRouter)
}

// providerError is what an error body says, whatever its shape.
type providerError struct {
	message, typ, code string
}

func readError(body []byte) providerError {
	var b errorBody
	if json.Unmarshal(body, &b) != nil {
		return providerError{}
	}
	e := providerError{message: b.Message, typ: b.Type, code: codeString(b.Code)}
	raw := bytes.TrimSpace(b.Error)
	switch {
	case len(raw) == 0 || isNull(raw):
	case raw[0] == '"':
		var s string
		if json.Unmarshal(raw, &s) == nil {
			e.message = s
		}
	default:
		var o errorObject
		if json.Unmarshal(raw, &o) == nil {
			e = providerError{message: o.Message, typ: o.Type, code: codeString(o.Code)}
		}
	}
	return e
}

func codeString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || isNull(raw) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
}

// failure classifies a failed call from its status and error body.
func failure(status int, body []byte) *core.SeatAnswer {
	e := readError(body)
	msg := reply.Shorten(e.message)
	if msg == "" {
		msg = "provider answered HTTP " + strconv.Itoa(status)
	}
	return &core.SeatAnswer{Error: &core.ProviderError{Class: classify(status, e), Message: msg, Status: status}}
}

func classify(status int, e providerError) core.ErrorClass {
	// An error inside a 200 (OpenRouter) carries the real status as its code.
	effective := status
	if status >= 200 && status <= 299 {
		if n, err := strconv.Atoi(e.code); err == nil && n >= 400 && n <= 599 {
			effective = n
		}
	}
	switch {
	case e.code == "context_length_exceeded":
		return core.ErrorContextTooLong
	case e.code == "insufficient_quota" || e.typ == "insufficient_quota":
		// A 429 that backing off cannot cure: the account cannot pay.
		return core.ErrorAuthRefused
	case (effective == 400 || effective == 422) && saysTooLong(e.message):
		return core.ErrorContextTooLong
	}
	return reply.ClassifyStatus(effective)
}

// saysTooLong recognises the ways compatible servers say the prompt does not
// fit the model's context.
func saysTooLong(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"context length", "context_length", "context window", "too many tokens", "too long", "reduce the length"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
