package storetest

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunKeys is the section of core.Keys: keys stored by their hash, found by
// it with their organisation, listed and revoked.
func RunKeys[S interface {
	core.Orgs
	core.Keys
}](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("CreateFindListRevoke", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Keyed")
		secret, hash := core.NewKeySecret(false)
		exp := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
		k, err := s.CreateKey(ctx, &core.CreateKeyParams{
			OrgID: org.ID, Hash: hash, Hint: core.KeyHint(secret), Name: "ci",
			Scopes: []string{core.ScopeModelsRead}, Modes: []string{"conclave-standard"},
			RPM: 120, Concurrency: 7, MaxInputTokens: 16000, Ceiling: 3_000_000, ExpiresAt: &exp,
		})
		require.NoError(t, err)
		require.Equal(t, org.ID, k.OrgID)
		require.Equal(t, []string{core.ScopeModelsRead}, k.Scopes)
		require.Equal(t, []string{"conclave-standard"}, k.Modes)
		require.Equal(t, 120, k.RPM)
		require.Equal(t, 7, k.Concurrency)
		require.Equal(t, 16000, k.MaxInputTokens)
		require.Equal(t, core.Micros(3_000_000), k.Ceiling)
		require.True(t, exp.Equal(*k.ExpiresAt))

		gotKey, gotOrg, err := s.KeyByHash(ctx, core.HashKey(secret))
		require.NoError(t, err)
		require.Equal(t, k.ID, gotKey.ID)
		require.Equal(t, org.ID, gotOrg.ID)
		require.Empty(t, gotKey.Status(time.Now()))

		_, _, err = s.KeyByHash(ctx, core.HashKey("ccl_live_nope"))
		require.ErrorIs(t, err, core.ErrNotFound)

		// Defaults: every scope, no limits, no mode restriction.
		_, hash2 := core.NewKeySecret(true)
		k2, err := s.CreateKey(ctx, &core.CreateKeyParams{OrgID: org.ID, Hash: hash2, Hint: "ccl_test_…", Test: true})
		require.NoError(t, err)
		require.Equal(t, core.AllScopes, k2.Scopes)
		require.Empty(t, k2.Modes)
		require.Zero(t, k2.RPM)
		require.Zero(t, k2.Ceiling)
		require.True(t, k2.Test)

		revoked, err := s.RevokeKey(ctx, k.ID)
		require.NoError(t, err)
		require.Equal(t, "revoked", revoked.Status(time.Now()))
		gotKey, _, err = s.KeyByHash(ctx, hash)
		require.NoError(t, err)
		require.Equal(t, "revoked", gotKey.Status(time.Now()))

		keys, err := s.ListKeys(ctx, org.ID)
		require.NoError(t, err)
		require.Len(t, keys, 2, "revoked keys are listed")
		require.Equal(t, []string{k.ID, k2.ID}, []string{keys[0].ID, keys[1].ID}, "oldest first")

		_, err = s.RevokeKey(ctx, "key_missing")
		require.ErrorIs(t, err, core.ErrNotFound)
		_, err = s.CreateKey(ctx, &core.CreateKeyParams{OrgID: "org_missing", Hash: core.HashKey("x"), Hint: "x"})
		require.ErrorIs(t, err, core.ErrNotFound, "a key for a missing organisation")
	})
}
