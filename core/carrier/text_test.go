package carrier_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/carrier"
)

func TestText(t *testing.T) {
	t.Parallel()
	for s, ok := range map[string]bool{
		"": true, "conclave-standard": true, "ACME:PANL": true, "héllo 🙂": true, "\uE000": true,
		"a\x00b": false, "\x00": false, "a\xffb": false, "\xe4\xb8": false,
	} {
		require.Equal(t, ok, carrier.Text(s), "%q", s)
	}
}

// JSONText names the first string of a document — key or value, at any
// depth — that Text refuses, by its path.
func TestJSONText(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc, path string
		ok        bool
	}{
		{`{"name":"Acme","seats":[{"engine":"a"}]}`, "", true},
		{`{"note":"a\\u0000 is fine: an escaped backslash"}`, "", true},
		{`{"name":"A\u0000b"}`, "name", false},
		{`{"a":{"b":[1,"x",{"c":"\u0000"}]}}`, "a.b[2].c", false},
		{`{"a":[[1],[2,"\u0000"]]}`, "a[1][1]", false},
		{`{"k\u0000":1}`, "k\x00", false},
		{`{"a":1,"b":{"c":true},"d":"\u0000"}`, "d", false},
		{"{\"a\":\"\xff\"}", "a", false},
		{"{\"a\":[\"ok\",\"x\xe4\xb8\"]}", "a[1]", false},
		{"{\"k\xff\":1}", "k\ufffd", false},
		{`"\u0000"`, "", false},
		{`[1,2,"\u0000"]`, "[2]", false},
		{`{"a":`, "", true},
		{"{\"a\":\xff}", "", false},
	} {
		path, ok := carrier.JSONText([]byte(tc.doc))
		require.Equal(t, tc.ok, ok, "%q", tc.doc)
		require.Equal(t, tc.path, path, "%q", tc.doc)
	}
}

// FuzzJSONText holds JSONText to a plain reading of the document: a JSON
// document passes exactly when it is UTF-8 and none of its strings holds a
// NUL once decoded.
func FuzzJSONText(f *testing.F) {
	for _, s := range []string{`{}`, `{"a":"\u0000"}`, `{"a":"\\u0000"}`, "{\"a\":\"\xff\"}", `[{"k\u0000":[1]}]`,
		`"x"`, `{"a":[1,{"b":"c"}],"d":"\u0000"}`, `{"a":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		path, ok := carrier.JSONText(raw)
		if ok {
			require.Empty(t, path)
		}
		if !json.Valid(raw) {
			return
		}
		var v any
		require.NoError(t, json.Unmarshal(raw, &v))
		want := utf8.Valid(raw) && !holdsNUL(v)
		require.Equal(t, want, ok, "%s", strconv.Quote(string(raw)))
	})
}

func holdsNUL(v any) bool {
	switch v := v.(type) {
	case string:
		return strings.IndexByte(v, 0) >= 0
	case []any:
		for _, e := range v {
			if holdsNUL(e) {
				return true
			}
		}
	case map[string]any:
		for k, e := range v {
			if strings.IndexByte(k, 0) >= 0 || holdsNUL(e) {
				return true
			}
		}
	}
	return false
}
