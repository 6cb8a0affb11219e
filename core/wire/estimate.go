package wire

import (
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/classify"
)

// Estimate is the answer to POST /v1/estimate and the estimate tool's result.
type Estimate struct {
	RequestID         string         `json:"request_id"`
	Model             string         `json:"model"`
	Mode              string         `json:"mode"`
	ModeKey           string         `json:"mode_key"`
	Depth             core.Depth     `json:"depth"`
	DifficultyScore   float64        `json:"difficulty_score"`
	TaskType          string         `json:"task_type"`
	HallucinationRisk string         `json:"hallucination_risk"`
	EstimatedPriceUSD core.Dollars   `json:"estimated_price_usd"`
	BilledUSD         core.Dollars   `json:"billed_usd"`
	DeliberationValue classify.Value `json:"deliberation_value"`
	TimingMS          estimateTiming `json:"timing_ms"`
}

type estimateTiming struct {
	Total    int64 `json:"total"`
	Classify int64 `json:"classify"`
}

// EstimateOf is e, an estimate of a call naming model, on the wire.
func EstimateOf(e *calls.Estimate, model string) *Estimate {
	return &Estimate{
		RequestID: e.RequestID, Model: model, Mode: e.Mode.ID, ModeKey: e.Mode.Key,
		Depth: e.Depth, DifficultyScore: e.DifficultyScore, TaskType: e.TaskType,
		HallucinationRisk: e.HallucinationRisk, EstimatedPriceUSD: core.Dollars(e.EstimatedPrice),
		DeliberationValue: e.DeliberationValue,
		TimingMS:          estimateTiming{Total: e.Total.Milliseconds(), Classify: e.Classify.Milliseconds()},
	}
}
