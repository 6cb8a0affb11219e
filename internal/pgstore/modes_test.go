package pgstore_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/storetest"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// replicaPool is a second pool on s's database: another replica's
// connections.
func replicaPool(t *testing.T, s *pgstore.Store) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.NewWithConfig(context.Background(), s.Pool().Config())
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// The database itself refuses any change to a released version.
func TestReleasedVersionsAreImmutableInTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := pgstore.New(pgtest.NewPool(t))
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	m, err := s.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: org.ID, Name: "Review Panel", Ticker: "PANL",
		Spec: []byte(`{"name":"Review Panel","ticker":"PANL"}`), Validated: true})
	require.NoError(t, err)
	mode := &core.Mode{ID: m.ID, Ticker: m.Ticker, Deliberation: core.Deliberation{MaxRounds: 1}}
	_, err = s.ReleaseMode(ctx, &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision, Mode: mode, ConfigHash: mode.ConfigHash(nil)})
	require.NoError(t, err)

	_, err = s.Pool().Exec(ctx, "UPDATE mode_versions SET config_hash = 'forged'")
	require.ErrorContains(t, err, "immutable")
	_, err = s.Pool().Exec(ctx, "DELETE FROM mode_versions")
	require.ErrorContains(t, err, "immutable")
	_, err = s.Pool().Exec(ctx, "UPDATE authored_modes SET published_version = 2")
	require.ErrorContains(t, err, "authored_modes_check", "no published version past the released ones")
	v, err := s.ModeVersion(ctx, m.ID, 1)
	require.NoError(t, err)
	require.Equal(t, mode.ConfigHash(nil), v.ConfigHash)
}

// Two replicas releasing one draft revision at once, both having read it
// before either writes: the conditional write — not the state machine on a
// late read — decides the winner. The loser's UPDATE matches no row, and
// applying its release again to the winner's state refuses it with
// draft_changed.
func TestTwoReplicasRaceThroughTheConditionalWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a := pgstore.New(pgtest.NewPool(t))
	b := pgstore.New(replicaPool(t, a))
	org, _, err := a.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	save := &core.SaveModeDraft{OrgID: org.ID, Name: "Review Panel", Ticker: "PANL", Spec: []byte(`{}`), Validated: true}
	m, err := a.SaveModeDraft(ctx, save)
	require.NoError(t, err)
	mode := &core.Mode{ID: m.ID, Ticker: m.Ticker, Deliberation: core.Deliberation{MaxRounds: 1}}
	// Both replicas read the draft before either writes: each waits, after
	// its first read, for the other's.
	var read sync.WaitGroup
	read.Add(2)
	for _, s := range []*pgstore.Store{a, b} {
		var once sync.Once
		pgstore.SetAfterModeRead(s, func() { once.Do(func() { read.Done(); read.Wait() }) })
	}
	p := &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision, Mode: mode, ConfigHash: mode.ConfigHash(nil)}
	errs := make(chan error, 2)
	for _, s := range []*pgstore.Store{a, b} {
		go func() {
			_, err := s.ReleaseMode(ctx, p)
			errs <- err
		}()
	}
	e1, e2 := <-errs, <-errs
	if e1 != nil {
		e1, e2 = e2, e1
	}
	require.NoError(t, e1, "one replica releases")
	require.Equal(t, core.CodeDraftChanged, core.AsError(e2).Code, "the other gets draft_changed: %v", e2)
	require.Positive(t, pgstore.LostModeWrites(a)+pgstore.LostModeWrites(b), "a loser lost at the conditional write")
}

// panelSpec is a two-seat spec at the plus tier with its ticker and its
// rounds set by the caller.
func panelSpec(ticker string, rounds int) []byte {
	return []byte(fmt.Sprintf(`{"name": "Panel %[1]s", "ticker": %[1]q, "use_when": "Tests.",
  "seats_by_tier": {"plus": [{"engine": "sim/atlas", "backup": "sim/sonnet"}, {"engine": "sim/sonnet", "backup": "sim/atlas"}]},
  "critique": "always", "max_rounds": %[2]d, "cost_ceiling_usd": 1, "api_commercial": {"q_surcharge_usd": 0.10}}`, ticker, rounds))
}

// authorAndRelease saves spec as org's draft (of modeID, "" for a new
// mode), converts it with modes.ToMode and releases it, hashed by src.
func authorAndRelease(t *testing.T, s *pgstore.Store, src *core.AuthoredModeSource, cat *core.Catalog,
	org *core.Org, modeID string, spec []byte) *core.ModeVersion {
	t.Helper()
	ctx := context.Background()
	sp, err := modes.Decode(spec)
	require.NoError(t, err)
	p := &core.SaveModeDraft{OrgID: org.ID, ModeID: modeID, Name: sp.Name, Ticker: sp.Ticker, Spec: spec, Validated: true}
	if modeID != "" {
		cur, err := s.AuthoredMode(ctx, org.ID, modeID)
		require.NoError(t, err)
		p.BaseRevision = cur.DraftRevision
	}
	m, err := s.SaveModeDraft(ctx, p)
	require.NoError(t, err)
	mode, err := modes.ToMode(sp, modes.Author{OrgID: org.ID, OrgTicker: org.Ticker}, cat.Engines(), nil)
	require.NoError(t, err)
	v, err := s.ReleaseMode(ctx, &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision,
		Mode: mode, ConfigHash: src.ModeConfigHash(mode)})
	require.NoError(t, err)
	return v
}

// Organisations' released modes are served through core.ModeSource beside
// the configured ones: named as it stands, a mode is its latest version to
// its owner and its published version to others; @lab and @vN name the
// other versions; the hash is the one the release stored; and the source
// says how each caller reached what it resolved, for the policy.
func TestAuthoredModesAreAModeSource(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	cat, err := cfg.Catalog()
	require.NoError(t, err)
	s := pgstore.New(pgtest.NewPool(t))
	src := core.NewAuthoredModeSource(cat, s)
	newOrg := func(name, ticker string) *core.Org {
		org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: name, Ticker: ticker})
		require.NoError(t, err)
		return org
	}
	acme, beta, gamma := newOrg("Acme", "ACME"), newOrg("Beta", "BETA"), newOrg("Gamma", "GAMA")

	// Acme: PANL released, listed and approved at version 1 (so certified
	// and published), then released again as version 2 with a third round.
	v1 := authorAndRelease(t, s, src, cat, acme, "", panelSpec("PANL", 2))
	m, err := s.ChangeListing(ctx, acme.ID, v1.ModeID, core.ModeAction{Kind: core.ActionRequestListing})
	require.NoError(t, err)
	m, err = s.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, ListingRevision: m.ListingRevision, Version: 1})
	require.NoError(t, err)
	require.Equal(t, 1, m.PublishedVersion)
	v2 := authorAndRelease(t, s, src, cat, acme, v1.ModeID, panelSpec("PANL", 3))
	require.NotEqual(t, v1.ConfigHash, v2.ConfigHash, "a third round changes what runs")
	// Acme: DRFT saved, never released. Beta: BPNL released, not listed.
	_, err = s.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: acme.ID, Name: "Draft Panel", Ticker: "DRFT", Spec: panelSpec("DRFT", 2), Validated: true})
	require.NoError(t, err)
	b1 := authorAndRelease(t, s, src, cat, beta, "", panelSpec("BPNL", 1))

	// Every organisation's view passes the mode source's conformance.
	for _, org := range []*core.Org{acme, beta, gamma} {
		storetest.RunModeSource(t, src, org.ID)
	}
	builtin := len(cat.Modes())
	listed := func(orgID string) []string {
		ms, err := src.ListModes(ctx, orgID)
		require.NoError(t, err)
		var ids []string
		for _, m := range ms[builtin:] {
			ids = append(ids, fmt.Sprintf("%s@v%d", m.ID, m.Version))
		}
		return ids
	}
	require.Equal(t, []string{"acme-panl@v2"}, listed(acme.ID), "the owner's released modes, latest; no draft")
	require.Equal(t, []string{"beta-bpnl@v1", "acme-panl@v1"}, listed(beta.ID), "its own, then the published")
	require.Equal(t, []string{"acme-panl@v1"}, listed(gamma.ID), "no lab version is listed")

	// resolve resolves id for org and checks the version, its hash and how
	// it was reached.
	resolve := func(org *core.Org, id string, v *core.ModeVersion, reach core.ModeReach) *core.Mode {
		t.Helper()
		got, err := src.ResolveMode(ctx, org.ID, id)
		require.NoError(t, err, id)
		require.Equal(t, v.ModeID, got.ID, id)
		require.Equal(t, v.Version, got.Version, id)
		require.Equal(t, v.ConfigHash, src.ModeConfigHash(got), id)
		require.NotNil(t, got.Reach, id)
		require.Equal(t, reach, *got.Reach, id)
		return got
	}
	published := core.ModeReach{Listing: core.ListingApproved, Published: true}
	lab := core.ModeReach{Listing: core.ListingApproved}
	with := func(r core.ModeReach, suffix string, invited bool) core.ModeReach {
		r.Suffix, r.Invited = suffix, invited
		return r
	}

	// The owner: the latest version as it stands, any version by suffix.
	resolve(acme, "ACME:PANL", v2, lab)
	resolve(acme, "acme-panl@lab", v2, with(lab, "lab", false))
	resolve(acme, "acme-panl@v1", v1, with(published, "v1", false))
	resolve(acme, "ACME:PANL@v2", v2, with(lab, "v2", false))

	// Another organisation: the published version as it stands; lab
	// versions resolve too, not invited, for the policy to refuse
	// (lab_not_available).
	other := resolve(gamma, "acme-panl", v1, published)
	require.Equal(t, 2, other.Deliberation.MaxRounds)
	resolve(gamma, "ACME:PANL@v1", v1, with(published, "v1", false))
	resolve(gamma, "acme-panl@lab", v2, with(lab, "lab", false))
	resolve(gamma, "acme-panl@v2", v2, with(lab, "v2", false))
	require.NoError(t, s.SetLabInvite(ctx, acme.ID, m.ID, gamma.Ticker, true))
	labbed := resolve(gamma, "acme-panl@lab", v2, with(lab, "lab", true))
	resolve(gamma, "ACME:PANL@v2", v2, with(lab, "v2", true))
	resolve(beta, "acme-panl@lab", v2, with(lab, "lab", false))
	// The policy reads what the source found.
	pm := core.ModeForPolicy(labbed)
	require.Equal(t, core.AuthzMode{ID: "acme-panl", Key: pm.Key, Ticker: "ACME:PANL", OwnerOrg: acme.ID, Plans: []string{},
		Tiers: []core.Tier{core.TierPlus}, Version: 2, Suffix: "lab", Listing: core.ListingApproved, Invited: true}, *pm)

	// A mode whose listing publishes nothing resolves, for another
	// organisation, to its latest release, not published (the policy
	// answers mode_not_published).
	resolve(gamma, "BETA:BPNL", b1, core.ModeReach{Listing: core.ListingNone})
	resolve(beta, "BETA:BPNL", b1, core.ModeReach{Listing: core.ListingNone})

	// Versions never released, unknown suffixes and drafts are not found.
	for _, id := range []string{"acme-panl@v3", "ACME:PANL@v99", "acme-panl@beta", "acme-panl@v0",
		"acme-drft", "acme-drft@lab", "acme-drft@v1", "BETA:BPNL@v2", "nope-nope@lab"} {
		for _, org := range []*core.Org{acme, gamma} {
			_, err := src.ResolveMode(ctx, org.ID, id)
			require.ErrorIs(t, err, core.ErrNotFound, "%s for %s", id, org.Name)
		}
	}
	// A configured mode takes no suffix.
	std := cat.Modes()[0]
	for _, id := range []string{std.ID + "@lab", std.ID + "@v1", std.Ticker + "@lab"} {
		_, err := src.ResolveMode(ctx, gamma.ID, id)
		require.Equal(t, core.CodeSuffixNotSupported, core.AsError(err).Code, id)
		require.NotErrorIs(t, err, core.ErrNotFound)
	}
	_, err = src.ResolveMode(ctx, gamma.ID, std.ID+"@beta")
	require.ErrorIs(t, err, core.ErrNotFound, "what is no suffix is not found, configured mode or not")
	got, err := src.ResolveMode(ctx, gamma.ID, std.ID)
	require.NoError(t, err)
	require.Equal(t, cat.ConfigHash(std), src.ModeConfigHash(got), "configured modes keep their hash")
	require.Zero(t, got.Version)
	require.Nil(t, got.Reach)
}
