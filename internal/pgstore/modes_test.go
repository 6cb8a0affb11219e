package pgstore_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
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

// Two replicas releasing one draft revision at once both read it before
// either writes, often enough that the conditional write — not only the
// state machine on a late read — decides the winner: the loser's UPDATE
// matches no row, and applying its release again to the winner's state
// refuses it with draft_changed.
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
	for round := 1; round <= 50 && pgstore.LostModeWrites(a)+pgstore.LostModeWrites(b) == 0; round++ {
		p := &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision, Mode: mode, ConfigHash: mode.ConfigHash(nil)}
		start := make(chan struct{})
		errs := make(chan error, 2)
		for _, s := range []*pgstore.Store{a, b} {
			go func() {
				<-start
				_, err := s.ReleaseMode(ctx, p)
				errs <- err
			}()
		}
		close(start)
		e1, e2 := <-errs, <-errs
		if e1 != nil {
			e1, e2 = e2, e1
		}
		require.NoError(t, e1, "round %d: one replica releases", round)
		require.Equal(t, core.CodeDraftChanged, core.AsError(e2).Code, "round %d: the other gets draft_changed: %v", round, e2)
		save.ModeID, save.BaseRevision = m.ID, m.DraftRevision+1
		m, err = a.SaveModeDraft(ctx, save)
		require.NoError(t, err)
	}
	require.Positive(t, pgstore.LostModeWrites(a)+pgstore.LostModeWrites(b), "a loser lost at the conditional write")
}
