package web

import "net/http"

// runsRoutes serves the test-run and certification pages and the
// certificates when the server has a runs service.
func (h *handler) runsRoutes(mux *http.ServeMux) error {
	if h.runs == nil {
		return nil
	}
	return nil
}
