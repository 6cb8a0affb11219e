package core

import "context"

// Protocol is a judging protocol: a pure plugin that turns a question and
// its anonymised answers into judge prompts (Plan), and the judges' replies
// into scores (Score). The host makes every model call. Like Adapter, it runs
// natively, as a WebAssembly module or as a go-plugin process, and must be
// safe for concurrent use.
type Protocol interface {
	Describe(ctx context.Context) (*ProtocolInfo, error)
	Plan(ctx context.Context, task *JudgeTask) (*JudgePlan, error)
	Score(ctx context.Context, in *JudgeVerdicts) (*JudgeScores, error)
}

// ProtocolInfo describes a judging protocol.
type ProtocolInfo struct {
	Name    string `json:"name"` // "direct", "pairwise", "plurality", …
	Version string `json:"version"`
}

// JudgeTask is what a protocol plans prompts for. Answers are anonymised:
// their ids carry no engine name, and their order is the host's shuffle.
type JudgeTask struct {
	Question string        `json:"question"`
	Answers  []JudgeAnswer `json:"answers"`
	// Seed makes any choice the protocol makes (pair order, say)
	// reproducible; protocols must not read a clock or random source.
	Seed int64 `json:"seed"`
	// Reference is the checked answer of a verifiable question, for the
	// judges to compare the answers with; "" for an open question.
	// Protocols that have no use for it ignore it.
	Reference string `json:"reference,omitempty"`
}

// JudgeAnswer is one anonymised answer.
type JudgeAnswer struct {
	ID   string `json:"id"`
	Text string `json:"text"`
}

// JudgePlan is the prompts a protocol wants judges to answer.
type JudgePlan struct {
	Prompts []JudgePrompt `json:"prompts"`
}

// JudgePrompt is one prompt for a judge engine.
type JudgePrompt struct {
	ID         string `json:"id"`
	System     string `json:"system"`
	User       string `json:"user"`
	JSONOutput bool   `json:"json_output"`
}

// JudgeVerdicts carries the judges' raw replies back to the protocol.
type JudgeVerdicts struct {
	Task     JudgeTask      `json:"task"`
	Verdicts []JudgeVerdict `json:"verdicts"`
}

// JudgeVerdict is one judge's reply to one prompt.
type JudgeVerdict struct {
	PromptID string `json:"prompt_id"`
	Judge    string `json:"judge"` // an opaque judge label
	Text     string `json:"text"`
}

// JudgeScores is a protocol's reading of the verdicts.
type JudgeScores struct {
	// Scores by answer id, 0 to 1.
	Scores map[string]float64 `json:"scores"`
	// Best is the id of the best answer; "" when no verdict could be read,
	// or when the protocol allows ties (pairwise, plurality) and the
	// readable verdicts leave the best answers tied.
	Best string `json:"best"`
	// Divergence is how far apart the answers are, 0 to 1, when the
	// protocol can tell; nil otherwise.
	Divergence *float64 `json:"divergence,omitempty"`
	// Unreadable counts verdicts the protocol could not parse.
	Unreadable int `json:"unreadable"`
	// Converged is whether the readable verdicts found that the answers
	// settled on one position (a majority of them; a tie is false); nil
	// when no readable verdict said.
	Converged *bool `json:"converged,omitempty"`
	// FactualConflict is true when any readable verdict flagged a factual
	// conflict between answers.
	FactualConflict bool `json:"factual_conflict"`
	// ContestedPassage is the passage that carried the split, when a
	// readable verdict named one in a known answer.
	ContestedPassage *ContestedPassage `json:"contested_passage,omitempty"`
}

// ContestedPassage is a quote from one answer that the judges disagreed on.
type ContestedPassage struct {
	Answer string `json:"answer"` // the answer's id
	Quote  string `json:"quote"`
	Why    string `json:"why"`
}
