package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// `conclave serve` runs the background jobs: an organisation past its trial
// period loses its unused trial credit without anyone asking, and the
// server still stops cleanly.
func TestServeRunsTheBackgroundJobs(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	store := pgstore.New(pool)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Lapsed"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "UPDATE orgs SET created_at = now() - interval '31 days' WHERE id = $1", org.ID)
	require.NoError(t, err)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "conclave.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte("jobs:\n  trial_expiry_interval: 1s\n  stop_timeout: 2s\n"), 0o600))
	p := startServe(t, dir, []string{"DATABASE_URL=" + url}, "--config", cfg)

	require.Eventually(t, func() bool {
		bal, err := store.GetBalance(context.Background(), org.ID)
		return err == nil && bal.Balance == 0 && bal.TrialRemaining == 0
	}, 30*time.Second, 100*time.Millisecond, "the trial-expiry job ran\nstderr:\n%s", p.stderr)
	start := time.Now()
	p.stop(t)
	require.Less(t, time.Since(start), 20*time.Second)
	require.Contains(t, p.stderr.String(), "trial credit expired")
}

// `conclave jobs sweep` runs the jobs' work at once: a dead call's hold is
// released and its slot and claim freed.
func TestJobsSweepCommand(t *testing.T) {
	t.Parallel()
	b := setupAdmin(t)
	ctx := context.Background()
	org := b.mustRun(t, "org", "create", "--name", "Swept Co")
	orgID := org["org_id"].(string)
	a, err := b.store.Admit(ctx, &core.AdmitParams{OrgID: orgID, RequestID: "req_dead", SlotLimit: 5, Lease: time.Second,
		IdempotencyKey: "k", RequestHash: make([]byte, 32), Hold: core.PlaceHoldParams{Amount: 2_000_000}})
	require.NoError(t, err)
	require.NoError(t, a.Refused)
	// The call's process died long ago: its leases lapsed past the grace.
	_, err = b.store.Pool().Exec(ctx, "UPDATE holds SET expires_at = now() - interval '1 hour'")
	require.NoError(t, err)
	out := b.mustRun(t, "jobs", "sweep")
	require.Equal(t, 1.0, out["holds_released"])
	require.Equal(t, 2.0, out["released_usd"])
	require.Equal(t, 1.0, out["slots_freed"])
	require.Equal(t, 1.0, out["claims_freed"])
	bal := b.mustRun(t, "balance", "show", "--org", orgID)
	require.Equal(t, 0.0, bal["held_usd"])
	require.Equal(t, 10.0, bal["balance_usd"], "nothing billed")
	_, err = b.run(t, "jobs", "dance")
	require.ErrorContains(t, err, `jobs: unknown subcommand "dance" (want sweep)`)
}
