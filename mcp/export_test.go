package mcp

// SetDispatchSpy has h tell spy the method of every message it dispatches
// (notifications included) before it runs; a spy that panics is a fault in
// that method.
func SetDispatchSpy(h *Handler, spy func(method string)) { h.onDispatch = spy }
