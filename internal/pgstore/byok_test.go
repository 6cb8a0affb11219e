package pgstore_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/plugins/byok"
)

// What only SQL shows about organisations' own credentials (the behaviour
// through core.ProviderCredentials is storetest's section): a key sealed
// by byok is stored sealed and opens after the round trip; a row copied to
// another organisation does not open there; and the table's own checks
// refuse what the store would.
func TestProviderCredentialsAtRest(t *testing.T) {
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

	const key = "sk-proj-acme-0123456789abcdef-LAST"
	rec, err := byok.NewKeyCredential(sealer, acme.ID, "openai", key)
	require.NoError(t, err)
	_, err = s.SetProviderCredential(ctx, rec)
	require.NoError(t, err)

	// Stored sealed: the plaintext is nowhere in the row.
	var raw []byte
	require.NoError(t, pool.QueryRow(ctx,
		"SELECT sealed FROM byok_credentials WHERE org_id = $1 AND provider = 'openai'", acme.ID).Scan(&raw))
	require.False(t, bytes.Contains(raw, []byte("acme-0123456789")))

	got, err := s.LookupProviderCredential(ctx, acme.ID, "openai")
	require.NoError(t, err)
	plain, err := sealer.Open(got.OrgID, got.Provider, got.KeyID, got.Sealed)
	require.NoError(t, err)
	require.Equal(t, key, string(plain))

	// A row copied to another organisation does not open there.
	_, err = pool.Exec(ctx, `INSERT INTO byok_credentials (org_id, provider, sealed, key_id, hint)
		SELECT $2, provider, sealed, key_id, hint FROM byok_credentials WHERE org_id = $1 AND provider = 'openai'`,
		acme.ID, other.ID)
	require.NoError(t, err)
	stolen, err := s.LookupProviderCredential(ctx, other.ID, "openai")
	require.NoError(t, err)
	_, err = sealer.Open(stolen.OrgID, stolen.Provider, stolen.KeyID, stolen.Sealed)
	require.ErrorIs(t, err, byok.ErrOpen)

	// The database's own checks.
	_, err = pool.Exec(ctx, "INSERT INTO byok_credentials (org_id, provider, sealed, key_id, hint) VALUES ($1, 'cohere', $2, $3, '')",
		acme.ID, rec.Sealed, rec.KeyID)
	require.ErrorContains(t, err, "byok_credentials_provider_check")
	_, err = pool.Exec(ctx, `INSERT INTO byok_credentials (org_id, provider, role_arn, external_id, hint, sealed)
		VALUES ($1, 'mistral', 'arn:aws:iam::111122223333:role/x', 'ext', '', NULL)`, acme.ID)
	require.ErrorContains(t, err, "byok_credential_shape")
	_, err = pool.Exec(ctx, "INSERT INTO byok_credentials (org_id, provider, sealed, key_id, hint) VALUES ($1, 'google', $2, $3, '')",
		acme.ID, rec.Sealed[:core.MinSealedLen-1], rec.KeyID)
	require.ErrorContains(t, err, "byok_credentials_sealed_check", "the table's shortest sealed secret is core's")
}
