package api

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/wire"
)

// receiptRoutes serves /v1/receipts: GET /{request_id}, and 400
// missing_request_id when the id is left out.
func (h *handler) receiptRoutes() http.Handler {
	r := chi.NewRouter()
	r.NotFound(h.metered(notFound))
	r.MethodNotAllowed(h.metered(methodNotAllowed(r)))
	scope := chi.Chain(h.requireScope(core.ActionReceiptsRead), h.meter).Handler
	r.Method(http.MethodGet, "/", scope(http.HandlerFunc(h.missingRequestID)))
	r.Method(http.MethodGet, "/{request_id}", scope(http.HandlerFunc(h.getReceipt)))
	return r
}

func (h *handler) missingRequestID(w http.ResponseWriter, r *http.Request) {
	writeError(w, r, core.Errorf(core.CodeMissingRequestID, "Name the call: GET /v1/receipts/{request_id}, with the request_id from panel.request_id.").WithParam("request_id"))
}

// getReceipt answers GET /v1/receipts/{request_id}: the call's receipt, or
// the receipt-unavailable form for a call that never convened a panel. Both
// reads are scoped to the caller's organisation in SQL; anything else is
// 404 receipt_not_found.
func (h *handler) getReceipt(w http.ResponseWriter, r *http.Request) {
	id := strings.TrimSpace(chi.URLParam(r, "request_id"))
	if id == "" {
		h.missingRequestID(w, r)
		return
	}
	transcript, err := parseIncludeTranscript(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	a, err := h.calls.Receipt(r.Context(), principalOf(r.Context()), id)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ReceiptOf(a, transcript))
}

// parseIncludeTranscript reads include_transcript: absent or "false" is
// false, "true" is true, anything else (or the parameter twice) is 400.
func parseIncludeTranscript(r *http.Request) (bool, error) {
	vals, ok := r.URL.Query()["include_transcript"]
	if !ok {
		return false, nil
	}
	if len(vals) == 1 {
		switch vals[0] {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
	}
	return false, core.Errorf(core.CodeInvalidRequest, "include_transcript must be true or false.").WithParam("include_transcript")
}
