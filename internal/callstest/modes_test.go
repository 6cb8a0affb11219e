package callstest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/wire"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// authoredModes serves organisations' modes beside the configured ones.
func authoredModes(d *calls.Deps, s *pgstore.Store) {
	d.Modes = core.NewAuthoredModeSource(d.Catalog, s)
}

// release saves spec as org's draft of modeID ("" for a new mode) and
// releases it, as the authoring service would.
func release(t *testing.T, tb *testBundle, org *core.Org, modeID string, spec string) *core.ModeVersion {
	t.Helper()
	ctx := context.Background()
	sp, err := modes.Decode([]byte(spec))
	require.NoError(t, err)
	p := &core.SaveModeDraft{OrgID: org.ID, ModeID: modeID, Name: sp.Name, Ticker: sp.Ticker, Spec: []byte(spec), Validated: true}
	if modeID != "" {
		cur, err := tb.store.AuthoredMode(ctx, org.ID, modeID)
		require.NoError(t, err)
		p.BaseRevision = cur.DraftRevision
	}
	m, err := tb.store.SaveModeDraft(ctx, p)
	require.NoError(t, err)
	mode, err := modes.ToMode(sp, modes.Author{OrgID: org.ID, OrgTicker: org.Ticker}, tb.catalog.Engines(), nil)
	require.NoError(t, err)
	v, err := tb.store.ReleaseMode(ctx, &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision,
		Mode: mode, ConfigHash: core.NewAuthoredModeSource(tb.catalog, tb.store).ModeConfigHash(mode)})
	require.NoError(t, err)
	return v
}

// panelSpec is a two-seat mode at the plus tier of rounds rounds.
func panelSpec(rounds int) string {
	return fmt.Sprintf(`{"name": "Acme Panel", "ticker": "PANL", "use_when": "Tests.",
  "seats_by_tier": {"plus": [{"engine": "sim/atlas", "backup": "sim/sonnet"}, {"engine": "sim/sonnet", "backup": "sim/atlas"}]},
  "critique": "always", "max_rounds": %d, "cost_ceiling_usd": 1, "api_commercial": {"q_surcharge_usd": 0.10}}`, rounds)
}

// Another organisation's mode, called through the service: refused while
// nothing is published; once approved, its published version runs; its lab
// version only once the caller is invited, named @lab. The answer's panel
// and the receipt name the version that ran; a configured mode takes no
// suffix.
func TestAuthoredModeVersionsRunAndAreReceipted(t *testing.T) {
	t.Parallel()
	tb := setup(t, authoredModes)
	ctx := context.Background()
	acme, _, err := tb.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	v1 := release(t, tb, acme, "", panelSpec(1))
	p, err := tb.access.Authenticate(ctx, tb.secret)
	require.NoError(t, err)

	chat := func(model, question string) (*calls.Completion, error) {
		t.Helper()
		res, err := tb.calls.Chat(ctx, p, calls.Call{RequestID: core.NewID("req"), Endpoint: "test:deliberate"},
			&calls.ChatParams{Model: model, Tier: core.TierPlus, Messages: []core.Message{{Role: core.RoleUser, Content: question}}})
		if err != nil {
			return nil, err
		}
		require.Nil(t, res.Replay)
		return res.Completion, nil
	}
	// receipted checks that the answer and its receipt name version v of
	// the mode, hashed as released.
	receipted := func(comp *calls.Completion, v *core.ModeVersion) {
		t.Helper()
		require.Equal(t, v.ModeID, comp.Panel.Mode)
		require.NotNil(t, comp.Panel.ModeVersion)
		require.Equal(t, v.Version, *comp.Panel.ModeVersion)
		require.Equal(t, v.ConfigHash, comp.Panel.ModeConfigHash)
		ans, err := tb.calls.Receipt(ctx, p, comp.Panel.RequestID)
		require.NoError(t, err)
		require.Equal(t, v.Version, ans.Receipt.ModeVersion)
		require.Equal(t, v.ConfigHash, ans.Receipt.ModeConfigHash)
		b, err := json.Marshal(wire.ReceiptOf(ans, false))
		require.NoError(t, err)
		var onWire struct {
			Receipt struct {
				ModeVersion *int `json:"mode_version"`
			} `json:"receipt"`
		}
		require.NoError(t, json.Unmarshal(b, &onWire))
		require.Equal(t, &v.Version, onWire.Receipt.ModeVersion)
	}

	_, err = chat("ACME:PANL", "Is a monorepo right for four teams?")
	require.Equal(t, core.CodeModeNotPublished, core.AsError(err).Code, "%v", err)

	m, err := tb.store.ChangeListing(ctx, acme.ID, v1.ModeID, core.ModeAction{Kind: core.ActionRequestListing})
	require.NoError(t, err)
	_, err = tb.store.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, Version: 1, ListingRevision: m.ListingRevision})
	require.NoError(t, err)
	v2 := release(t, tb, acme, v1.ModeID, panelSpec(2))

	comp, err := chat("ACME:PANL", "Is a monorepo right for four teams?")
	require.NoError(t, err)
	receipted(comp, v1)

	_, err = chat("acme-panl@lab", "Should we shard the orders table now?")
	require.Equal(t, core.CodeLabNotAvailable, core.AsError(err).Code, "%v", err)
	require.NoError(t, tb.store.SetLabInvite(ctx, acme.ID, m.ID, tb.org.Ticker, true))
	comp, err = chat("acme-panl@lab", "Should we shard the orders table now?")
	require.NoError(t, err)
	receipted(comp, v2)
	comp, err = chat("ACME:PANL@v1", "Which queue fits a small team?")
	require.NoError(t, err)
	receipted(comp, v1)

	_, err = chat("acme-panl@v3", "Which queue fits a small team?")
	require.Equal(t, core.CodeModelNotFound, core.AsError(err).Code, "%v", err)
	_, err = chat("conclave-standard@lab", "Which queue fits a small team?")
	require.Equal(t, core.CodeSuffixNotSupported, core.AsError(err).Code, "%v", err)

	// The listing shows the published version, not the lab.
	views, err := tb.calls.ListModes(ctx, p)
	require.NoError(t, err)
	var authored []string
	for _, v := range views {
		if v.Mode.OwnerOrg != "" {
			authored = append(authored, fmt.Sprintf("%s@v%d", v.Mode.ID, v.Mode.Version))
		}
	}
	require.Equal(t, []string{"acme-panl@v1"}, authored)
}
