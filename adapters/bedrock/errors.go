package bedrock

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/core"
)

// errorBody is an AWS JSON-protocol error. encoding/json matches field
// names without regard to case, so "Message" is read too.
type errorBody struct {
	Message string `json:"message"`
	Type    string `json:"__type"`
}

// failure classifies a failed call from its exception name, status and
// message.
func failure(status int, header map[string]string, body []byte) *core.SeatAnswer {
	var e errorBody
	_ = json.Unmarshal(body, &e) // an unreadable body leaves the header and status to decide
	exception := exceptionName(headerValue(header, "x-amzn-errortype"))
	if exception == "" {
		exception = exceptionName(e.Type)
	}
	msg := reply.Shorten(e.Message)
	if msg == "" && exception != "" {
		msg = reply.Shorten(exception)
	}
	if msg == "" {
		msg = "provider answered HTTP " + strconv.Itoa(status)
	}
	class := classify(status, exception, e.Message)
	return &core.SeatAnswer{Error: &core.ProviderError{Class: class, Message: msg, Status: status}}
}

// exceptionName reduces "ThrottlingException:http://internal.amazon.com/…"
// and "com.amazon.coral.validate#ValidationException" to the bare name.
func exceptionName(s string) string {
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// headerValue looks a header up without regard to case. Should two keys
// differ only in case, the smallest wins, so the result never depends on map
// order.
func headerValue(h map[string]string, name string) string {
	keys := make([]string, 0, 1)
	for k := range h {
		if strings.EqualFold(k, name) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	return h[keys[0]]
}

func classify(status int, exception, msg string) core.ErrorClass {
	switch exception {
	case "ThrottlingException", "ServiceQuotaExceededException", "TooManyRequestsException":
		return core.ErrorRateLimited
	case "ServiceUnavailableException", "ModelNotReadyException", "InternalServerException",
		"InternalFailure", "ModelErrorException":
		// ModelNotReadyException arrives as a 429, but waiting for the
		// model is not a rate limit.
		return core.ErrorOverloaded
	case "ModelTimeoutException":
		return core.ErrorTimeout
	case "AccessDeniedException", "UnrecognizedClientException", "ExpiredTokenException",
		"InvalidSignatureException", "IncompleteSignature", "MissingAuthenticationToken",
		"InvalidClientTokenId":
		return core.ErrorAuthRefused
	case "ValidationException":
		if saysTooLong(msg) {
			return core.ErrorContextTooLong
		}
		return core.ErrorBadRequest
	}
	if (status == 400 || status == 422) && saysTooLong(msg) {
		return core.ErrorContextTooLong
	}
	return reply.ClassifyStatus(status)
}

// saysTooLong recognises "Input is too long for requested model.", "too
// many input tokens" and Anthropic-on-Bedrock's "prompt is too long".
func saysTooLong(msg string) bool {
	msg = strings.ToLower(msg)
	for _, s := range []string{"too long", "too many input tokens", "too many tokens", "context length", "context window"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
