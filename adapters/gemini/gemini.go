// Package gemini translates seat calls to and from Google's Gemini
// generateContent API (POST {endpoint}/v1beta/models/{model}:generateContent).
//
// The request is {"contents","systemInstruction"?,"generationConfig"?}.
// Assistant turns take Gemini's role "model". The seat's system prompt and
// any system messages become the parts of systemInstruction, in order.
// Messages with blank content are dropped, since the API refuses empty parts.
// A model named "models/…" loses that prefix before it is path-escaped.
// JSONOutput sets generationConfig.responseMimeType to application/json.
//
// The answer is the text of candidates[0].content.parts, skipping thought
// parts. A prompt blocked before any candidate (promptFeedback.blockReason)
// is an empty content_filter answer. Gemini bills thoughts as output but
// reports them apart from candidatesTokenCount; OutputTokens adds the two so
// that it means the same as for the other adapters, and ReasoningTokens is
// thoughtsTokenCount. Errors are classified from the status and the Google
// API error ({"error":{"code","message","status","details"}}, sometimes
// wrapped in an array); an invalid API key, which Gemini reports as a 400,
// is auth_refused.
//
// The adapter is pure and safe for concurrent use.
package gemini

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/conclavehq/conclave/adapters/internal/reply"
	"github.com/conclavehq/conclave/adapters/internal/seat"
	"github.com/conclavehq/conclave/core"
)

const (
	adapterName    = "gemini"
	adapterVersion = "1.0.0"
	roleModel      = "model"
)

// Adapter is the Gemini generateContent adapter. The zero value is ready to
// use and safe for concurrent use.
type Adapter struct{}

// New returns an Adapter.
func New() *Adapter { return &Adapter{} }

// Describe implements core.Adapter.
func (*Adapter) Describe(context.Context) (*core.AdapterInfo, error) {
	return &core.AdapterInfo{Name: adapterName, Version: adapterVersion, Auth: core.AuthGoogleAPIKey}, nil
}

type generateRequest struct {
	Contents          []content         `json:"contents"`
	SystemInstruction *content          `json:"systemInstruction,omitempty"`
	GenerationConfig  *generationConfig `json:"generationConfig,omitempty"`
}

type content struct {
	Role  string `json:"role,omitempty"`
	Parts []part `json:"parts"`
}

type part struct {
	Text string `json:"text"`
}

type generationConfig struct {
	MaxOutputTokens  int      `json:"maxOutputTokens,omitempty"`
	Temperature      *float64 `json:"temperature,omitempty"`
	ResponseMimeType string   `json:"responseMimeType,omitempty"`
}

// BuildRequest implements core.Adapter.
func (*Adapter) BuildRequest(_ context.Context, req *core.SeatRequest) (*core.HTTPRequest, error) {
	if err := validate(req); err != nil {
		return nil, fmt.Errorf("%s: %w", adapterName, err)
	}
	body := generateRequest{Contents: make([]content, 0, len(req.Messages))}
	var system []part
	if strings.TrimSpace(req.System) != "" {
		system = append(system, part{Text: req.System})
	}
	for _, m := range req.Messages {
		switch {
		case strings.TrimSpace(m.Content) == "":
		case m.Role == core.RoleSystem:
			system = append(system, part{Text: m.Content})
		case m.Role == core.RoleAssistant:
			body.Contents = append(body.Contents, content{Role: roleModel, Parts: []part{{Text: m.Content}}})
		default:
			body.Contents = append(body.Contents, content{Role: core.RoleUser, Parts: []part{{Text: m.Content}}})
		}
	}
	if len(body.Contents) == 0 {
		return nil, fmt.Errorf("%s: no user or assistant message with content", adapterName)
	}
	if len(system) > 0 {
		body.SystemInstruction = &content{Parts: system}
	}
	if req.MaxTokens > 0 || req.Temperature != nil || req.JSONOutput {
		body.GenerationConfig = &generationConfig{MaxOutputTokens: req.MaxTokens, Temperature: req.Temperature}
		if req.JSONOutput {
			body.GenerationConfig.ResponseMimeType = "application/json"
		}
	}
	b, err := seat.Body(body)
	if err != nil {
		return nil, fmt.Errorf("%s: encoding the request: %w", adapterName, err)
	}
	model := strings.TrimPrefix(req.Model, "models/")
	return &core.HTTPRequest{
		Method: "POST",
		Path:   "/v1beta/models/" + url.PathEscape(model) + ":generateContent",
		Header: map[string]string{"Content-Type": "application/json"},
		Body:   b,
	}, nil
}

type generateResponse struct {
	Candidates     []candidate `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	UsageMetadata struct {
		PromptTokenCount     int `json:"promptTokenCount"`
		CandidatesTokenCount int `json:"candidatesTokenCount"`
		ThoughtsTokenCount   int `json:"thoughtsTokenCount"`
	} `json:"usageMetadata"`
	Error *apiError `json:"error"`
}

type candidate struct {
	Content *struct {
		Parts []struct {
			Text    string `json:"text"`
			Thought bool   `json:"thought"`
		} `json:"parts"`
	} `json:"content"`
	FinishReason string `json:"finishReason"`
}

// ParseResponse implements core.Adapter.
func (*Adapter) ParseResponse(_ context.Context, res *core.HTTPResponse) (*core.SeatAnswer, error) {
	if res == nil {
		return nil, fmt.Errorf("%s: no response", adapterName)
	}
	if res.Status < 200 || res.Status > 299 {
		return failure(res.Status, res.Body), nil
	}
	var r generateResponse
	if err := reply.Decode(res.Body, &r); err != nil {
		return reply.Malformed(res.Status, "response body is not a generateContent response: "+reply.JSONProblem(err)), nil
	}
	if r.Error != nil {
		return failure(res.Status, res.Body), nil
	}
	u := r.UsageMetadata
	ans := &core.SeatAnswer{
		InputTokens:     max(u.PromptTokenCount, 0),
		OutputTokens:    max(u.CandidatesTokenCount, 0) + max(u.ThoughtsTokenCount, 0),
		ReasoningTokens: max(u.ThoughtsTokenCount, 0),
	}
	if len(r.Candidates) == 0 {
		if r.PromptFeedback != nil && r.PromptFeedback.BlockReason != "" {
			ans.Finish = core.FinishFiltered
			return ans, nil
		}
		return reply.Malformed(res.Status, "response has no candidates"), nil
	}
	c := r.Candidates[0]
	var text strings.Builder
	if c.Content != nil {
		for _, p := range c.Content.Parts {
			if !p.Thought {
				text.WriteString(p.Text)
			}
		}
	}
	ans.Text, ans.Finish = text.String(), finishReason(c.FinishReason)
	if ans.Text == "" && ans.Finish == core.FinishStop {
		return reply.Malformed(res.Status, "response has no answer text"), nil
	}
	return ans, nil
}

func finishReason(r string) string {
	switch r {
	case "MAX_TOKENS":
		return core.FinishLength
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY":
		return core.FinishFiltered
	}
	// STOP, an absent reason, and OTHER, LANGUAGE, …: the model ended.
	return core.FinishStop
}

var _ core.Adapter = (*Adapter)(nil)

// validate adds, to the checks every adapter makes, Gemini's model names:
// "models/" alone names no model.
func validate(req *core.SeatRequest) error {
	if err := seat.Check(req); err != nil {
		return err
	}
	if strings.TrimPrefix(req.Model, "models/") == "" {
		return errors.New("model is required")
	}
	return nil
}
