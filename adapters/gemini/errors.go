package gemini

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/core"
)

// apiError is a Google API error: {"code","message","status","details"}.
type apiError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Reason string `json:"reason"`
	} `json:"details"`
}

type errorEnvelope struct {
	Error *apiError `json:"error"`
}

// readError reads {"error":{…}}, or [{"error":{…}}] as some Google front
// ends send it.
func readError(body []byte) apiError {
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		var list []errorEnvelope
		if json.Unmarshal(trimmed, &list) == nil && len(list) > 0 && list[0].Error != nil {
			return *list[0].Error
		}
		return apiError{}
	}
	var env errorEnvelope
	if json.Unmarshal(trimmed, &env) == nil && env.Error != nil {
		return *env.Error
	}
	return apiError{}
}

// failure classifies a failed call from its status and error body.
func failure(status int, body []byte) *core.SeatAnswer {
	e := readError(body)
	msg := reply.Shorten(e.Message)
	if msg == "" {
		msg = "provider answered HTTP " + strconv.Itoa(status)
	}
	return &core.SeatAnswer{Error: &core.ProviderError{Class: classify(status, e), Message: msg, Status: status}}
}

func classify(status int, e apiError) core.ErrorClass {
	if status >= 200 && status <= 299 && e.Code >= 400 && e.Code <= 599 {
		status = e.Code
	}
	if badKey(e) {
		return core.ErrorAuthRefused
	}
	switch e.Status {
	case "RESOURCE_EXHAUSTED":
		return core.ErrorRateLimited
	case "UNAVAILABLE", "INTERNAL":
		return core.ErrorOverloaded
	case "DEADLINE_EXCEEDED":
		return core.ErrorTimeout
	case "UNAUTHENTICATED", "PERMISSION_DENIED":
		return core.ErrorAuthRefused
	}
	if (status == 400 || status == 422) && saysTooLong(e.Message) {
		return core.ErrorContextTooLong
	}
	return reply.ClassifyStatus(status)
}

// badKey recognises the 400 INVALID_ARGUMENT Gemini answers for an invalid
// or expired API key: a credential problem, not a bad request.
func badKey(e apiError) bool {
	for _, d := range e.Details {
		if d.Reason == "API_KEY_INVALID" || d.Reason == "API_KEY_EXPIRED" {
			return true
		}
	}
	return strings.Contains(strings.ToLower(e.Message), "api key not valid")
}

// saysTooLong recognises "The input token count (1048580) exceeds the
// maximum number of tokens allowed (1048576)."
func saysTooLong(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"exceeds the maximum number of tokens", "input token count", "too long"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
