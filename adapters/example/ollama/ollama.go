package ollama

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
	adapterName    = "ollama"
	adapterVersion = "1.0.0"
	chatPath       = "/api/chat"
)

// jsonInstruction is added to the system prompt of a JSONOutput request
// whose prompt never mentions JSON (see the package doc).
const jsonInstruction = "Answer with one JSON object only: no prose before or after it, no code fences."

// Adapter translates seat calls to and from Ollama's native chat API. The
// zero value is ready to use; it holds no state, so it is safe for
// concurrent use.
type Adapter struct{}

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }

// Describe implements core.Adapter. A local Ollama takes no credential.
func (*Adapter) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: adapterName, Version: adapterVersion, Auth: core.AuthNone}, nil
}

// chatRequest is the body of POST /api/chat. The field order is the order
// on the wire, which keeps the bytes deterministic.
type chatRequest struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Stream   bool          `json:"stream"`
	Format   string        `json:"format,omitempty"`
	Options  *chatOptions  `json:"options,omitempty"`
}

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// chatOptions are the model parameters a seat request can set.
type chatOptions struct {
	Temperature *float64 `json:"temperature,omitempty"`
	NumPredict  int      `json:"num_predict,omitempty"`
}

// BuildRequest implements core.Adapter.
func (*Adapter) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	if err := validate(req); err != nil {
		return nil, fmt.Errorf("%s: %w", adapterName, err)
	}
	system := req.System
	if req.JSONOutput && !mentionsJSON(req) {
		system = appendLine(system, jsonInstruction)
	}
	body := chatRequest{Model: req.Model, Messages: make([]chatMessage, 0, len(req.Messages)+1)}
	if strings.TrimSpace(system) != "" {
		body.Messages = append(body.Messages, chatMessage{Role: core.RoleSystem, Content: system})
	}
	for _, m := range req.Messages {
		body.Messages = append(body.Messages, chatMessage{Role: m.Role, Content: m.Content})
	}
	if req.JSONOutput {
		body.Format = "json"
	}
	if req.Temperature != nil || req.MaxTokens > 0 {
		body.Options = &chatOptions{Temperature: req.Temperature, NumPredict: req.MaxTokens}
	}
	b, err := encode(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", adapterName, err)
	}
	return &core.HTTPRequest{
		Method: "POST",
		Path:   chatPath,
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   b,
	}, nil
}

func mentionsJSON(req *core.SeatRequest) bool {
	if strings.Contains(strings.ToLower(req.System), "json") {
		return true
	}
	for _, m := range req.Messages {
		if strings.Contains(strings.ToLower(m.Content), "json") {
			return true
		}
	}
	return false
}

func appendLine(text, line string) string {
	if strings.TrimSpace(text) == "" {
		return line
	}
	return text + "\n\n" + line
}

// encode marshals v compactly and without HTML escaping, so that prompts
// reach Ollama as written.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// chatResponse is the part of a non-streamed /api/chat answer the adapter
// reads. Pointers tell a missing field from an empty one.
type chatResponse struct {
	Message         *responseMessage `json:"message"`
	Done            *bool            `json:"done"`
	DoneReason      string           `json:"done_reason"`
	PromptEvalCount int              `json:"prompt_eval_count"`
	EvalCount       int              `json:"eval_count"`
}

type responseMessage struct {
	Content *string `json:"content"`
}

// ParseResponse implements core.Adapter. Every provider failure becomes a
// SeatAnswer with Error set; the Go error is only for a nil response.
func (*Adapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	if res == nil {
		return nil, fmt.Errorf("%s: no response", adapterName)
	}
	if res.Status < 200 || res.Status > 299 {
		return failure(res.Status, res.Body), nil
	}
	var r chatResponse
	if err := json.Unmarshal(res.Body, &r); err != nil {
		return reply.Malformed(res.Status, "response body is not an Ollama chat response: "+reply.JSONProblem(err)), nil
	}
	switch {
	case r.Done != nil && !*r.Done:
		return reply.Malformed(res.Status, "response is a streamed chunk (done is false), not a whole answer"), nil
	case r.DoneReason == "load" || r.DoneReason == "unload":
		return reply.Malformed(res.Status, "provider loaded or unloaded the model instead of answering"), nil
	case r.Message == nil || r.Message.Content == nil:
		return reply.Malformed(res.Status, "response has no message content"), nil
	}
	finish := core.FinishStop
	if r.DoneReason == "length" {
		finish = core.FinishLength
	}
	text := *r.Message.Content
	if text == "" && finish == core.FinishStop {
		return reply.Malformed(res.Status, "response has no answer text"), nil
	}
	return &core.SeatAnswer{
		Text:         text,
		InputTokens:  max(r.PromptEvalCount, 0),
		OutputTokens: max(r.EvalCount, 0),
		Finish:       finish,
	}, nil
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
