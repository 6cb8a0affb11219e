package api

import (
	"net/http"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/classify"
)

type estimateResponse struct {
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

// estimate answers POST /v1/estimate: the classification a real call would
// make and the surcharge it would quote, without running the panel and
// without charge.
func (h *handler) estimate(w http.ResponseWriter, r *http.Request) {
	var in calls.EstimateInput
	if err := decodeJSON(w, r, h.cfg.MaxBodyBytes, &in); err != nil {
		h.refuse(w, r, err)
		return
	}
	req, err := calls.ParseEstimate(&in)
	if err != nil {
		h.refuse(w, r, err)
		return
	}
	e, err := h.calls.Estimate(r.Context(), principalOf(r.Context()), callOf(r), req)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, estimateResponse{
		RequestID: e.RequestID, Model: req.Model, Mode: e.Mode.ID, ModeKey: e.Mode.Key,
		Depth: e.Depth, DifficultyScore: e.DifficultyScore, TaskType: e.TaskType,
		HallucinationRisk: e.HallucinationRisk, EstimatedPriceUSD: core.Dollars(e.EstimatedPrice),
		DeliberationValue: e.DeliberationValue,
		TimingMS:          estimateTiming{Total: e.Total.Milliseconds(), Classify: e.Classify.Milliseconds()},
	})
}
