package mcp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/carrier"
)

// A deliberation runs past the 60-second default request timeout of common
// MCP clients. A deliberate call that sends a progressToken and accepts an
// event stream is answered with one on its own POST: notifications/progress
// as the deliberation advances (each resets such a client's timeout), then
// the result. Anything else is answered with plain JSON.

// streams reports whether m is answered with an event stream: a single
// tools/call of deliberate with a progressToken, from a client that
// accepts text/event-stream.
func (h *Handler) streams(r *http.Request, m *message) bool {
	if *m.Method != "tools/call" || !acceptsEventStream(r) {
		return false
	}
	var cp callParams
	if json.Unmarshal(m.Params, &cp) != nil || cp.Name == nil || *cp.Name != "deliberate" {
		return false
	}
	// A token that is not one answers -32602 in plain JSON (parseCall).
	return present(cp.Meta.ProgressToken) && cp.Meta.progressTokenProblem() == "" && h.calls.Deliberates()
}

func acceptsEventStream(r *http.Request) bool {
	for _, v := range r.Header.Values("Accept") {
		for _, part := range strings.Split(v, ",") {
			mt, _, _ := strings.Cut(part, ";")
			if strings.EqualFold(strings.TrimSpace(mt), "text/event-stream") {
				return true
			}
		}
	}
	return false
}

// progressBuffer is how many steps may wait to be written; a client that
// reads slower loses steps, never the result.
const progressBuffer = 64

type progressParams struct {
	ProgressToken json.RawMessage `json:"progressToken"`
	Progress      int             `json:"progress"`
	Message       string          `json:"message"`
}

type notification struct {
	JSONRPC string `json:"jsonrpc"`
	Method  string `json:"method"`
	Params  any    `json:"params"`
}

// serveStream answers m with an event stream. When the client leaves, the
// stream ends (the request is logged client_closed_request); the
// deliberation goes on, is billed once and stored, and a retry with the
// same arguments gets request_in_progress, then the replay.
func (h *Handler) serveStream(w http.ResponseWriter, r *http.Request, p *access.Principal, m *message) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		answer(w, r, http.StatusOK, h.dispatch(r.Context(), p, m, nil))
		return
	}
	var cp callParams
	_ = json.Unmarshal(m.Params, &cp) // streams has read it
	steps := make(chan calls.Progress, progressBuffer)
	observe := func(pr calls.Progress) {
		select {
		case steps <- pr:
		default:
		}
	}
	done := make(chan *response, 1)
	go func() { done <- h.dispatch(r.Context(), p, m, observe) }()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Accel-Buffering", "no") // proxies must not hold progress back
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	sent, last := 0, "Deliberating."
	notify := func(msg string) {
		sent++
		last = msg
		writeEvent(w, notification{JSONRPC: "2.0", Method: "notifications/progress",
			Params: progressParams{ProgressToken: cp.Meta.ProgressToken, Progress: sent, Message: msg}})
		flusher.Flush()
	}
	heartbeat := time.NewTicker(h.cfg.ProgressInterval)
	defer heartbeat.Stop()
	for {
		select {
		case pr := <-steps:
			notify(pr.Describe())
		case <-heartbeat.C:
			// A long silence (a slow seat) would otherwise let a client's
			// timeout run out: the last step again, still advancing.
			notify(strings.TrimSuffix(last, " (still running)") + " (still running)")
		case res := <-done:
			for drained := false; !drained; {
				select {
				case pr := <-steps:
					notify(pr.Describe())
				default:
					drained = true
				}
			}
			writeEvent(w, res)
			flusher.Flush()
			noteCode(r.Context(), answerCode(res))
			return
		case <-r.Context().Done():
			noteCode(r.Context(), carrier.CodeClientClosed)
			return
		}
	}
}

// writeEvent writes v as one server-sent event of type message.
func writeEvent(w http.ResponseWriter, v any) {
	b, err := marshal(v)
	if err != nil {
		b, _ = marshal(errorOf(nil, codeInternalError, internalErrorMessage, nil))
	}
	_, _ = fmt.Fprintf(w, "event: message\ndata: %s\n\n", b) // a client that left ends the stream by its context
}
