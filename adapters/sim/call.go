package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/conclavehq/conclave/core"
)

// format is one provider's wire format.
type format interface {
	name() string
	// pathModel is the model id the path names; "" when it is in the body.
	pathModel(r *http.Request) string
	// apiKey is the API key the request carries ("" when none).
	apiKey(r *http.Request) string
	decode(r *http.Request, body []byte) (*call, error)
	// success is the response body of an answered call.
	success(c *call, rep reply, meta responseMeta) any
	// failure is the status, extra headers and body of a failed call.
	failure(f *failure) (status int, header http.Header, body any)
}

// call is one model call, whatever its wire format.
type call struct {
	model     string
	system    string
	messages  []message
	maxTokens int  // 0 when the request sets none
	jsonMode  bool // the request asks the provider to enforce JSON
	attempt   int  // which attempt at this prompt and model, from 0
}

type message struct {
	role string // "user" or "assistant"
	text string
}

// text is the whole prompt: system prompt and every message.
func (c *call) text() string {
	var b strings.Builder
	b.WriteString(c.system)
	for _, m := range c.messages {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(m.text)
	}
	return b.String()
}

// inputTokens is TokenCount of the system prompt and messages concatenated.
func (c *call) inputTokens() int {
	n := len(c.system)
	for _, m := range c.messages {
		n += len(m.text)
	}
	return (n + 3) / 4
}

// lastUser is the text of the last user message.
func (c *call) lastUser() string {
	for i := len(c.messages) - 1; i >= 0; i-- {
		if c.messages[i].role == "user" {
			return c.messages[i].text
		}
	}
	return ""
}

// reply is what an answered call returns.
type reply struct {
	text         string
	finish       string // core.FinishStop, FinishLength or FinishFiltered
	inputTokens  int
	outputTokens int
}

type responseMeta struct {
	id      string
	created int64
	elapsed time.Duration
}

// failure is a refused or failed call.
type failure struct {
	class   core.ErrorClass
	message string
	// unauthenticated marks a missing or wrong API key (401 everywhere),
	// as opposed to the auth_refused directive.
	unauthenticated bool
	// awsType overrides Bedrock's x-amzn-errortype (signature failures).
	awsType string
	// inputTokens and limit describe a context_too_long failure.
	inputTokens, limit int
}

// reply writes the answer to c, shaped by the directives and max tokens,
// and remembers the answer as sent, with its quality, for the judges.
func (s *Server) reply(ctx context.Context, c *call, prof EngineProfile, d directives) reply {
	text := d.answer
	var rec *AnswerRecord
	if !d.hasAnswer {
		text, rec = s.answer(ctx, c, prof, d)
	}
	finish := core.FinishStop
	if d.tokensOut > 0 {
		text = fitTokens(text, d.tokensOut)
	}
	switch d.finish {
	case core.FinishFiltered:
		text, finish = "", core.FinishFiltered
	case core.FinishLength:
		text, finish = cutTokens(text, max(1, TokenCount(text)/2)), core.FinishLength
	}
	if c.maxTokens > 0 && TokenCount(text) > c.maxTokens {
		text, finish = cutTokens(text, c.maxTokens), core.FinishLength
	}
	if rec != nil && strings.TrimSpace(text) != "" {
		s.memo.put(text, *rec) // as sent: a judge sees it cut, if it was
	}
	return reply{text: text, finish: finish, inputTokens: c.inputTokens(), outputTokens: TokenCount(text)}
}

// cutTokens shortens text to at most n tokens, on a rune boundary.
func cutTokens(text string, n int) string {
	limit := 4 * n
	if len(text) <= limit {
		return text
	}
	for limit > 0 && !utf8.RuneStart(text[limit]) {
		limit--
	}
	return text[:limit]
}

// fitTokens makes text exactly n tokens long: cut, or padded with filler.
func fitTokens(text string, n int) string {
	if TokenCount(text) >= n {
		return cutTokens(text, n)
	}
	const filler = " and so on"
	var b strings.Builder
	b.WriteString(text)
	for b.Len() < 4*n {
		b.WriteString(filler)
	}
	return cutTokens(b.String(), n)
}

func writeJSON(w http.ResponseWriter, status int, hdr http.Header, v any) {
	body, err := json.Marshal(v)
	if err != nil { // only our own types are marshalled: a bug
		http.Error(w, "simulated provider: encoding a response: "+err.Error(), http.StatusInternalServerError)
		return
	}
	for k, vs := range hdr {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeMalformed sends a 200 whose JSON body is cut off two thirds of the
// way through, as a provider does when a response is truncated in flight.
func writeMalformed(w http.ResponseWriter, hdr http.Header, v any) {
	body, _ := json.Marshal(v)
	body = body[:len(body)*2/3]
	body = bytes.TrimRight(body, "}]") // never accidentally complete
	for k, vs := range hdr {
		w.Header()[k] = vs
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// contentText reads a message content that is either a string or an array
// of {"type":"text","text":…} blocks (other block types are skipped).
func contentText(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return "", nil
	}
	if raw[0] == '"' {
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", err
	}
	var b strings.Builder
	for _, bl := range blocks {
		if bl.Type == "" || bl.Type == "text" || bl.Type == "input_text" {
			b.WriteString(bl.Text)
		}
	}
	return b.String(), nil
}

// decodeStrict unmarshals a JSON body, naming what was wrong.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return &decodeError{err: err}
	}
	return nil
}

type decodeError struct{ err error }

func (e *decodeError) Error() string { return "the request body is not valid JSON: " + e.err.Error() }
func (e *decodeError) Unwrap() error { return e.err }
