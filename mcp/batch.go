package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// A batch is bounded three ways, so that no body within the body cap can
// make the server build a large answer:
//
//   - length: only its first Config.MaxBatchMessages elements run; every
//     later request is answered, with its own id, batch_too_large (in the
//     self-answered error shape), unrun;
//   - cost: every message in it spends one request of the key's rate — the
//     tools through their own admission, the protocol messages (initialize,
//     ping, tools/list, …) here — so a batch cannot replay the free
//     protocol messages at no cost;
//   - answer: the answers are encoded and written one at a time as the
//     batch's answer streams out, never held whole, and once
//     Config.MaxBatchAnswerBytes have been written every further answer of
//     a message that ran is replaced by a short batch_too_large naming why.
//
// A string id is at most maxIDBytes (validID), so a short answer is short.

// serveBatch answers a body holding a batch: every element on its own, the
// answers in the order of their requests, 202 when none needs one.
func (h *Handler) serveBatch(w http.ResponseWriter, r *http.Request, p *access.Principal, body []byte) {
	if !json.Valid(body) {
		answer(w, r, http.StatusBadRequest, errorOf(nil, codeParseError, "Parse error: the body is not valid JSON.", nil))
		return
	}
	elems := arrayElements(body)
	first, ok := elems.next()
	if !ok {
		answer(w, r, http.StatusBadRequest, errorOf(nil, codeInvalidRequest, "Invalid Request: the batch is empty.", nil))
		return
	}
	run := h.runBatch(r, p, first, &elems)
	aw := &answerWriter{w: w, budget: h.cfg.MaxBatchAnswerBytes, overBudget: h.answerOverBudget}
	for _, a := range run {
		if a != nil {
			aw.write(a)
		}
	}
	// The elements past the limit, decoded one at a time as the answer is
	// written: none runs, and none is kept.
	for raw, ok := elems.next(); ok; raw, ok = elems.next() {
		noteUnread(r.Context())
		m, bad := decodeMessage(raw)
		switch {
		case bad != nil:
			aw.write(bad)
		case m.hasID:
			aw.emit(h.pastLimit.before, m.ID, h.pastLimit.after)
		}
	}
	aw.close()
}

// runBatch runs the batch's first Config.MaxBatchMessages elements (first,
// then those elems yields), maxParallel at a time, and returns their
// answers in order: nil for a message that needs none. Each message is
// noted for the request's log line before it runs.
func (h *Handler) runBatch(r *http.Request, p *access.Principal, first json.RawMessage, elems *elements) []*response {
	// Each message's answer has a cell of its own, which only its worker
	// writes: the list of cells may grow (and move) while workers run.
	cells := make([]*batchCell, 0, min(h.cfg.MaxBatchMessages, 64))
	selfAnswered := 0
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxParallel)
	raw, ok := first, true
	for i := 0; ok && i < h.cfg.MaxBatchMessages; i++ {
		c := &batchCell{}
		cells = append(cells, c)
		m, bad := decodeMessage(raw)
		h.note(r.Context(), m)
		self := bad == nil && m.hasID && h.tools.selfAnswered(m)
		switch {
		case bad != nil:
			c.res = bad
		case !m.hasID:
			h.notify(r.Context(), m)
		case self && selfAnswered >= h.cfg.MaxSelfAnswered:
			c.res = h.batchTooLarge(m.ID)
		default:
			if self {
				selfAnswered++
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				c.res = h.dispatchInBatch(r, p, m)
			}()
		}
		if i+1 < h.cfg.MaxBatchMessages {
			raw, ok = elems.next()
		}
	}
	wg.Wait()
	out := make([]*response, len(cells))
	for i, c := range cells {
		out[i] = c.res
	}
	return out
}

// batchCell holds one message's answer in a batch (nil for a notification).
type batchCell struct{ res *response }

// maxParallel is how many messages of one batch run at once.
const maxParallel = 8

// dispatchInBatch answers one request of a batch: a protocol message first
// spends one request of the key's rate, as a tool call does in its own
// admission.
func (h *Handler) dispatchInBatch(r *http.Request, p *access.Principal, m *message) *response {
	if *m.Method != "tools/call" {
		id := messageRequestID(r.Context())
		if err := h.access.Meter(r.Context(), p, id); err != nil {
			e := core.AsError(err)
			h.logFailure(r.Context(), e, id)
			return errorOf(m.ID, codeServerError, e.Message, refusalData{HTTPStatus: core.InfoFor(e.Code).Status, Code: string(e.Code)})
		}
	}
	return h.dispatch(r.Context(), p, m, nil)
}

// batchTooLarge answers a call to a self-answered tool past the batch's
// limit: it did not run.
func (h *Handler) batchTooLarge(id json.RawMessage) *response {
	msg := fmt.Sprintf("This batch holds more than %d calls to self-answered tools; this one did not run. Send it again in another batch.",
		h.cfg.MaxSelfAnswered)
	return batchRefusal(id, msg, map[string]any{"max_self_answered_calls": h.cfg.MaxSelfAnswered})
}

// pastBatchLimit answers a request past the batch's length limit: it did
// not run.
func (h *Handler) pastBatchLimit(id json.RawMessage) *response {
	msg := fmt.Sprintf("This batch holds more than %d messages; this one did not run. Send it again in another batch.",
		h.cfg.MaxBatchMessages)
	return batchRefusal(id, msg, map[string]any{"max_batch_messages": h.cfg.MaxBatchMessages})
}

// idTemplate is an answer encoded once with its id left out: before, the
// id, after. The requests past a batch's limit are answered from one, so
// that answering thousands of them allocates nothing each.
type idTemplate struct{ before, after []byte }

func newIDTemplate(res *response) (idTemplate, error) {
	res.ID = nullID
	b, err := marshal(res)
	if err != nil {
		return idTemplate{}, err
	}
	i := bytes.Index(b, []byte(`"id":null`))
	if i < 0 {
		return idTemplate{}, fmt.Errorf("mcp: an answer's encoding has no id: %s", b)
	}
	return idTemplate{before: b[:i+len(`"id":`)], after: b[i+len(`"id":null`):]}, nil
}

// answerOverBudget replaces the answer of a message that ran once the
// batch's answer has reached its size limit.
func (h *Handler) answerOverBudget(id json.RawMessage) *response {
	msg := fmt.Sprintf("This batch's answer reached its limit of %d bytes, so this message's answer is left out. "+
		"It ran: send it again alone (a billed call replays its stored answer) or read its receipt.", h.cfg.MaxBatchAnswerBytes)
	return batchRefusal(id, msg, map[string]any{"max_batch_answer_bytes": h.cfg.MaxBatchAnswerBytes})
}

// batchRefusal is batch_too_large for the request id, in the self-answered
// error shape.
func batchRefusal(id json.RawMessage, msg string, extra map[string]any) *response {
	return errorOf(id, codeServerError, msg, selfAnsweredError{
		HTTPStatus: core.InfoFor(core.CodeBatchTooLarge).Status,
		Error:      selfAnsweredBody{Code: string(core.CodeBatchTooLarge), Message: msg},
		Conclave:   extra,
	})
}

// answerWriter writes a batch's answer as a JSON array, one answer at a
// time: the status and the opening bracket with the first, 202 and no body
// when there is none. Past budget bytes, an answer that is not a refusal is
// replaced by overBudget's.
type answerWriter struct {
	w          http.ResponseWriter
	budget     int64
	overBudget func(id json.RawMessage) *response
	written    int64
}

func (a *answerWriter) write(res *response) {
	b, err := marshal(res)
	if err != nil {
		b, _ = marshal(errorOf(res.ID, codeInternalError, internalErrorMessage, nil))
	}
	if a.written+int64(len(b)) > a.budget && res.Error == nil {
		b, _ = marshal(a.overBudget(res.ID))
	}
	a.emit(b)
}

// emit writes one answer, in parts, after the bracket or comma before it.
func (a *answerWriter) emit(parts ...[]byte) {
	sep := comma
	if a.written == 0 {
		a.w.Header().Set("Content-Type", "application/json")
		a.w.WriteHeader(http.StatusOK)
		sep = openBracket
	}
	n, _ := a.w.Write(sep) // a client that left ends the request by its context
	a.written += int64(n)
	for _, b := range parts {
		n, _ = a.w.Write(b)
		a.written += int64(n)
	}
}

var comma, openBracket, closeBracket = []byte{','}, []byte{'['}, []byte{']'}

func (a *answerWriter) close() {
	if a.written == 0 {
		a.w.WriteHeader(http.StatusAccepted)
		return
	}
	_, _ = a.w.Write(closeBracket)
}

// elements walks the elements of a JSON array that json.Valid accepted,
// without decoding them: each is a slice of the body.
type elements struct {
	b   []byte
	pos int
}

// arrayElements returns the elements of the array body, which must be
// valid JSON whose first non-space byte is '['.
func arrayElements(body []byte) elements {
	i := bytes.IndexByte(body, '[')
	return elements{b: body, pos: i + 1}
}

// next returns the next element, or false past the last.
func (e *elements) next() (json.RawMessage, bool) {
	e.skipSpace()
	if e.pos < len(e.b) && e.b[e.pos] == ',' {
		e.pos++
		e.skipSpace()
	}
	if e.pos >= len(e.b) || e.b[e.pos] == ']' {
		return nil, false
	}
	start, depth, inString := e.pos, 0, false
	for ; e.pos < len(e.b); e.pos++ {
		c := e.b[e.pos]
		switch {
		case inString:
			switch c {
			case '\\':
				e.pos++
			case '"':
				inString = false
			}
			continue
		case c == '"':
			inString = true
			continue
		case c == '{' || c == '[':
			depth++
			continue
		case c == '}' || c == ']':
			if depth == 0 {
				return e.b[start:e.pos], true // the array's own ']'
			}
			depth--
			if depth == 0 {
				e.pos++
				return e.b[start:e.pos], true
			}
			continue
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return e.b[start:e.pos], true // a scalar element ends
		}
	}
	return e.b[start:e.pos], true
}

func (e *elements) skipSpace() {
	for e.pos < len(e.b) {
		switch e.b[e.pos] {
		case ' ', '\t', '\r', '\n':
			e.pos++
		default:
			return
		}
	}
}
