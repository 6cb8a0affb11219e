package api

import (
	"math"
	"net/http"
	"time"

	"github.com/conclavehq/conclave/core"
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
	start := time.Now()
	var req completionRequest
	if !decodeJSON(w, r, h.cfg.MaxBodyBytes, &req) {
		return
	}
	model, err := parseModel(req.Model, core.CodeInvalidModel)
	if err != nil {
		writeError(w, r, err)
		return
	}
	messages, err := parseMessages(req.Messages)
	if err != nil {
		writeError(w, r, err)
		return
	}
	mode, ok := h.resolveMode(w, r, model, core.ActionEstimate)
	if !ok {
		return
	}
	// Free, but counted against the same rate and concurrency ceilings as
	// a billed call.
	_, slot := h.admit(w, r, principalOf(r.Context()), &core.AdmitParams{})
	if slot == nil {
		return
	}
	defer slot.release()
	cstart := time.Now()
	c, err := h.classifier.Classify(r.Context(), messages)
	if err != nil {
		writeError(w, r, core.Errorf(core.CodeClassificationFailed, "The question could not be classified; nothing was billed. Retry shortly.").WithCause(err))
		return
	}
	classifyMS := time.Since(cstart).Milliseconds()
	h.recordOutcome(r, core.OutcomeEstimated, "an estimate classifies the prompt without convening a panel")
	writeJSON(w, http.StatusOK, estimateResponse{
		RequestID: RequestID(r.Context()), Model: model, Mode: mode.ID, ModeKey: mode.Key,
		Depth: c.Depth, DifficultyScore: math.Round(c.Score*1000) / 1000, TaskType: c.TaskType,
		HallucinationRisk: c.HallucinationRisk,
		EstimatedPriceUSD: core.Dollars(mode.Pricing.SurchargeFor(c.Depth)),
		DeliberationValue: c.Value,
		TimingMS:          estimateTiming{Total: time.Since(start).Milliseconds(), Classify: classifyMS},
	})
}
