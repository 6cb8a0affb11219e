// Package bedrock translates seat calls to and from Amazon Bedrock's Converse
// API (POST {endpoint}/model/{modelId}/converse), signed by the egress layer
// with AWS SigV4.
//
// The request is {"messages","system"?,"inferenceConfig"?}. The model id is
// escaped as one path segment with every byte outside RFC 3986's unreserved
// set percent-encoded, as the AWS SDKs do (":" becomes %3A, and the "/" of an
// inference-profile ARN %2F); the signer must sign that escaped path as is.
// The seat's system prompt and any system messages become system blocks, in
// order; JSONOutput adds a block asking for one JSON object only, since
// Converse has no JSON mode. Converse wants user and assistant turns to
// alternate and refuses blank text, so blank messages are dropped and
// consecutive messages of one role are merged into one message of several
// text blocks.
//
// The answer is the text of output.message.content's text blocks (reasoning
// blocks are skipped). Cache reads and writes count as input tokens. Errors
// are classified from the exception name — the x-amzn-errortype header, or
// the body's __type — then the status; the message comes from the body's
// "message" (or "Message").
//
// The adapter is pure and safe for concurrent use.
package bedrock

import (
	"context"
	"fmt"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/adapters/internal/seat"
	"github.com/conclavehq/conclave/core"
)

const (
	adapterName    = "bedrock"
	adapterVersion = "1.0.0"
	// jsonInstruction stands in for a JSON mode Converse does not have.
	jsonInstruction = "Answer with one JSON object only: no prose before or after it, no code fences."
)

// Adapter is the Bedrock Converse adapter. The zero value is ready to use and
// safe for concurrent use.
type Adapter struct{}

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }

// Describe implements core.Adapter.
func (*Adapter) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: adapterName, Version: adapterVersion, Auth: core.AuthAWSSigV4}, nil
}

type converseRequest struct {
	Messages        []message        `json:"messages"`
	System          []textBlock      `json:"system,omitempty"`
	InferenceConfig *inferenceConfig `json:"inferenceConfig,omitempty"`
}

type message struct {
	Role    string      `json:"role"`
	Content []textBlock `json:"content"`
}

type textBlock struct {
	Text string `json:"text"`
}

type inferenceConfig struct {
	MaxTokens   int      `json:"maxTokens,omitempty"`
	Temperature *float64 `json:"temperature,omitempty"`
}

// BuildRequest implements core.Adapter.
func (*Adapter) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	if err := seat.Check(req); err != nil {
		return nil, fmt.Errorf("%s: %w", adapterName, err)
	}
	body := converseRequest{Messages: make([]message, 0, len(req.Messages))}
	if strings.TrimSpace(req.System) != "" {
		body.System = append(body.System, textBlock{Text: req.System})
	}
	for _, m := range req.Messages {
		switch {
		case strings.TrimSpace(m.Content) == "":
		case m.Role == core.RoleSystem:
			body.System = append(body.System, textBlock{Text: m.Content})
		case len(body.Messages) > 0 && body.Messages[len(body.Messages)-1].Role == m.Role:
			last := &body.Messages[len(body.Messages)-1]
			last.Content = append(last.Content, textBlock{Text: m.Content})
		default:
			body.Messages = append(body.Messages, message{Role: m.Role, Content: []textBlock{{Text: m.Content}}})
		}
	}
	if len(body.Messages) == 0 {
		return nil, fmt.Errorf("%s: no user or assistant message with content", adapterName)
	}
	if req.JSONOutput {
		body.System = append(body.System, textBlock{Text: jsonInstruction})
	}
	if req.MaxTokens > 0 || req.Temperature != nil {
		body.InferenceConfig = &inferenceConfig{MaxTokens: req.MaxTokens, Temperature: req.Temperature}
	}
	b, err := seat.Body(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", adapterName, err)
	}
	return &core.HTTPRequest{
		Method: "POST",
		Path:   "/model/" + escapeSegment(req.Model) + "/converse",
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   b,
	}, nil
}

// escapeSegment percent-encodes every byte outside RFC 3986's unreserved
// set. url.PathEscape would leave ":" alone, which SigV4 canonicalisation
// and the AWS SDKs do not.
func escapeSegment(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&0x0f])
	}
	return b.String()
}

type converseResponse struct {
	Output *struct {
		Message *struct {
			Content []struct {
				Text *string `json:"text"`
			} `json:"content"`
		} `json:"message"`
	} `json:"output"`
	StopReason string `json:"stopReason"`
	Usage      struct {
		InputTokens           int `json:"inputTokens"`
		OutputTokens          int `json:"outputTokens"`
		CacheReadInputTokens  int `json:"cacheReadInputTokens"`
		CacheWriteInputTokens int `json:"cacheWriteInputTokens"`
	} `json:"usage"`
}

// ParseResponse implements core.Adapter.
func (*Adapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	if res == nil {
		return nil, fmt.Errorf("%s: no response", adapterName)
	}
	if res.Status < 200 || res.Status > 299 {
		return failure(res.Status, res.Header, res.Body), nil
	}
	var r converseResponse
	if err := reply.Decode(res.Body, &r); err != nil {
		return reply.Malformed(res.Status, "response body is not a Converse response: "+reply.JSONProblem(err)), nil
	}
	if r.Output == nil || r.Output.Message == nil {
		return reply.Malformed(res.Status, "response has no output message"), nil
	}
	var text strings.Builder
	for _, c := range r.Output.Message.Content {
		if c.Text != nil {
			text.WriteString(*c.Text)
		}
	}
	finish := stopReason(r.StopReason)
	if text.Len() == 0 && finish == core.FinishStop {
		return reply.Malformed(res.Status, "response has no answer text"), nil
	}
	u := r.Usage
	return &core.SeatAnswer{
		Text:         text.String(),
		InputTokens:  max(u.InputTokens, 0) + max(u.CacheReadInputTokens, 0) + max(u.CacheWriteInputTokens, 0),
		OutputTokens: max(u.OutputTokens, 0),
		Finish:       finish,
	}, nil
}

func stopReason(r string) string {
	switch r {
	case "max_tokens", "model_context_window_exceeded":
		return core.FinishLength
	case "guardrail_intervened", "content_filtered":
		return core.FinishFiltered
	}
	// end_turn, stop_sequence, tool_use and anything newer.
	return core.FinishStop
}

var _ core.Adapter = (*Adapter)(nil)
