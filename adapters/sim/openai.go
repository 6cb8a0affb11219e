package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// openaiFormat is OpenAI chat completions:
// POST {Endpoint("openai")}/chat/completions.
type openaiFormat struct{}

type openaiRequest struct {
	Model               string          `json:"model"`
	Messages            []openaiMessage `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	ResponseFormat      *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Stream bool `json:"stream"`
}

type openaiMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

type openaiResponse struct {
	ID      string         `json:"id"`
	Object  string         `json:"object"`
	Created int64          `json:"created"`
	Model   string         `json:"model"`
	Choices []openaiChoice `json:"choices"`
	Usage   openaiUsage    `json:"usage"`
}

type openaiChoice struct {
	Index        int              `json:"index"`
	Message      openaiOutMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
}

type openaiOutMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type openaiUsage struct {
	PromptTokens            int `json:"prompt_tokens"`
	CompletionTokens        int `json:"completion_tokens"`
	TotalTokens             int `json:"total_tokens"`
	CompletionTokensDetails struct {
		ReasoningTokens int `json:"reasoning_tokens"`
	} `json:"completion_tokens_details"`
}

type openaiError struct {
	Error openaiErrorBody `json:"error"`
}

type openaiErrorBody struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

func (openaiFormat) name() string                   { return "openai" }
func (openaiFormat) pathModel(*http.Request) string { return "" }

func (openaiFormat) apiKey(r *http.Request) string {
	key, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return ""
	}
	return strings.TrimSpace(key)
}

func (openaiFormat) decode(_ *http.Request, body []byte) (*call, error) {
	var req openaiRequest
	if err := decodeStrict(body, &req); err != nil {
		return nil, err
	}
	switch {
	case req.Model == "":
		return &call{}, errors.New("you must provide a model parameter")
	case len(req.Messages) == 0:
		return &call{model: req.Model}, errors.New("'messages' must contain at least one message")
	case req.Stream:
		return &call{model: req.Model}, errors.New("the simulated provider does not stream; send stream=false")
	case req.Temperature != nil && (*req.Temperature < 0 || *req.Temperature > 2):
		return &call{model: req.Model}, fmt.Errorf("temperature %v is out of range [0, 2]", *req.Temperature)
	}
	c := &call{model: req.Model}
	for _, limit := range []*int{req.MaxTokens, req.MaxCompletionTokens} {
		if limit != nil {
			if *limit < 1 {
				return c, errors.New("max_tokens must be at least 1")
			}
			c.maxTokens = *limit
		}
	}
	if req.ResponseFormat != nil {
		switch req.ResponseFormat.Type {
		case "json_object", "json_schema":
			c.jsonMode = true
		case "text", "":
		default:
			return c, fmt.Errorf("response_format.type %q is not supported", req.ResponseFormat.Type)
		}
	}
	for i, m := range req.Messages {
		text, err := contentText(m.Content)
		if err != nil {
			return c, fmt.Errorf("messages[%d].content: %v", i, err)
		}
		switch m.Role {
		case "system", "developer":
			if c.system != "" {
				c.system += "\n"
			}
			c.system += text
		case "user", "assistant", "tool":
			c.messages = append(c.messages, message{role: m.Role, text: text})
		default:
			return c, fmt.Errorf("messages[%d].role %q is not one of system, developer, user, assistant, tool", i, m.Role)
		}
	}
	return c, nil
}

func (openaiFormat) success(c *call, rep reply, meta responseMeta) any {
	finish := rep.finish // "stop", "length" and "content_filter" are OpenAI's own words
	return openaiResponse{
		ID: "chatcmpl-" + meta.id, Object: "chat.completion", Created: meta.created, Model: c.model,
		Choices: []openaiChoice{{Message: openaiOutMessage{Role: "assistant", Content: rep.text}, FinishReason: finish}},
		Usage: openaiUsage{
			PromptTokens: rep.inputTokens, CompletionTokens: rep.outputTokens,
			TotalTokens: rep.inputTokens + rep.outputTokens,
		},
	}
}

func (openaiFormat) failure(f *failure) (int, http.Header, any) {
	status, typ, code := http.StatusBadRequest, "invalid_request_error", "invalid_request"
	switch f.class {
	case core.ErrorRateLimited:
		status, typ, code = http.StatusTooManyRequests, "requests", "rate_limit_exceeded"
	case core.ErrorOverloaded:
		status, typ, code = http.StatusServiceUnavailable, "server_error", "overloaded"
	case errorTimeoutResponse:
		status, typ, code = http.StatusGatewayTimeout, "timeout", "timeout"
	case core.ErrorContextTooLong:
		code = "context_length_exceeded"
		f.message = fmt.Sprintf("This model's maximum context length is %d tokens. However, your messages resulted in %d tokens. Please reduce the length of the messages.", f.limit, f.inputTokens)
	case core.ErrorAuthRefused:
		status, code = http.StatusUnauthorized, "invalid_api_key"
	}
	return status, nil, openaiError{Error: openaiErrorBody{Message: f.message, Type: typ, Code: code}}
}

var _ format = openaiFormat{}
