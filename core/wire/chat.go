package wire

import (
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/calls"
)

// completionHead is the standard part of a chat completion, the same in a
// response and in its replay.
type completionHead struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   chatUsage    `json:"usage"`
}

// ChatCompletion is the OpenAI chat.completion with Conclave's panel: the
// answer to POST /v1/chat/completions and the deliberate tool's result.
type ChatCompletion struct {
	completionHead
	Panel calls.Panel `json:"panel"`
}

type chatChoice struct {
	Index        int          `json:"index"`
	Message      core.Message `json:"message"`
	FinishReason string       `json:"finish_reason"`
}

type chatUsage struct {
	PromptTokens            int                `json:"prompt_tokens"`
	CompletionTokens        int                `json:"completion_tokens"`
	TotalTokens             int                `json:"total_tokens"`
	CompletionTokensDetails completionTokenUse `json:"completion_tokens_details"`
}

type completionTokenUse struct {
	ReasoningTokens *int `json:"reasoning_tokens"`
}

func headOf(c *calls.Completion) completionHead {
	reasoning := c.Usage.ReasoningTokens
	return completionHead{
		ID: c.ID, Object: "chat.completion", Created: c.Created, Model: c.Model,
		Choices: []chatChoice{{Index: 0, Message: core.Message{Role: core.RoleAssistant, Content: c.Answer}, FinishReason: c.FinishReason}},
		Usage: chatUsage{
			PromptTokens: c.Usage.PromptTokens, CompletionTokens: c.Usage.CompletionTokens,
			TotalTokens:             c.Usage.PromptTokens + c.Usage.CompletionTokens,
			CompletionTokensDetails: completionTokenUse{ReasoningTokens: &reasoning},
		},
	}
}

// CompletionOf is c as a chat.completion.
func CompletionOf(c *calls.Completion) *ChatCompletion {
	return &ChatCompletion{completionHead: headOf(c), Panel: c.Panel}
}

// ReplayCompletion is a stored completion sent again: the standard fields as
// first sent, and the replay form of panel.
type ReplayCompletion struct {
	completionHead
	Panel replayPanel `json:"panel"`
}

// replayPanel is the spec's replay form of panel: only these fields.
type replayPanel struct {
	RequestID       string `json:"request_id"`
	Replayed        bool   `json:"replayed"`
	Mode            string `json:"mode"`
	Note            string `json:"note"`
	SeatsAnswered   *int   `json:"seats_answered,omitempty"`
	AnswerTruncated *bool  `json:"answer_truncated,omitempty"`
}

// ReplayOf is rp in the replay form.
func ReplayOf(rp *calls.Replay) *ReplayCompletion {
	seats, truncated := rp.Completion.Panel.SeatsAnswered, rp.AnswerTruncated()
	return &ReplayCompletion{
		completionHead: headOf(rp.Completion),
		Panel: replayPanel{RequestID: rp.RequestID, Replayed: true, Mode: rp.Completion.Panel.Mode, Note: calls.ReplayNote,
			SeatsAnswered: &seats, AnswerTruncated: &truncated},
	}
}
