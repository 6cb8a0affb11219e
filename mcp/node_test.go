package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
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

// Mode authoring through the official TypeScript SDK client
// (compat/mcp/authoring.test.mjs): one organisation validates, saves,
// releases and lists a mode; this test approves the listing as the
// operator does once it is requested; another organisation then finds the
// mode and deliberates on it; a second release changes its hash; the
// author tests the mode (a launch and its retry) and quotes its
// certification. The receipt, the versions and the launch's one charge are
// then read back from PostgreSQL.
func TestTypeScriptSDKAuthoring(t *testing.T) {
	t.Parallel()
	nodetest.Require(t)
	tb := setup(t)
	author, authorKey := tb.newOrg(t, "Acme", "ACME")
	caller, callerKey := tb.newOrg(t, "Beta", "BETA")
	spec, err := json.Marshal(panelSpec("Acme Review Panel", "PANL"))
	require.NoError(t, err)
	specV2, err := json.Marshal(twoSeatPlus(panelSpec("Acme Review Panel", "PANL")))
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	approved := make(chan error, 1)
	go func() { approved <- tb.approveWhenPending(ctx, "acme-panl") }()
	nodetest.Test(t, 3*time.Minute, map[string]string{
		"CONCLAVE_MCP_URL": tb.base + mcp.Path, "CONCLAVE_AUTHOR_KEY": authorKey, "CONCLAVE_CALLER_KEY": callerKey,
		"CONCLAVE_SPEC": string(spec), "CONCLAVE_SPEC_V2": string(specV2),
	}, "mcp/authoring.test.mjs")
	require.NoError(t, <-approved)

	hashes := map[int]string{}
	for v := 1; v <= 2; v++ {
		mv, err := tb.store.ModeVersion(ctx, "acme-panl", v)
		require.NoError(t, err)
		hashes[v] = mv.ConfigHash
	}
	require.NotEqual(t, hashes[1], hashes[2])
	var n int
	var billed core.Micros
	require.NoError(t, tb.pool.QueryRow(ctx, `SELECT count(*), coalesce(sum(billed_micros), 0) FROM receipts
		WHERE org_id = $1 AND mode_id = 'acme-panl' AND mode_config_hash = $2`, caller.ID, hashes[1]).Scan(&n, &billed))
	require.Equal(t, 1, n, "the caller's deliberation ran the published version")
	require.Positive(t, billed)
	bal, err := tb.store.GetBalance(ctx, caller.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit-billed, bal.Balance, "the caller paid the bill")
	var launches, charges int
	require.NoError(t, tb.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM batches WHERE org_id = $1),
		(SELECT count(*) FROM postings WHERE kind = 'test_charge' AND org_id = $1)`, author.ID).Scan(&launches, &charges))
	require.Equal(t, 1, launches, "the launch and its retry are one batch")
	require.Equal(t, 1, charges, "charged once")
}

// approveWhenPending waits for the mode's listing to be requested, then
// approves the version released, as `conclave listing approve` does.
func (tb *testBundle) approveWhenPending(ctx context.Context, ref string) error {
	for {
		m, err := tb.store.AuthoredModeByRef(ctx, ref)
		switch {
		case err == nil && m.Listing == core.ListingPending:
			_, err = tb.store.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove,
				ListingRevision: m.ListingRevision, Version: m.LatestVersion})
			return err
		case err != nil && !errors.Is(err, core.ErrNotFound):
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the listing of %s was never requested: %w", ref, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}
