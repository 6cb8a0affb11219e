package sim

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/conclavehq/conclave/core"
)

// bedrockFormat is Bedrock Converse:
// POST {Endpoint("bedrock")}/model/{modelId}/converse, signed with SigV4.
type bedrockFormat struct{}

type bedrockRequest struct {
	Messages        []bedrockMessage `json:"messages"`
	System          []bedrockBlock   `json:"system"`
	InferenceConfig *struct {
		MaxTokens   *int     `json:"maxTokens"`
		Temperature *float64 `json:"temperature"`
	} `json:"inferenceConfig"`
}

type bedrockMessage struct {
	Role    string         `json:"role"`
	Content []bedrockBlock `json:"content"`
}

type bedrockBlock struct {
	Text string `json:"text"`
}

type bedrockResponse struct {
	Output struct {
		Message bedrockMessage `json:"message"`
	} `json:"output"`
	StopReason string       `json:"stopReason"`
	Usage      bedrockUsage `json:"usage"`
	Metrics    struct {
		LatencyMs int64 `json:"latencyMs"`
	} `json:"metrics"`
}

type bedrockUsage struct {
	InputTokens  int `json:"inputTokens"`
	OutputTokens int `json:"outputTokens"`
	TotalTokens  int `json:"totalTokens"`
}

type bedrockError struct {
	Message string `json:"message"`
}

func (bedrockFormat) name() string                     { return "bedrock" }
func (bedrockFormat) pathModel(r *http.Request) string { return r.PathValue("modelId") }
func (bedrockFormat) apiKey(*http.Request) string      { return "" }
func blocksText(blocks []bedrockBlock) (s string) {
	for _, b := range blocks {
		s += b.Text
	}
	return s
}

func (f bedrockFormat) decode(r *http.Request, body []byte) (*call, error) {
	c := &call{model: f.pathModel(r)}
	var req bedrockRequest
	if err := decodeStrict(body, &req); err != nil {
		return c, err
	}
	if len(req.Messages) == 0 {
		return c, errors.New("messages: at least one message is required")
	}
	c.system = blocksText(req.System)
	if ic := req.InferenceConfig; ic != nil {
		if ic.MaxTokens != nil {
			if *ic.MaxTokens < 1 {
				return c, errors.New("inferenceConfig.maxTokens must be at least 1")
			}
			c.maxTokens = *ic.MaxTokens
		}
		if ic.Temperature != nil && (*ic.Temperature < 0 || *ic.Temperature > 1) {
			return c, fmt.Errorf("inferenceConfig.temperature %v is out of range [0, 1]", *ic.Temperature)
		}
	}
	for i, m := range req.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return c, fmt.Errorf("messages.%d.role %q is not user or assistant", i, m.Role)
		}
		c.messages = append(c.messages, message{role: m.Role, text: blocksText(m.Content)})
	}
	return c, nil
}

func (bedrockFormat) success(_ *call, rep reply, meta responseMeta) any {
	var out bedrockResponse
	out.Output.Message = bedrockMessage{Role: "assistant", Content: []bedrockBlock{{Text: rep.text}}}
	out.StopReason = map[string]string{
		core.FinishStop: "end_turn", core.FinishLength: "max_tokens", core.FinishFiltered: "content_filtered",
	}[rep.finish]
	out.Usage = bedrockUsage{InputTokens: rep.inputTokens, OutputTokens: rep.outputTokens, TotalTokens: rep.inputTokens + rep.outputTokens}
	out.Metrics.LatencyMs = meta.elapsed.Milliseconds()
	return out
}

func (bedrockFormat) failure(f *failure) (int, http.Header, any) {
	status, typ := http.StatusBadRequest, "ValidationException"
	switch {
	case f.awsType != "":
		status, typ = http.StatusForbidden, f.awsType
	case f.class == core.ErrorRateLimited:
		status, typ = http.StatusTooManyRequests, "ThrottlingException"
	case f.class == core.ErrorOverloaded:
		status, typ = http.StatusServiceUnavailable, "ServiceUnavailableException"
	case f.class == errorTimeoutResponse:
		status, typ = http.StatusRequestTimeout, "ModelTimeoutException"
	case f.class == core.ErrorAuthRefused:
		status, typ = http.StatusForbidden, "AccessDeniedException"
	case f.class == core.ErrorContextTooLong:
		f.message = "Input is too long for requested model."
	}
	h := http.Header{}
	h.Set("X-Amzn-Errortype", typ)
	return status, h, bedrockError{Message: f.message}
}

var _ format = bedrockFormat{}
