package carrier

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Text reports whether s, a string a caller sent, can reach the database:
// PostgreSQL's text refuses a NUL and bytes that are not UTF-8, and a query
// it refuses is an outage (503) where the caller's mistake is a 4xx. Each
// caller string that reaches a query is checked with it once, by the core
// service every carrier decodes that field into, which answers the field's
// own code (docs/rationale.md: "Why is a NUL in a name a 404, …").
func Text(s string) bool {
	return utf8.ValidString(s) && strings.IndexByte(s, 0) < 0
}

// JSONText checks the strings of raw, a JSON document a caller sent to be
// kept (a mode spec), by Text: it returns the path of the first string —
// an object key or a value — that holds a NUL (written \u0000) or bytes
// that are not UTF-8, as "staff.judge.engine" or "seats[2]" ("" for the
// document itself), and false; or "" and true when every string passes. Of
// a document that is not JSON only the bytes are checked: whoever reads it
// refuses the rest. Its cost is one pass over raw.
func JSONText(raw []byte) (string, bool) {
	bad := int64(-1) // the offset of the first byte that is not UTF-8
	if !utf8.Valid(raw) {
		for i := 0; i < len(raw); {
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				bad = int64(i)
				break
			}
			i += size
		}
	}
	if bad < 0 && !bytes.Contains(raw, []byte(`\u0000`)) {
		return "", true
	}
	w := &jsonWalk{dec: json.NewDecoder(bytes.NewReader(raw))}
	w.dec.UseNumber()
	for {
		start := w.dec.InputOffset()
		tok, err := w.dec.Token()
		if err != nil {
			// The end, or what is not JSON: a bad byte not in a string
			// found so far is the document's.
			return "", bad < 0
		}
		end := w.dec.InputOffset()
		s, isString := tok.(string)
		if isString && (strings.IndexByte(s, 0) >= 0 || (bad >= start && bad < end)) {
			return w.path(s), false
		}
		if bad >= 0 && bad < start {
			return w.path(""), false
		}
		w.step(tok)
	}
}

// jsonWalk is where a token stream is in its document.
type jsonWalk struct {
	dec *json.Decoder
	// frames are the open objects and arrays, outermost first.
	frames []jsonFrame
}

type jsonFrame struct {
	array bool
	key   string // the member being read (objects)
	index int    // the element being read (arrays)
	// wantKey is set in an object where the next string is a member's
	// name.
	wantKey bool
}

// path is the path of the value being read, or, when the walk is at an
// object's member name, of that member (key is its name).
func (w *jsonWalk) path(key string) string {
	var b strings.Builder
	for i, f := range w.frames {
		last := i == len(w.frames)-1
		switch {
		case f.array:
			b.WriteString("[" + strconv.Itoa(f.index) + "]")
			continue
		case last && f.wantKey:
			f.key = key
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(f.key)
	}
	return b.String()
}

// step moves the walk past tok.
func (w *jsonWalk) step(tok json.Token) {
	top := len(w.frames) - 1
	if top >= 0 && !w.frames[top].array && w.frames[top].wantKey {
		if k, ok := tok.(string); ok {
			w.frames[top].key, w.frames[top].wantKey = k, false
			return
		}
	}
	switch tok {
	case json.Delim('{'):
		w.frames = append(w.frames, jsonFrame{wantKey: true})
		return
	case json.Delim('['):
		w.frames = append(w.frames, jsonFrame{array: true})
		return
	case json.Delim('}'), json.Delim(']'):
		w.frames = w.frames[:top]
		top--
	}
	// A value ended: the enclosing object wants its next key, the
	// enclosing array its next element.
	if top >= 0 {
		if w.frames[top].array {
			w.frames[top].index++
		} else {
			w.frames[top].wantKey = true
		}
	}
}
