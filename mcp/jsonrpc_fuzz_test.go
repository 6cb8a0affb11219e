package mcp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzDecodeMessage: whatever a caller sends as one element of a body,
// decodeMessage returns a message or the error to answer, never both,
// never neither, never a panic; an answered error is valid JSON-RPC with
// an id a client can match (the request's, or null).
func FuzzDecodeMessage(f *testing.F) {
	for _, seed := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":"x","result":{}}`,
		`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
		`{"jsonrpc":"1.0","id":[1],"method":3}`,
		`{"id":1e400}`, `[]`, `7`, `"s"`, `null`, `{`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return // the body's parse answers -32700 before any element is decoded
		}
		m, bad := decodeMessage(raw)
		if (m == nil) == (bad == nil) {
			t.Fatalf("decodeMessage(%q) = %v, %v: want exactly one", raw, m, bad)
		}
		if bad != nil {
			b, err := marshal(bad)
			if err != nil {
				t.Fatalf("the error for %q does not encode: %v", raw, err)
			}
			var back struct {
				ID    json.RawMessage    `json:"id"`
				Error struct{ Code int } `json:"error"`
			}
			if err := json.Unmarshal(b, &back); err != nil || back.Error.Code != codeInvalidRequest {
				t.Fatalf("the error for %q is %s", raw, b)
			}
			if string(back.ID) != "null" && !validID(back.ID) {
				t.Fatalf("the error for %q names id %s", raw, back.ID)
			}
			return
		}
		if m.Method == nil && m.hasID {
			t.Fatalf("a message without a method must not be answered: %q", raw)
		}
	})
}

// FuzzArrayElements: for any valid JSON array, the elements the batch walks
// are exactly the elements encoding/json decodes, byte for byte up to the
// space around them, in order.
func FuzzArrayElements(f *testing.F) {
	for _, seed := range []string{
		`[]`, `[ ]`, `[1]`, `[1,2,3]`, ` [ "a" , "b,]" ] `, `["\"]", "\\"]`, `[{"a":[1,{"b":"]}"}]},[],{}]`,
		`[null,true,false,-1.5e3,"\u005d"]`, "[\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\t,\r\n7\n]",
		`[[[[]]],[[],[]]]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		var want []json.RawMessage
		if firstByte(raw) != '[' || json.Unmarshal(raw, &want) != nil {
			return // serveBatch walks only a valid array
		}
		elems := arrayElements(raw)
		var got []json.RawMessage
		for e, ok := elems.next(); ok; e, ok = elems.next() {
			got = append(got, e)
			if len(got) > len(want) {
				break
			}
		}
		if len(got) != len(want) {
			t.Fatalf("%q: walked %d elements, want %d (%q)", raw, len(got), len(want), got)
		}
		for i := range want {
			if string(bytes.TrimSpace(want[i])) != string(got[i]) {
				t.Fatalf("%q: element %d is %q, want %q", raw, i, got[i], want[i])
			}
		}
	})
}
