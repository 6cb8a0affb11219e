package api

import (
	"net/http"

	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/wire"
)

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
	writeJSON(w, http.StatusOK, wire.EstimateOf(e, req.Model))
}
