package api

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/wire"
)

// listModels answers GET /v1/models: the modes this key may call.
func (h *handler) listModels(w http.ResponseWriter, r *http.Request) {
	modes, err := h.calls.ListModes(r.Context(), principalOf(r.Context()))
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ModelListOf(modes, h.started.Unix()))
}

// getModel answers GET /v1/models/{model} (slug or ticker). The router
// matches on the escaped path, so a ticker a client percent-encoded
// (CNCL%3ASTND) is unescaped here; what does not unescape names no mode.
func (h *handler) getModel(w http.ResponseWriter, r *http.Request) {
	id, err := url.PathUnescape(chi.URLParam(r, "model"))
	if err != nil {
		writeError(w, r, core.ModelNotFound())
		return
	}
	m, err := h.calls.ResolveMode(r.Context(), principalOf(r.Context()), id, core.ActionModelsRead, "")
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ModelEntryOf(h.calls.View(m), h.started.Unix()))
}
