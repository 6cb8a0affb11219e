package web

import "net/http"

// modesRoutes serves the mode pages when the server has a modes service.
func (h *handler) modesRoutes(mux *http.ServeMux) error {
	if h.modes == nil {
		return nil
	}
	return nil
}
