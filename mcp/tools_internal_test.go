package mcp

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/access"
)

// A self-answered tool refuses a call that lacks a required argument, or
// passes one its schema does not declare, with -32602 before it runs; a forwarding tool runs, so that the REST code
// comes back in its result.
func TestMissingRequiredArguments(t *testing.T) {
	t.Parallel()
	ran := map[string]int{}
	run := func(_ context.Context, _ *access.Principal, c *toolCall) *toolResult {
		ran[c.name]++
		return textResult(map[string]string{"ok": "yes"}, false)
	}
	set := newToolSet(
		&tool{desc: toolDesc{Name: "self", InputSchema: json.RawMessage(`{"type":"object","properties":{"mode":{},"message":{}}}`)},
			selfAnswered: true, required: []string{"mode", "message"}, run: run},
		&tool{desc: toolDesc{Name: "forward"}, required: []string{"model"}, run: run},
	)
	call := func(params string) *response {
		method := "tools/call"
		return set.call(context.Background(), nil, &message{ID: json.RawMessage(`5`), Method: &method, Params: json.RawMessage(params), hasID: true}, nil)
	}
	for _, params := range []string{
		`{"name":"self"}`,
		`{"name":"self","arguments":{}}`,
		`{"name":"self","arguments":{"mode":"m"}}`,
		`{"name":"self","arguments":{"mode":"m","message":null}}`,
		`{"name":"self","arguments":["m"]}`,
		`{"name":"self","arguments":{"mode":"m","message":"hi","extra":1}}`,
	} {
		res := call(params)
		require.NotNil(t, res.Error, params)
		require.Equal(t, codeInvalidParams, res.Error.Code, params)
		require.JSONEq(t, `5`, string(res.ID))
	}
	require.Zero(t, ran["self"])
	res := call(`{"name":"self","arguments":{"mode":"m","message":"hi"}}`)
	require.Nil(t, res.Error)
	require.Equal(t, 1, ran["self"])
	res = call(`{"name":"forward","arguments":{}}`)
	require.Nil(t, res.Error)
	require.Equal(t, 1, ran["forward"])
}
