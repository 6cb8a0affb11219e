package anthropic

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/core"
)

// errorBody is Anthropic's error shape: {"type":"error","error":{"type","message"}}.
type errorBody struct {
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// failure classifies a failed call from its status and error body.
func failure(status int, body []byte) *core.SeatAnswer {
	var e errorBody
	_ = json.Unmarshal(body, &e) // an unreadable body leaves the status to decide
	msg := reply.Shorten(e.Error.Message)
	if msg == "" {
		msg = "provider answered HTTP " + strconv.Itoa(status)
	}
	class := classify(status, e.Error.Type, e.Error.Message)
	return &core.SeatAnswer{Error: &core.ProviderError{Class: class, Message: msg, Status: status}}
}

func classify(status int, typ, msg string) core.ErrorClass {
	switch typ {
	case "rate_limit_error":
		return core.ErrorRateLimited
	case "overloaded_error", "api_error":
		return core.ErrorOverloaded
	case "timeout_error":
		return core.ErrorTimeout
	case "authentication_error", "permission_error", "billing_error":
		return core.ErrorAuthRefused
	case "request_too_large":
		return core.ErrorContextTooLong
	}
	if (status == 400 || status == 422) && saysTooLong(msg) {
		return core.ErrorContextTooLong
	}
	return reply.ClassifyStatus(status)
}

// saysTooLong recognises "prompt is too long: 210000 tokens > 200000
// maximum" and "input length and `max_tokens` exceed context limit".
func saysTooLong(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"too long", "context limit", "context window", "context length"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
