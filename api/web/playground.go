package web

import "net/http"

// playgroundRoutes serves the playground when the server has a call
// service.
func (h *handler) playgroundRoutes(mux *http.ServeMux) error {
	if h.calls == nil {
		return nil
	}
	return nil
}
