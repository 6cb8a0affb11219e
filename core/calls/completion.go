package calls

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
)

// Completion is a billed deliberation's answer in the one shape every
// carrier renders from, and the shape stored with its receipt so that a
// repeat replays it: REST renders it as an OpenAI chat.completion, MCP as
// the deliberate tool's result.
type Completion struct {
	ID           string `json:"id"`
	Created      int64  `json:"created"`
	Model        string `json:"model"`
	Answer       string `json:"answer"`
	FinishReason string `json:"finish_reason"`
	Usage        Usage  `json:"usage"`
	Panel        Panel  `json:"panel"`
}

// Usage counts a completion's tokens over every engine call.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	ReasoningTokens  int `json:"reasoning_tokens"`
}

// Panel is the spec's panel object. Field meanings: docs/chat.md.
type Panel struct {
	RequestID            string                       `json:"request_id"`
	Mode                 string                       `json:"mode"`
	ModeKey              string                       `json:"mode_key"`
	ModeConfigHash       string                       `json:"mode_config_hash"`
	ModeVersion          *int                         `json:"mode_version"`
	Lane                 core.Lane                    `json:"lane"`
	Rounds               int                          `json:"rounds"`
	Seats                int                          `json:"seats"`
	SeatsAnswered        int                          `json:"seats_answered"`
	Converged            *bool                        `json:"converged"`
	RemainingFriction    *string                      `json:"remaining_friction"`
	ContestedPassage     *deliberate.ContestedPassage `json:"contested_passage"`
	BestSeatRationale    string                       `json:"best_seat_rationale"`
	BestSeatJudgedBy     string                       `json:"best_seat_judged_by"`
	Deliberation         []deliberate.Round           `json:"deliberation"`
	DivergenceFirstRound *float64                     `json:"divergence_first_round"`
	DivergenceFinalRound *float64                     `json:"divergence_final_round"`
	Capped               bool                         `json:"capped"`
	SurchargeUSD         core.Dollars                 `json:"surcharge_usd"`
	PlatformFeeUSD       core.Dollars                 `json:"platform_fee_usd"`
	TokenChargeUSD       core.Dollars                 `json:"token_charge_usd"`
	CapCreditUSD         core.Dollars                 `json:"cap_credit_usd"`
	BilledUSD            core.Dollars                 `json:"billed_usd"`
	CeilingUSD           core.Dollars                 `json:"ceiling_usd"`
	LatencyMS            int64                        `json:"latency_ms"`
	Engines              []string                     `json:"engines"`
	Substitutions        []deliberate.Substitution    `json:"substitutions"`
	SeatsUnavailable     []core.Unavailable           `json:"seats_unavailable,omitempty"`
	StaffUnavailable     []core.Unavailable           `json:"staff_unavailable,omitempty"`
	// Persisted is true once the settlement that stores the answer has
	// committed, which is before any carrier sends it.
	Persisted bool `json:"persisted"`
}

// Replay is a stored completion sent again for a repeat of its idempotency
// key: the completion as first answered (its panel reduced to the spec's
// replay form by the carrier) and the request that ran it.
type Replay struct {
	Completion *Completion
	// RequestID is the id of the request that ran and billed the call.
	RequestID string
}

// AnswerTruncated tells whether the stored answer was cut off.
func (r *Replay) AnswerTruncated() bool {
	return r.Completion.FinishReason == deliberate.FinishLength
}

// ReplayNote is the replay form's note.
const ReplayNote = "This answer was stored when the request first succeeded and is replayed for a repeat with the same Idempotency-Key (sent, or derived from an identical request); nothing was run or billed again."

// storedVersion marks the stored encoding of a Completion; receipts written
// before it hold the REST wire form, which decodeStored still reads.
const storedVersion = 2

type storedCompletion struct {
	Version int `json:"stored_version"`
	*Completion
}

// encodeStored is the encoding kept with the receipt.
func encodeStored(c *Completion) ([]byte, error) {
	return json.Marshal(storedCompletion{Version: storedVersion, Completion: c})
}

// legacyCompletion is the REST wire form that receipts stored before the
// stored encoding existed; only what a replay shows is read.
type legacyCompletion struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Message      core.Message `json:"message"`
		FinishReason string       `json:"finish_reason"`
	} `json:"choices"`
	Usage struct {
		PromptTokens            int `json:"prompt_tokens"`
		CompletionTokens        int `json:"completion_tokens"`
		CompletionTokensDetails struct {
			ReasoningTokens *int `json:"reasoning_tokens"`
		} `json:"completion_tokens_details"`
	} `json:"usage"`
	Panel Panel `json:"panel"`
}

// decodeStored reads a stored completion, in either encoding.
func decodeStored(raw []byte) (*Completion, error) {
	if len(raw) == 0 {
		return nil, errors.New("the receipt stores no response")
	}
	var probe struct {
		Version int `json:"stored_version"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("reading a stored completion: %w", err)
	}
	if probe.Version == storedVersion {
		c := &Completion{}
		if err := json.Unmarshal(raw, c); err != nil {
			return nil, fmt.Errorf("reading a stored completion: %w", err)
		}
		return c, nil
	}
	var l legacyCompletion
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("reading a stored completion: %w", err)
	}
	c := &Completion{ID: l.ID, Created: l.Created, Model: l.Model, Panel: l.Panel,
		Usage: Usage{PromptTokens: l.Usage.PromptTokens, CompletionTokens: l.Usage.CompletionTokens}}
	if r := l.Usage.CompletionTokensDetails.ReasoningTokens; r != nil {
		c.Usage.ReasoningTokens = *r
	}
	if len(l.Choices) > 0 {
		c.Answer, c.FinishReason = l.Choices[0].Message.Content, l.Choices[0].FinishReason
	}
	return c, nil
}
