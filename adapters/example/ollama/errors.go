package ollama

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/core"
)

// errorBody is Ollama's error shape, {"error":"…"}.
type errorBody struct {
	Error string `json:"error"`
}

// failure classifies a non-2xx answer from its status and Ollama's message.
func failure(status int, body []byte) *core.SeatAnswer {
	var e errorBody
	_ = json.Unmarshal(body, &e) // a proxy's HTML or text page leaves e empty
	msg := reply.Shorten(e.Error)
	if msg == "" {
		msg = "provider answered HTTP " + strconv.Itoa(status)
	}
	return &core.SeatAnswer{Error: &core.ProviderError{Class: classify(status, e.Error), Message: msg, Status: status}}
}

// classify maps a status, and for a 400 the message, to an error class.
// The class decides what the egress layer and the deliberation do next:
// rate_limited, overloaded and timeout are retried with back-off; the
// others go straight to the seat's backup engine.
func classify(status int, msg string) core.ErrorClass {
	switch {
	case status == 429:
		return core.ErrorRateLimited
	case status == 408 || status == 504:
		return core.ErrorTimeout
	case status == 401 || status == 403:
		return core.ErrorAuthRefused
	case status == 413:
		return core.ErrorContextTooLong
	case status == 400 && saysTooLong(msg):
		return core.ErrorContextTooLong
	case status >= 500 && status <= 599:
		// 500 (the runner failed), 502 (a proxy lost Ollama), 503 (the
		// request queue is full): another try, later, may well succeed.
		return core.ErrorOverloaded
	case status >= 400 && status <= 499:
		// 404 is a model that was never pulled; 400 a request Ollama
		// cannot use. Sending it again cannot help.
		return core.ErrorBadRequest
	}
	// 1xx and 3xx: nothing an Ollama server answers to a chat call.
	return core.ErrorMalformed
}

// saysTooLong recognises the ways Ollama, and the proxies in front of it,
// say that the input does not fit the model's context.
func saysTooLong(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"context length", "context window", "context size", "num_ctx", "too long", "too many tokens"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
