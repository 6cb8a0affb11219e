package pgstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/plugins/byok"
)

func TestBYOKCredentials(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	acme, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme"})
	require.NoError(t, err)
	other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other"})
	require.NoError(t, err)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	sealer, err := byok.NewSealer(k)
	require.NoError(t, err)

	stored, err := s.AnyProviderCredentials(ctx)
	require.NoError(t, err)
	require.False(t, stored)
	_, err = s.LookupProviderCredential(ctx, acme.ID, "openai")
	require.ErrorIs(t, err, core.ErrNotFound)

	const key = "sk-proj-acme-0123456789abcdef-LAST"
	rec, err := byok.NewKeyCredential(sealer, acme.ID, "openai", key)
	require.NoError(t, err)
	set, err := s.SetProviderCredential(ctx, rec)
	require.NoError(t, err)
	require.Equal(t, "LAST", set.Hint)
	require.Nil(t, set.Sealed, "the result carries no sealed key")
	require.Equal(t, sealer.KeyID(), set.KeyID)

	role, err := byok.NewRoleCredential(acme.ID, "arn:aws:iam::111122223333:role/acme-bedrock", "acme-ext-7f3a")
	require.NoError(t, err)
	_, err = s.SetProviderCredential(ctx, role)
	require.NoError(t, err)

	// Stored sealed: the plaintext is nowhere in the row.
	var raw []byte
	require.NoError(t, pool.QueryRow(ctx, "SELECT sealed FROM byok_credentials WHERE org_id = $1 AND provider = 'openai'", acme.ID).Scan(&raw))
	require.False(t, bytes.Contains(raw, []byte("acme-0123456789")))

	got, err := s.LookupProviderCredential(ctx, acme.ID, "openai")
	require.NoError(t, err)
	plain, err := sealer.Open(got.OrgID, got.Provider, got.KeyID, got.Sealed)
	require.NoError(t, err)
	require.Equal(t, key, string(plain))
	_, err = s.LookupProviderCredential(ctx, other.ID, "openai")
	require.ErrorIs(t, err, core.ErrNotFound, "scoped by organisation")

	got, err = s.LookupProviderCredential(ctx, acme.ID, "aws")
	require.NoError(t, err)
	require.Equal(t, "arn:aws:iam::111122223333:role/acme-bedrock", got.RoleARN)
	require.Equal(t, "acme-ext-7f3a", got.ExternalID)
	require.Empty(t, got.Sealed)
	require.Empty(t, got.KeyID)

	// A row copied to another organisation does not open there.
	_, err = pool.Exec(ctx, `INSERT INTO byok_credentials (org_id, provider, sealed, key_id, hint)
		SELECT $2, provider, sealed, key_id, hint FROM byok_credentials WHERE org_id = $1 AND provider = 'openai'`, acme.ID, other.ID)
	require.NoError(t, err)
	stolen, err := s.LookupProviderCredential(ctx, other.ID, "openai")
	require.NoError(t, err)
	_, err = sealer.Open(stolen.OrgID, stolen.Provider, stolen.KeyID, stolen.Sealed)
	require.ErrorIs(t, err, byok.ErrOpen)
	require.NoError(t, s.RemoveProviderCredential(ctx, other.ID, "openai"))

	// Setting again replaces the key and keeps created_at.
	time.Sleep(5 * time.Millisecond)
	rec2, err := byok.NewKeyCredential(sealer, acme.ID, "openai", "sk-proj-acme-rotated-000000-NEW1")
	require.NoError(t, err)
	set2, err := s.SetProviderCredential(ctx, rec2)
	require.NoError(t, err)
	require.Equal(t, "NEW1", set2.Hint)
	require.Equal(t, set.CreatedAt, set2.CreatedAt)
	require.True(t, set2.UpdatedAt.After(set.UpdatedAt))

	list, err := s.ListProviderCredentials(ctx, acme.ID)
	require.NoError(t, err)
	require.Len(t, list, 2)
	require.Equal(t, "openai", list[0].Provider)
	require.Equal(t, "aws", list[1].Provider)
	for _, r := range list {
		require.Nil(t, r.Sealed, "a listing never carries a sealed key")
	}
	list, err = s.ListProviderCredentials(ctx, other.ID)
	require.NoError(t, err)
	require.Empty(t, list)
	stored, err = s.AnyProviderCredentials(ctx)
	require.NoError(t, err)
	require.True(t, stored)

	require.NoError(t, s.RemoveProviderCredential(ctx, acme.ID, "openai"))
	require.ErrorIs(t, s.RemoveProviderCredential(ctx, acme.ID, "openai"), core.ErrNotFound)
	_, err = s.LookupProviderCredential(ctx, acme.ID, "openai")
	require.ErrorIs(t, err, core.ErrNotFound)

	// Refusals: an unknown organisation, a record of the wrong shape, and
	// the database's own checks.
	rec3, err := byok.NewKeyCredential(sealer, "org_missing", "google", key)
	require.NoError(t, err)
	_, err = s.SetProviderCredential(ctx, rec3)
	require.ErrorIs(t, err, core.ErrNotFound)
	_, err = s.SetProviderCredential(ctx, &core.ProviderCredential{OrgID: acme.ID, Provider: "aws", Sealed: rec.Sealed, KeyID: rec.KeyID})
	require.ErrorContains(t, err, "role ARN")
	_, err = s.SetProviderCredential(ctx, &core.ProviderCredential{OrgID: acme.ID, Provider: "mistral", RoleARN: role.RoleARN})
	require.ErrorContains(t, err, "sealed key")
	_, err = s.SetProviderCredential(ctx, &core.ProviderCredential{OrgID: acme.ID, Provider: "cohere", Sealed: rec.Sealed, KeyID: rec.KeyID})
	require.Error(t, err)
	_, err = pool.Exec(ctx, "INSERT INTO byok_credentials (org_id, provider, sealed, key_id, hint) VALUES ($1, 'cohere', $2, $3, '')", acme.ID, rec.Sealed, rec.KeyID)
	require.ErrorContains(t, err, "byok_credentials_provider_check")
	_, err = pool.Exec(ctx, "INSERT INTO byok_credentials (org_id, provider, role_arn, external_id, hint, sealed) VALUES ($1, 'mistral', 'arn:aws:iam::111122223333:role/x', 'ext', '', NULL)", acme.ID)
	require.ErrorContains(t, err, "byok_credential_shape")
}
