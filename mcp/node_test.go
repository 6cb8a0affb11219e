package mcp_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/nodetest"
	"github.com/conclavehq/conclave/mcp"
)

// The official TypeScript SDK client (compat/mcp/sdk.test.mjs): list, call
// with output schemas, isError, -32602, -32601, 401, a raw batch, and a
// deliberation that outlasts the client's request timeout because its
// progress resets it. The simulator runs at real time and every model call
// of the slow questions takes a second: the deliberation lasts about four
// seconds, progress arriving about every second, against a two-and-a-half
// second timeout — the 60-second default against a 90-second deliberation,
// scaled down.
func TestTypeScriptSDKClient(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)
	tb := setup(t, func(o *setupOpts) { o.timeScale = 1 })
	slow, err := json.Marshal([]string{
		slowQuestion("Should our team move its monolith to services this year?", "1s"),
		slowQuestion("Should our team move its billing to an event-sourced ledger?", "1s"),
	})
	require.NoError(t, err)
	nodetest.Test(t, 3*time.Minute, map[string]string{
		"CONCLAVE_MCP_URL": tb.base + mcp.Path, "CONCLAVE_KEY": tb.key,
		"CONCLAVE_SLOW_QUESTIONS": string(slow), "CONCLAVE_TIMEOUT_MS": "2500",
	}, "mcp/sdk.test.mjs")
}

// The MCP Inspector's CLI (compat/mcp/inspector.test.mjs): list (also
// after probing server/discover), call, isError, -32602, -32601 and 401.
func TestInspectorCLI(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)
	tb := setup(t)
	nodetest.Test(t, 5*time.Minute, map[string]string{"CONCLAVE_MCP_URL": tb.base + mcp.Path, "CONCLAVE_KEY": tb.key},
		"mcp/inspector.test.mjs")
}
