package api

import (
	"net/http"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/calls"
)

// chat answers POST /v1/chat/completions: a billed deliberation, run by the
// call service; this handler decodes and renders.
func (h *handler) chat(w http.ResponseWriter, r *http.Request) {
	var in calls.ChatInput
	if err := decodeJSON(w, r, h.cfg.MaxBodyBytes, &in); err != nil {
		h.refuse(w, r, err)
		return
	}
	req, err := calls.ParseChat(&in)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	if v, ok := r.Header[http.CanonicalHeaderKey("Idempotency-Key")]; ok {
		if len(v) != 1 || v[0] == "" {
			h.refuse(w, r, calls.CheckIdempotencyKey(""))
			return
		}
		req.IdempotencyKey = v[0]
	}
	res, err := h.calls.Chat(r.Context(), principalOf(r.Context()), callOf(r), req)
	switch {
	case err != nil && r.Context().Err() != nil:
		return // the caller left; the deliberation goes on and is stored
	case err != nil:
		writeError(w, r, err)
	case res.Replay != nil:
		w.Header().Set("Idempotent-Replayed", "true")
		writeJSON(w, http.StatusOK, replayOf(res.Replay))
	default:
		writeJSON(w, http.StatusOK, completionOf(res.Completion))
	}
}

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

type chatCompletion struct {
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

// completionOf is the OpenAI chat.completion with Conclave's panel.
func completionOf(c *calls.Completion) *chatCompletion {
	return &chatCompletion{completionHead: headOf(c), Panel: c.Panel}
}

// replayCompletion is a stored completion sent again: the standard fields as
// first sent, and the replay form of panel.
type replayCompletion struct {
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

func replayOf(rp *calls.Replay) *replayCompletion {
	seats, truncated := rp.Completion.Panel.SeatsAnswered, rp.AnswerTruncated()
	return &replayCompletion{
		completionHead: headOf(rp.Completion),
		Panel: replayPanel{RequestID: rp.RequestID, Replayed: true, Mode: rp.Completion.Panel.Mode, Note: calls.ReplayNote,
			SeatsAnswered: &seats, AnswerTruncated: &truncated},
	}
}
