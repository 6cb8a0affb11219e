package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// anthropicFormat is Anthropic Messages:
// POST {Endpoint("anthropic")}/v1/messages, with an anthropic-version header.
type anthropicFormat struct{}

type anthropicRequest struct {
	Model       string             `json:"model"`
	MaxTokens   *int               `json:"max_tokens"`
	System      json.RawMessage    `json:"system"`
	Messages    []anthropicMessage `json:"messages"`
	Temperature *float64           `json:"temperature"`
	Stream      bool               `json:"stream"`
}

type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type anthropicResponse struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []anthropicBlock `json:"content"`
	StopReason   string           `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

type anthropicBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

type anthropicError struct {
	Type  string             `json:"type"`
	Error anthropicErrorBody `json:"error"`
}

type anthropicErrorBody struct {
	Type    string `json:"type"`
	Message string `json:"message"`
}

func (anthropicFormat) name() string                   { return "anthropic" }
func (anthropicFormat) pathModel(*http.Request) string { return "" }
func (anthropicFormat) apiKey(r *http.Request) string {
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}

func (anthropicFormat) decode(r *http.Request, body []byte) (*call, error) {
	var req anthropicRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	c := &call{model: req.Model}
	switch {
	case r.Header.Get("Anthropic-Version") == "":
		return c, errors.New("anthropic-version: header is required")
	case req.Model == "":
		return c, errors.New("model: field required")
	case req.MaxTokens == nil:
		return c, errors.New("max_tokens: field required")
	case *req.MaxTokens < 1:
		return c, errors.New("max_tokens: must be at least 1")
	case len(req.Messages) == 0:
		return c, errors.New("messages: at least one message is required")
	case req.Stream:
		return c, errors.New("the simulated provider does not stream; send stream=false")
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 1):
		return c, fmt.Errorf("temperature: %v is out of range [0, 1]", *req.Temperature)
	}
	c.maxTokens = *req.MaxTokens
	system, err := contentText(req.System)
	if err != nil {
		return c, fmt.Errorf("system: %v", err)
	}
	c.system = system
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return c, fmt.Errorf("messages.%d.role: %q is not user or assistant", i, m.Role)
		}
		text, err := contentText(m.Content)
		if err != nil {
			return c, fmt.Errorf("messages.%d.content: %v", i, err)
		}
		c.messages = append(c.messages, message{role: m.Role, text: text})
	}
	return c, nil
}

func (anthropicFormat) success(c *call, rep reply, meta responseMeta) any {
	stop := map[string]string{core.FinishStop: "end_turn", core.FinishLength: "max_tokens", core.FinishFiltered: "refusal"}[rep.finish]
	content := []anthropicBlock{}
	if rep.finish != core.FinishFiltered {
		content = append(content, anthropicBlock{Type: "text", Text: rep.text})
	}
	return anthropicResponse{
		ID: "msg_" + meta.id, Type: "message", Role: "assistant", Model: c.model,
		Content: content, StopReason: stop,
		Usage: anthropicUsage{InputTokens: rep.inputTokens, OutputTokens: rep.outputTokens},
	}
}

func (anthropicFormat) failure(f *failure) (int, http.Header, any) {
	status, typ := http.StatusBadRequest, "invalid_request_error"
	switch f.class {
	case core.ErrorRateLimited:
		status, typ = http.StatusTooManyRequests, "rate_limit_error"
	case core.ErrorOverloaded:
		status, typ = 529, "overloaded_error"
	case errorTimeoutResponse:
		status, typ = http.StatusGatewayTimeout, "timeout_error"
	case core.ErrorAuthRefused:
		status, typ = http.StatusUnauthorized, "authentication_error"
	}
	return status, nil, anthropicError{Type: "error", Error: anthropicErrorBody{Type: typ, Message: f.message}}
}

var _ format = anthropicFormat{}
