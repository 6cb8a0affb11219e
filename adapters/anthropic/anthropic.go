// Package anthropic translates seat calls to and from Anthropic's Messages
// API (POST {endpoint}/v1/messages, anthropic-version 2023-06-01).
//
// The request is {"model","max_tokens","system"?,"messages","temperature"?}.
// max_tokens is required by the API, so 0 becomes 1024. Only user and
// assistant turns go in messages: the seat's system prompt and any system
// messages are joined, in order and separated by a blank line, into system.
// Messages with blank content are dropped, since the API refuses them.
// Anthropic has no JSON mode, so JSONOutput appends an instruction to answer
// with one JSON object only to the system prompt.
//
// The answer is the concatenated text of the content blocks of type text
// (thinking blocks are skipped). Thinking is billed as output and Anthropic
// does not report it apart, so ReasoningTokens stays 0. Cache reads and
// writes are counted as input tokens. Errors are classified from the status
// and the error object's type ({"type":"error","error":{"type","message"}}).
//
// The adapter is pure and safe for concurrent use.
package anthropic

import (
	"context"
	"fmt"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/adapters/internal/seat"
	"github.com/conclavehq/conclave/core"
)

const (
	adapterName    = "anthropic"
	adapterVersion = "1.0.0"
	requestPath    = "/v1/messages"
	apiVersion     = "2023-06-01"
	// defaultMaxTokens is sent when the seat request leaves the cap to the
	// adapter: the API requires one.
	defaultMaxTokens = 1024
	// jsonInstruction stands in for a JSON mode the API does not have.
	jsonInstruction = "Answer with one JSON object only: no prose before or after it, no code fences."
)

// Adapter is the Anthropic Messages adapter. The zero value is ready to use
// and safe for concurrent use.
type Adapter struct{}

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }

// Describe implements core.Adapter.
func (*Adapter) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: adapterName, Version: adapterVersion, Auth: core.AuthXAPIKey}, nil
}

type messagesRequest struct {
	Model       string    `json:"model"`
	MaxTokens   int       `json:"max_tokens"`
	System      string    `json:"system,omitempty"`
	Messages    []message `json:"messages"`
	Temperature *float64  `json:"temperature,omitempty"`
}

type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// BuildRequest implements core.Adapter.
func (*Adapter) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	if err := seat.Check(req); err != nil {
		return nil, fmt.Errorf("%s: %w", adapterName, err)
	}
	body := messagesRequest{
		Model:       req.Model,
		MaxTokens:   req.MaxTokens,
		Messages:    make([]message, 0, len(req.Messages)),
		Temperature: req.Temperature,
	}
	if body.MaxTokens == 0 {
		body.MaxTokens = defaultMaxTokens
	}
	system := make([]string, 0, 2)
	if strings.TrimSpace(req.System) != "" {
		system = append(system, req.System)
	}
	for _, m := range req.Messages {
		switch {
		case strings.TrimSpace(m.Content) == "":
		case m.Role == core.RoleSystem:
			system = append(system, m.Content)
		default:
			body.Messages = append(body.Messages, message{Role: m.Role, Content: m.Content})
		}
	}
	if len(body.Messages) == 0 {
		return nil, fmt.Errorf("%s: no user or assistant message with content", adapterName)
	}
	if req.JSONOutput {
		system = append(system, jsonInstruction)
	}
	body.System = strings.Join(system, "\n\n")
	b, err := seat.Body(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", adapterName, err)
	}
	return &core.HTTPRequest{
		Method: "POST",
		Path:   requestPath,
		Header: map[string]string{
			"Anthropic-Version": apiVersion,
			"Content-Type":      "application/json",
		},
		Body: b,
	}, nil
}

type messagesResponse struct {
	Type string `json:"type"`
	// Content is nil when the field is absent, empty when it is [].
	Content    []contentBlock `json:"content"`
	StopReason string         `json:"stop_reason"`
	Usage      struct {
		InputTokens              int `json:"input_tokens"`
		OutputTokens             int `json:"output_tokens"`
		CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	} `json:"usage"`
}

type contentBlock struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

// ParseResponse implements core.Adapter.
func (*Adapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	if res == nil {
		return nil, fmt.Errorf("%s: no response", adapterName)
	}
	if res.Status < 200 || res.Status > 299 {
		return failure(res.Status, res.Body), nil
	}
	var r messagesResponse
	if err := reply.Decode(res.Body, &r); err != nil {
		return reply.Malformed(res.Status, "response body is not a message: "+reply.JSONProblem(err)), nil
	}
	if r.Type == "error" {
		return failure(res.Status, res.Body), nil
	}
	if r.Content == nil {
		return reply.Malformed(res.Status, "response has no content"), nil
	}
	var text strings.Builder
	for _, c := range r.Content {
		if c.Type == "text" {
			text.WriteString(c.Text)
		}
	}
	finish := stopReason(r.StopReason)
	if text.Len() == 0 && finish == core.FinishStop {
		return reply.Malformed(res.Status, "response has no answer text"), nil
	}
	u := r.Usage
	return &core.SeatAnswer{
		Text:         text.String(),
		InputTokens:  max(u.InputTokens, 0) + max(u.CacheCreationInputTokens, 0) + max(u.CacheReadInputTokens, 0),
		OutputTokens: max(u.OutputTokens, 0),
		Finish:       finish,
	}, nil
}

func stopReason(r string) string {
	switch r {
	case "max_tokens", "model_context_window_exceeded":
		return core.FinishLength
	case "refusal":
		return core.FinishFiltered
	}
	// end_turn, stop_sequence, tool_use, pause_turn and anything newer.
	return core.FinishStop
}

var _ core.Adapter = (*Adapter)(nil)
