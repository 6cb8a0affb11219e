// Package openai translates seat calls to and from the OpenAI-compatible
// chat-completions API (POST {endpoint}/chat/completions). It covers OpenAI
// itself and the many servers that copy its wire format — Mistral, Together,
// Groq, OpenRouter, Ollama, vLLM — whose base URLs end in /v1.
//
// The request is {"model","messages","max_tokens"?,"temperature"?,
// "response_format"?}: the seat's system prompt becomes a leading system
// message and other messages keep their roles and places. JSONOutput asks for
// {"type":"json_object"}; because OpenAI refuses that mode unless a message
// mentions JSON, the adapter appends a one-line JSON instruction to the
// system prompt when no message does.
//
// The answer is choices[0].message.content (a string, or an array of parts
// whose text parts are joined); a refusal becomes a content_filter answer
// carrying the refusal text. completion_tokens includes reasoning tokens, and
// so does the seat answer's OutputTokens. Errors are classified from the
// status and the error object ({"error":{"message","type","code"}}, a bare
// {"error":"…"} from some local servers, or vLLM's top-level fields), and an
// error object inside a 200 response (OpenRouter) is classified too.
//
// The adapter is pure and safe for concurrent use.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/adapters/internal/seat"
	"github.com/conclavehq/conclave/core"
)

const (
	adapterName    = "openai"
	adapterVersion = "1.0.0"
	requestPath    = "/chat/completions"
)

// jsonInstruction is appended to the system prompt of a JSONOutput request
// whose messages never mention JSON, which OpenAI requires of json_object mode.
const jsonInstruction = "Answer with one JSON object only: no prose before or after it, no code fences."

// Adapter is the OpenAI-compatible chat-completions adapter. The zero value
// is ready to use and safe for concurrent use.
type Adapter struct{}

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }

// Describe implements core.Adapter.
func (*Adapter) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: adapterName, Version: adapterVersion, Auth: core.AuthBearer}, nil
}

type chatRequest struct {
	Model          string          `json:"model"`
	Messages       []chatMessage   `json:"messages"`
	MaxTokens      int             `json:"max_tokens,omitempty"`
	Temperature    *float64        `json:"temperature,omitempty"`
	ResponseFormat *responseFormat `json:"response_format,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type responseFormat struct {
	Type string `json:"type"`
}

// BuildRequest implements core.Adapter.
func (*Adapter) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	if err := validate(req); err != nil {
		return nil, fmt.Errorf("%s: %w", adapterName, err)
	}
	system := req.System
	if req.JSONOutput && !mentionsJSON(req) {
		system = joinNonEmpty(system, jsonInstruction)
	}
	body := chatRequest{
		Model:       req.Model,
		Messages:    make([]chatMessage, 0, len(req.Messages)+1),
		MaxTokens:   req.MaxTokens,
		Temperature: req.Temperature,
	}
	if strings.TrimSpace(system) != "" {
		body.Messages = append(body.Messages, chatMessage{Role: core.RoleSystem, Content: system})
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, chatMessage{Role: m.Role, Content: m.Content})
	}
	if req.JSONOutput {
		body.ResponseFormat = &responseFormat{Type: "json_object"}
	}
	b, err := seat.Body(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", adapterName, err)
	}
	return &core.HTTPRequest{
		Method: "POST",
		Path:   requestPath,
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   b,
	}, nil
}

// mentionsJSON reports whether any prompt text names JSON, as OpenAI's
// json_object mode demands.
func mentionsJSON(req *core.SeatRequest) bool {
	if containsFold(req.System, "json") {
		return true
	}
	for _, m := range req.Messages {
		if containsFold(m.Content, "json") {
			return true
		}
	}
	return false
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), sub)
}

func joinNonEmpty(a, b string) string {
	if strings.TrimSpace(a) == "" {
		return b
	}
	return a + "\n\n" + b
}

type chatResponse struct {
	Choices []chatChoice `json:"choices"`
	Usage   *chatUsage   `json:"usage"`
	// Error is set by OpenRouter when a request fails after a 200.
	Error json.RawMessage `json:"error"`
}

type chatChoice struct {
	Message      *choiceMessage `json:"message"`
	FinishReason *string        `json:"finish_reason"`
}

type choiceMessage struct {
	// Content is a string, null, or (Mistral's reasoning models) an array
	// of typed parts. Decoded as any, the common string is read in the
	// response's one pass rather than kept raw and decoded again.
	Content any     `json:"content"`
	Refusal *string `json:"refusal"`
}

type chatUsage struct {
	PromptTokens            int `json:"prompt_tokens"`
	CompletionTokens        int `json:"completion_tokens"`
	CompletionTokensDetails *struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

// ParseResponse implements core.Adapter.
func (*Adapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	if res == nil {
		return nil, fmt.Errorf("%s: no response", adapterName)
	}
	if res.Status < 200 || res.Status > 299 {
		return failure(res.Status, res.Body), nil
	}
	var r chatResponse
	if err := reply.Decode(res.Body, &r); err != nil {
		return reply.Malformed(res.Status, "response body is not a chat completion: "+reply.JSONProblem(err)), nil
	}
	if len(r.Choices) == 0 {
		if len(r.Error) > 0 && !isNull(r.Error) {
			return failure(res.Status, res.Body), nil
		}
		return reply.Malformed(res.Status, "response has no choices"), nil
	}
	choice := r.Choices[0]
	if choice.Message == nil {
		return reply.Malformed(res.Status, "response has no message"), nil
	}
	text, ok := contentText(choice.Message.Content)
	if !ok {
		return reply.Malformed(res.Status, "message content is neither text nor parts"), nil
	}
	finish := finishReason(choice.FinishReason)
	if text == "" && choice.Message.Refusal != nil && *choice.Message.Refusal != "" {
		text, finish = *choice.Message.Refusal, core.FinishFiltered
	}
	if text == "" && finish == core.FinishStop {
		return reply.Malformed(res.Status, "response has no answer text"), nil
	}
	ans := &core.SeatAnswer{Text: text, Finish: finish}
	if u := r.Usage; u != nil {
		ans.InputTokens = max(u.PromptTokens, 0)
		ans.OutputTokens = max(u.CompletionTokens, 0)
		if u.CompletionTokensDetails != nil {
			ans.ReasoningTokens = max(u.CompletionTokensDetails.ReasoningTokens, 0)
		}
	}
	return ans, nil
}

// contentText reads message content: a string, null (no text), or an array
// whose "text" parts are joined (thinking parts are skipped). Anything else,
// or a part that is not an object with string type and text, is not
// content.
func contentText(content any) (string, bool) {
	switch c := content.(type) {
	case nil:
		return "", true
	case string:
		return c, true
	case []any:
		var b strings.Builder
		for _, p := range c {
			if p == nil {
				continue // a null part, as decoding into a struct took it
			}
			part, ok := p.(map[string]any)
			if !ok {
				return "", false
			}
			typ, ok1 := optionalString(part["type"])
			text, ok2 := optionalString(part["text"])
			if !ok1 || !ok2 {
				return "", false
			}
			if typ == "text" {
				b.WriteString(text)
			}
		}
		return b.String(), true
	}
	return "", false
}

// optionalString is a part's field as a string: absent or null is "", and
// any other type is not a string.
func optionalString(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s, ok := v.(string)
	return s, ok
}

func finishReason(r *string) string {
	if r == nil {
		return core.FinishStop
	}
	switch *r {
	case "length", "max_tokens":
		return core.FinishLength
	case "content_filter":
		return core.FinishFiltered
	}
	// stop, tool_calls, function_call, and anything a compatible server
	// invents: the model ended its turn.
	return core.FinishStop
}

func isNull(raw json.RawMessage) bool {
	return string(bytes.TrimSpace(raw)) == "null"
}

var _ core.Adapter = (*Adapter)(nil)

// validate adds, to the checks every adapter makes, this provider's refusal
// of a conversation of system messages alone.
func validate(req *core.SeatRequest) error {
	if err := seat.Check(req); err != nil {
		return err
	}
	return seat.Conversational(req)
}
