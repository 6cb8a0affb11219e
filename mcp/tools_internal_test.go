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

// A self-answered tool's arguments are held to the types, minLength and
// minimum of its input schema; a group of requiredAny needs one of its
// arguments; an alias stands for its argument, and both may be passed only
// with the same value. null is an absent argument.
func TestSelfAnsweredArgumentChecks(t *testing.T) {
	t.Parallel()
	var got map[string]json.RawMessage
	run := func(_ context.Context, _ *access.Principal, c *toolCall) *toolResult {
		got = c.args
		return textResult(map[string]string{"ok": "yes"}, false)
	}
	set := newToolSet(&tool{desc: toolDesc{Name: "self", InputSchema: json.RawMessage(`{"type":"object","properties":{
		"spec":{"type":"object"},"id":{"type":"string","minLength":1},"alias":{"type":"string"},
		"go":{"type":"boolean"},"n":{"type":"integer","minimum":1}}}`)},
		selfAnswered: true, requiredAny: [][]string{{"spec", "id"}}, aliases: map[string]string{"alias": "id"}, run: run})
	call := func(args string) *response {
		method := "tools/call"
		return set.call(context.Background(), nil, &message{ID: json.RawMessage(`1`), Method: &method,
			Params: json.RawMessage(`{"name":"self","arguments":` + args + `}`), hasID: true}, nil)
	}
	for _, args := range []string{
		`{}`, `{"go":true}`, `{"spec":null}`, `{"spec":[]}`, `{"spec":"{}"}`, `{"id":""}`, `{"id":7}`,
		`{"spec":{},"go":"true"}`, `{"spec":{},"n":0}`, `{"spec":{},"n":1.5}`, `{"spec":{},"n":"1"}`,
		`{"id":"a","alias":"b"}`,
	} {
		res := call(args)
		require.NotNil(t, res.Error, args)
		require.Equal(t, codeInvalidParams, res.Error.Code, args)
	}
	for args, want := range map[string]string{
		`{"spec":{"a":1},"n":2,"go":false}`: `{"spec":{"a":1},"n":2,"go":false}`,
		`{"alias":"m"}`:                     `{"id":"m"}`,
		`{"alias":"m","id":"m"}`:            `{"id":"m"}`,
		`{"id":"m","spec":null,"n":null}`:   `{"id":"m"}`,
	} {
		res := call(args)
		require.Nil(t, res.Error, args)
		b, err := json.Marshal(got)
		require.NoError(t, err)
		require.JSONEq(t, want, string(b), args)
	}
}
