package api

import (
	"net/http"

	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/wire"
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
		writeJSON(w, http.StatusOK, wire.ReplayOf(res.Replay))
	default:
		writeJSON(w, http.StatusOK, wire.CompletionOf(res.Completion))
	}
}
