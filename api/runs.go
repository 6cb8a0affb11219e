package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/wire"
)

// runRoutes serves benchmark runs: POST, GET and DELETE /v1/tests and
// /v1/certify (core/bench/runs; docs/tests.md). Every route checks its scope and spends
// one request of the key's rate first; launches are not admitted like
// calls (they take no concurrency slot), and are charged in the run
// service. Bodies are closed: a field a route does not read is refused.
func (h *handler) runRoutes(r chi.Router) {
	r.With(h.requireScope(core.ActionTestsCreate), h.meter).Post("/tests", h.launch(runs.KindTest))
	r.With(h.requireScope(core.ActionTestsRead), h.meter).Get("/tests", h.pollBatch(runs.KindTest))
	r.With(h.requireScope(core.ActionCertifyCreate), h.meter).Post("/certify", h.launch(runs.KindCertify))
	r.With(h.requireScope(core.ActionCertifyRead), h.meter).Get("/certify", h.pollBatch(runs.KindCertify))
	r.With(h.requireScope(core.ActionTestsRead), h.meter).Delete("/tests", h.cancelBatch(runs.KindTest))
	r.With(h.requireScope(core.ActionCertifyRead), h.meter).Delete("/certify", h.cancelBatch(runs.KindCertify))
}

// launch answers POST /v1/tests and POST /v1/certify: a dry run's quote or
// the batch launched; a repeat of an Idempotency-Key that launched a batch
// answers it again, with the header Idempotent-Replayed: true.
func (h *handler) launch(kind runs.Kind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key := ""
		if v, ok := r.Header[http.CanonicalHeaderKey("Idempotency-Key")]; ok {
			if len(v) != 1 || v[0] == "" {
				writeError(w, r, calls.CheckIdempotencyKey(""))
				return
			}
			key = v[0]
		}
		p := principalOf(r.Context())
		var acc *runs.Acceptance
		var err error
		if kind == runs.KindCertify {
			var in runs.CertifyRequest
			if err := decodeClosedJSON(w, r, h.cfg.MaxBodyBytes, &in, false); err != nil {
				writeError(w, r, err)
				return
			}
			acc, err = h.runs.Certify(r.Context(), p, runs.Key{Value: key}, &in)
		} else {
			var in runs.TestRequest
			if err := decodeClosedJSON(w, r, h.cfg.MaxBodyBytes, &in, false); err != nil {
				writeError(w, r, err)
				return
			}
			acc, err = h.runs.Test(r.Context(), p, runs.Key{Value: key}, &in)
		}
		if err != nil {
			writeError(w, r, err)
			return
		}
		if acc.Replayed {
			w.Header().Set("Idempotent-Replayed", "true")
		}
		writeJSON(w, http.StatusOK, wire.AcceptanceOf(acc))
	}
}

// pollBatch answers GET /v1/tests and GET /v1/certify: one of the
// organisation's batches of kind, by the query's batch_id.
func (h *handler) pollBatch(kind runs.Kind) http.HandlerFunc {
	return h.onBatch(func(r *http.Request, id string) (*runs.Batch, error) {
		return h.runs.Batch(r.Context(), principalOf(r.Context()), kind, id)
	})
}

// cancelBatch answers DELETE /v1/tests and DELETE /v1/certify: the
// organisation's batch of kind named by the query's batch_id is cancelled,
// and answered as the poll answers it.
func (h *handler) cancelBatch(kind runs.Kind) http.HandlerFunc {
	return h.onBatch(func(r *http.Request, id string) (*runs.Batch, error) {
		return h.runs.Cancel(r.Context(), principalOf(r.Context()), kind, id)
	})
}

// onBatch answers a request on the batch the query's batch_id names (sent
// at most once) with do's batch.
func (h *handler) onBatch(do func(r *http.Request, id string) (*runs.Batch, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ids := r.URL.Query()["batch_id"]
		if len(ids) > 1 {
			writeError(w, r, core.Errorf(core.CodeInvalidRequest, "Send batch_id once.").WithParam("batch_id"))
			return
		}
		id := ""
		if len(ids) == 1 {
			id = ids[0]
		}
		b, err := do(r, id)
		if err != nil {
			writeError(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, wire.BatchAnswerOf(b))
	}
}
