package core

import "context"

// Adapter translates between Conclave's seat calls and one provider's wire
// format. It is pure: BuildRequest and ParseResponse do no I/O, read no
// clock, environment or file, and never see a credential. The egress layer
// sends what BuildRequest built, injects the credential, and hands the
// provider's answer to ParseResponse.
//
// The same Adapter runs on three carriers — compiled in (native), as a
// WebAssembly module (plugins/wasmhost) or as a go-plugin process
// (plugins/goplugin) — and core/adaptertest's golden fixtures must give the
// same results through each. Implementations must be safe for concurrent use.
type Adapter interface {
	// Describe names the adapter and the credential scheme its provider
	// expects, so the egress layer knows what to inject.
	Describe(ctx context.Context) (*AdapterInfo, error)
	// BuildRequest builds the provider HTTP request for one seat call.
	BuildRequest(ctx context.Context, req *SeatRequest) (*HTTPRequest, error)
	// ParseResponse reads the provider's HTTP response into a seat answer.
	// A provider-side failure (429, overload, context too long, …) is a
	// SeatAnswer whose Error is set, not a Go error; a Go error means the
	// adapter itself failed and is treated as ErrorMalformed.
	ParseResponse(ctx context.Context, res *HTTPResponse) (*SeatAnswer, error)
}

// AdapterInfo describes an adapter.
type AdapterInfo struct {
	Name    string     `json:"name"`    // "openai", "anthropic", "gemini", "bedrock", …
	Version string     `json:"version"` // the adapter's own version
	Auth    AuthScheme `json:"auth"`    // the credential scheme its provider expects
}

// AuthScheme is how a credential is attached to a provider request. The
// egress layer applies it; adapters only name it.
type AuthScheme string

// Credential schemes.
const (
	AuthBearer       AuthScheme = "bearer"         // Authorization: Bearer <key>
	AuthXAPIKey      AuthScheme = "x-api-key"      // x-api-key: <key> (Anthropic)
	AuthGoogleAPIKey AuthScheme = "google-api-key" // x-goog-api-key: <key> (Gemini)
	AuthAWSSigV4     AuthScheme = "aws-sigv4"      // AWS Signature V4 over the final bytes (Bedrock)
	AuthNone         AuthScheme = "none"           // no credential (local servers)
)

// SeatRequest is one engine call as the deliberation engine asks for it.
type SeatRequest struct {
	// Model is the provider's model identifier (Engine.Model).
	Model    string    `json:"model"`
	System   string    `json:"system,omitempty"`
	Messages []Message `json:"messages"`
	// MaxTokens caps the answer's length; 0 lets the adapter choose.
	MaxTokens int `json:"max_tokens,omitempty"`
	// Temperature is omitted from the provider request when nil.
	Temperature *float64 `json:"temperature,omitempty"`
	// JSONOutput asks the provider for a JSON object when it can enforce one.
	JSONOutput bool `json:"json_output,omitempty"`
}

// HTTPRequest is a provider request as an adapter builds it. Path is
// relative to the engine's endpoint (it may carry a query). Headers an
// adapter sets for authentication are stripped by the egress layer.
type HTTPRequest struct {
	Method string            `json:"method"`
	Path   string            `json:"path"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body,omitempty"`
}

// HTTPResponse is a provider response as the egress layer received it.
type HTTPResponse struct {
	Status int               `json:"status"`
	Header map[string]string `json:"header,omitempty"`
	Body   []byte            `json:"body,omitempty"`
}

// SeatAnswer is what one engine call produced.
type SeatAnswer struct {
	Text            string `json:"text"`
	InputTokens     int    `json:"input_tokens"`
	OutputTokens    int    `json:"output_tokens"`
	ReasoningTokens int    `json:"reasoning_tokens,omitempty"`
	// Finish is FinishStop, FinishLength or FinishFiltered; "" on an error.
	Finish string `json:"finish,omitempty"`
	// Error is set when the provider refused or failed the call.
	Error *ProviderError `json:"error,omitempty"`
	// Source is where the credential the call carried came from
	// (SourceService, or SourceBYOK of a provider), "" when it carried
	// none. The egress layer sets it; an adapter's value is discarded, and
	// it never crosses a plugin boundary.
	Source string `json:"-"`
}

// Finish reasons of a seat answer.
const (
	FinishStop     = "stop"
	FinishLength   = "length"
	FinishFiltered = "content_filter"
)

// ProviderError is a provider-side failure, classified.
type ProviderError struct {
	Class   ErrorClass `json:"class"`
	Message string     `json:"message"`
	// Status is the provider's HTTP status, when there was one.
	Status int `json:"status,omitempty"`
}

func (e *ProviderError) Error() string { return string(e.Class) + ": " + e.Message }

// ErrorClass classifies a failed engine call.
type ErrorClass string

// Error classes.
const (
	ErrorRateLimited    ErrorClass = "rate_limited"
	ErrorOverloaded     ErrorClass = "overloaded"
	ErrorTimeout        ErrorClass = "timeout"
	ErrorContextTooLong ErrorClass = "context_too_long"
	ErrorAuthRefused    ErrorClass = "auth_refused"
	ErrorBadRequest     ErrorClass = "bad_request"
	ErrorMalformed      ErrorClass = "malformed"
	ErrorEgressRefused  ErrorClass = "egress_refused" // the host refused to send (allow-list, size cap)
	ErrorAdapterFailed  ErrorClass = "adapter_failed" // the adapter or its carrier failed (trap, crash)
)

// ErrorClasses lists every class, in a stable order.
var ErrorClasses = []ErrorClass{
	ErrorRateLimited, ErrorOverloaded, ErrorTimeout, ErrorContextTooLong, ErrorAuthRefused,
	ErrorBadRequest, ErrorMalformed, ErrorEgressRefused, ErrorAdapterFailed,
}

// Retryable reports whether the same call may succeed if sent again after a
// back-off: rate limits, overloads and timeouts.
func (c ErrorClass) Retryable() bool {
	return c == ErrorRateLimited || c == ErrorOverloaded || c == ErrorTimeout
}
