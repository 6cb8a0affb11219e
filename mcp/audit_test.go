package mcp_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// A change made through the tools is the calling key's in the audit trail,
// from the client's address: save_mode with release is a draft and a
// release of the mode; a change another organisation's key is refused
// writes nothing.
func TestChangesThroughTheToolsAreAudited(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	acme, key := tb.newOrg(t, "Acme", "ACME")
	_, other := tb.newOrg(t, "Beta", "BETA")
	var s savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL"), "release": true}, &s)
	tb.fail(t, other, "save_mode", map[string]any{"mode_id": "acme-panl", "spec": panelSpec("Acme Review Panel", "PANL")}, 403, "forbidden")

	k, _, err := tb.store.KeyByHash(context.Background(), core.HashKey(key))
	require.NoError(t, err)
	rows, err := tb.store.Audit(context.Background(), &core.AuditQuery{OrgID: acme.ID})
	require.NoError(t, err)
	var got []string
	for _, r := range rows {
		if r.Action == core.AuditKeyCreated {
			continue // the key's creation, by the test's set-up
		}
		require.Equal(t, core.Actor{Kind: core.ActorKey, ID: k.ID, Address: "127.0.0.1"}, r.Actor, r.Action)
		require.Equal(t, "acme-panl", r.Object)
		require.NotContains(t, r.Detail, key)
		got = append(got, r.Action)
	}
	require.Equal(t, []string{core.AuditModeDrafted, core.AuditModeReleased}, got)
}
