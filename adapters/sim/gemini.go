package sim

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// geminiFormat is Gemini generateContent:
// POST {Endpoint("gemini")}/v1beta/models/{model}:generateContent.
type geminiFormat struct{}

type geminiRequest struct {
	Contents          []geminiContent `json:"contents"`
	SystemInstruction *geminiContent  `json:"systemInstruction"`
	GenerationConfig  *struct {
		MaxOutputTokens  *int     `json:"maxOutputTokens"`
		Temperature      *float64 `json:"temperature"`
		ResponseMimeType string   `json:"responseMimeType"`
	} `json:"generationConfig"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text string `json:"text"`
}

type geminiResponse struct {
	Candidates    []geminiCandidate `json:"candidates"`
	UsageMetadata geminiUsage       `json:"usageMetadata"`
	ModelVersion  string            `json:"modelVersion"`
	ResponseID    string            `json:"responseId"`
}

type geminiCandidate struct {
	// Content is absent when the answer was blocked for safety, as on the
	// real API.
	Content      *geminiContent `json:"content,omitempty"`
	FinishReason string         `json:"finishReason"`
	Index        int            `json:"index"`
}

type geminiUsage struct {
	PromptTokenCount     int `json:"promptTokenCount"`
	CandidatesTokenCount int `json:"candidatesTokenCount"`
	TotalTokenCount      int `json:"totalTokenCount"`
}

type geminiError struct {
	Error geminiErrorBody `json:"error"`
}

type geminiErrorBody struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
}

func (geminiFormat) name() string { return "gemini" }

// pathModel reads "atlas" from ".../models/atlas:generateContent".
func (geminiFormat) pathModel(r *http.Request) string {
	model, _, _ := strings.Cut(r.PathValue("target"), ":")
	return model
}

func (geminiFormat) apiKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Goog-Api-Key")); k != "" {
		return k
	}
	return strings.TrimSpace(r.URL.Query().Get("key"))
}

func (f geminiFormat) decode(r *http.Request, body []byte) (*call, error) {
	c := &call{model: f.pathModel(r)}
	if _, method, _ := strings.Cut(r.PathValue("target"), ":"); method != "generateContent" {
		return c, fmt.Errorf("method %q is not supported; use :generateContent", method)
	}
	var req geminiRequest
	if err := decodeStrict(body, &req); err != nil {
		return c, err
	}
	if len(req.Contents) == 0 {
		return c, errors.New("contents is not specified")
	}
	if req.SystemInstruction != nil {
		c.system = partsText(req.SystemInstruction.Parts)
	}
	if g := req.GenerationConfig; g != nil {
		if g.MaxOutputTokens != nil {
			if *g.MaxOutputTokens < 1 {
				return c, errors.New("generationConfig.maxOutputTokens must be at least 1")
			}
			c.maxTokens = *g.MaxOutputTokens
		}
		if g.Temperature != nil && (*g.Temperature < 0 || *g.Temperature > 2) {
			return c, fmt.Errorf("generationConfig.temperature %v is out of range [0, 2]", *g.Temperature)
		}
		switch g.ResponseMimeType {
		case "application/json":
			c.jsonMode = true
		case "", "text/plain":
		default:
			return c, fmt.Errorf("generationConfig.responseMimeType %q is not supported", g.ResponseMimeType)
		}
	}
	for i, content := range req.Contents {
		role := content.Role
		switch role {
		case "", "user":
			role = "user"
		case "model":
			role = "assistant"
		default:
			return c, fmt.Errorf("contents[%d].role %q is not user or model", i, content.Role)
		}
		c.messages = append(c.messages, message{role: role, text: partsText(content.Parts)})
	}
	return c, nil
}

func partsText(parts []geminiPart) string {
	var b strings.Builder
	for _, p := range parts {
		b.WriteString(p.Text)
	}
	return b.String()
}

func (geminiFormat) success(c *call, rep reply, meta responseMeta) any {
	cand := geminiCandidate{FinishReason: map[string]string{
		core.FinishStop: "STOP", core.FinishLength: "MAX_TOKENS", core.FinishFiltered: "SAFETY",
	}[rep.finish]}
	if rep.finish != core.FinishFiltered {
		cand.Content = &geminiContent{Role: "model", Parts: []geminiPart{{Text: rep.text}}}
	}
	return geminiResponse{
		Candidates: []geminiCandidate{cand},
		UsageMetadata: geminiUsage{
			PromptTokenCount: rep.inputTokens, CandidatesTokenCount: rep.outputTokens,
			TotalTokenCount: rep.inputTokens + rep.outputTokens,
		},
		ModelVersion: c.model,
		ResponseID:   meta.id,
	}
}

func (geminiFormat) failure(f *failure) (int, http.Header, any) {
	code, status := http.StatusBadRequest, "INVALID_ARGUMENT"
	switch {
	case f.unauthenticated:
		code, status = http.StatusUnauthorized, "UNAUTHENTICATED"
	case f.class == core.ErrorRateLimited:
		code, status = http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"
	case f.class == core.ErrorOverloaded:
		code, status = http.StatusServiceUnavailable, "UNAVAILABLE"
	case f.class == errorTimeoutResponse:
		code, status = http.StatusGatewayTimeout, "DEADLINE_EXCEEDED"
	case f.class == core.ErrorAuthRefused:
		code, status = http.StatusForbidden, "PERMISSION_DENIED"
	case f.class == core.ErrorContextTooLong:
		f.message = fmt.Sprintf("The input token count (%d) exceeds the maximum number of tokens allowed (%d).", f.inputTokens, f.limit)
	}
	return code, nil, geminiError{Error: geminiErrorBody{Code: code, Message: f.message, Status: status}}
}

var _ format = geminiFormat{}
