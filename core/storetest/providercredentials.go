package storetest

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunProviderCredentials is the section of core.ProviderCredentials:
// organisations' own credentials set, replaced, looked up with their sealed
// key, listed without it in provider order, and removed; each
// organisation's invisible to every other; and records of the wrong shape
// refused. The store never opens what it holds, so the sealed keys here are
// random bytes.
func RunProviderCredentials[S interface {
	core.Orgs
	core.ProviderCredentials
}](t *testing.T, newStore func(t *testing.T) S) {
	ctx := context.Background()

	t.Run("SetLookupReplace", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Own keys")
		before := time.Now().Add(-time.Minute)

		key := sealedKey(t, org.ID, core.ProviderOpenAI, "LAST")
		set, err := s.SetProviderCredential(ctx, key)
		require.NoError(t, err)
		require.Equal(t, org.ID, set.OrgID)
		require.Equal(t, core.ProviderOpenAI, set.Provider)
		require.Equal(t, key.KeyID, set.KeyID)
		require.Equal(t, "LAST", set.Hint)
		require.Nil(t, set.Sealed, "the result carries no sealed key")
		require.True(t, set.CreatedAt.After(before), "created_at %v", set.CreatedAt)
		require.True(t, set.UpdatedAt.Equal(set.CreatedAt))

		got, err := s.LookupProviderCredential(ctx, org.ID, core.ProviderOpenAI)
		require.NoError(t, err)
		require.Equal(t, key.Sealed, got.Sealed, "the lookup carries the sealed key as it was set")
		require.Equal(t, key.KeyID, got.KeyID)
		require.Equal(t, "LAST", got.Hint)
		require.Empty(t, got.RoleARN)
		require.Empty(t, got.ExternalID)
		require.True(t, got.CreatedAt.Equal(set.CreatedAt))

		_, err = s.SetProviderCredential(ctx, awsRole(org.ID))
		require.NoError(t, err)
		got, err = s.LookupProviderCredential(ctx, org.ID, core.ProviderAWS)
		require.NoError(t, err)
		require.Equal(t, "arn:aws:iam::111122223333:role/conclave-bedrock", got.RoleARN)
		require.Equal(t, "acme-ext-7f3a", got.ExternalID)
		require.Equal(t, "7f3a", got.Hint)
		require.Empty(t, got.Sealed)
		require.Empty(t, got.KeyID)

		// Setting a provider again replaces its credential and keeps its
		// creation time.
		time.Sleep(5 * time.Millisecond)
		rotated := sealedKey(t, org.ID, core.ProviderOpenAI, "NEW1")
		rotated.KeyID = "fedcba9876543210"
		set2, err := s.SetProviderCredential(ctx, rotated)
		require.NoError(t, err)
		require.Equal(t, "NEW1", set2.Hint)
		require.Equal(t, "fedcba9876543210", set2.KeyID)
		require.True(t, set2.CreatedAt.Equal(set.CreatedAt), "created_at is kept")
		require.True(t, set2.UpdatedAt.After(set.UpdatedAt), "updated_at moves on")
		got, err = s.LookupProviderCredential(ctx, org.ID, core.ProviderOpenAI)
		require.NoError(t, err)
		require.Equal(t, rotated.Sealed, got.Sealed)
		require.Equal(t, "fedcba9876543210", got.KeyID)
	})

	t.Run("ListInProviderOrderWithoutSealedKeys", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Own keys")
		other := createOrg(t, s, "Elsewhere")

		list, err := s.ListProviderCredentials(ctx, org.ID)
		require.NoError(t, err)
		require.Empty(t, list, "none yet")

		// Set in the reverse of the listing order.
		_, err = s.SetProviderCredential(ctx, awsRole(org.ID))
		require.NoError(t, err)
		for i := len(core.BYOKProviders) - 2; i >= 0; i-- {
			_, err := s.SetProviderCredential(ctx, sealedKey(t, org.ID, core.BYOKProviders[i], "HINT"))
			require.NoError(t, err)
		}
		list, err = s.ListProviderCredentials(ctx, org.ID)
		require.NoError(t, err)
		var providers []string
		for _, c := range list {
			require.Equal(t, org.ID, c.OrgID)
			require.Nil(t, c.Sealed, "a listing never carries a sealed key")
			providers = append(providers, c.Provider)
		}
		require.Equal(t, core.BYOKProviders, providers, "in the order of core.BYOKProviders")

		list, err = s.ListProviderCredentials(ctx, other.ID)
		require.NoError(t, err)
		require.Empty(t, list, "another organisation's are not listed")
		list, err = s.ListProviderCredentials(ctx, "org_missing")
		require.NoError(t, err)
		require.Empty(t, list, "an organisation that does not exist has none")
	})

	t.Run("RemoveAndMissing", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Own keys")
		_, err := s.LookupProviderCredential(ctx, org.ID, core.ProviderMistral)
		require.ErrorIs(t, err, core.ErrNotFound, "never stored")
		require.ErrorIs(t, s.RemoveProviderCredential(ctx, org.ID, core.ProviderMistral), core.ErrNotFound)

		_, err = s.SetProviderCredential(ctx, sealedKey(t, org.ID, core.ProviderMistral, "MSTR"))
		require.NoError(t, err)
		_, err = s.SetProviderCredential(ctx, awsRole(org.ID))
		require.NoError(t, err)
		require.NoError(t, s.RemoveProviderCredential(ctx, org.ID, core.ProviderMistral))
		_, err = s.LookupProviderCredential(ctx, org.ID, core.ProviderMistral)
		require.ErrorIs(t, err, core.ErrNotFound, "removed")
		require.ErrorIs(t, s.RemoveProviderCredential(ctx, org.ID, core.ProviderMistral), core.ErrNotFound,
			"removing again")

		list, err := s.ListProviderCredentials(ctx, org.ID)
		require.NoError(t, err)
		require.Len(t, list, 1, "the other provider's is kept")
		require.Equal(t, core.ProviderAWS, list[0].Provider)
	})

	t.Run("AnotherOrganisationsIsInvisible", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Own keys")
		other := createOrg(t, s, "Elsewhere")
		_, err := s.SetProviderCredential(ctx, sealedKey(t, org.ID, core.ProviderAnthropic, "ANTH"))
		require.NoError(t, err)

		_, err = s.LookupProviderCredential(ctx, other.ID, core.ProviderAnthropic)
		require.ErrorIs(t, err, core.ErrNotFound, "another organisation's credential")
		require.ErrorIs(t, s.RemoveProviderCredential(ctx, other.ID, core.ProviderAnthropic), core.ErrNotFound)
		_, err = s.LookupProviderCredential(ctx, org.ID, core.ProviderAnthropic)
		require.NoError(t, err, "another organisation's remove left it in place")
	})

	t.Run("AnyProviderCredentials", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Own keys")
		anyStored := func() bool {
			t.Helper()
			stored, err := s.AnyProviderCredentials(ctx)
			require.NoError(t, err)
			return stored
		}
		require.False(t, anyStored(), "a new store holds none")
		_, err := s.SetProviderCredential(ctx, awsRole(org.ID))
		require.NoError(t, err)
		require.True(t, anyStored())
		require.NoError(t, s.RemoveProviderCredential(ctx, org.ID, core.ProviderAWS))
		require.False(t, anyStored())
	})

	t.Run("InvalidCredentialsAreRefused", func(t *testing.T) {
		t.Parallel()
		s, org := newOrg(t, newStore, "Own keys")
		key := sealedKey(t, org.ID, core.ProviderGoogle, "GOOG")
		role := awsRole(org.ID)
		type pc = core.ProviderCredential
		for name, bad := range map[string]*pc{
			"nil":                      nil,
			"no organisation":          with(key, func(c *pc) { c.OrgID = "" }),
			"unknown provider":         with(key, func(c *pc) { c.Provider = "cohere" }),
			"no provider":              with(key, func(c *pc) { c.Provider = "" }),
			"api key without sealed":   with(key, func(c *pc) { c.Sealed = nil }),
			"api key sealed too short": with(key, func(c *pc) { c.Sealed = c.Sealed[:core.MinSealedLen-1] }),
			"api key without key id":   with(key, func(c *pc) { c.KeyID = "" }),
			"api key with a role":      with(key, func(c *pc) { c.RoleARN = role.RoleARN }),
			"api key with external id": with(key, func(c *pc) { c.ExternalID = role.ExternalID }),
			"aws without role":         with(role, func(c *pc) { c.RoleARN = "" }),
			"aws without external id":  with(role, func(c *pc) { c.ExternalID = "" }),
			"aws with a sealed key":    with(role, func(c *pc) { c.Sealed = key.Sealed }),
		} {
			_, err := s.SetProviderCredential(ctx, bad)
			require.Error(t, err, name)
			require.NotErrorIs(t, err, core.ErrNotFound, name)
		}
		_, err := s.SetProviderCredential(ctx, with(key, func(c *pc) { c.OrgID = "org_missing" }))
		require.ErrorIs(t, err, core.ErrNotFound, "an organisation that does not exist")

		list, err := s.ListProviderCredentials(ctx, org.ID)
		require.NoError(t, err)
		require.Empty(t, list, "nothing refused was stored")
		stored, err := s.AnyProviderCredentials(ctx)
		require.NoError(t, err)
		require.False(t, stored)
	})
}

// sealedKey is an API-key credential whose sealed key is random bytes of a
// sealed secret's length: the store never opens it.
func sealedKey(t *testing.T, orgID, provider, hint string) *core.ProviderCredential {
	t.Helper()
	sealed := make([]byte, core.MinSealedLen+40)
	_, err := rand.Read(sealed)
	require.NoError(t, err)
	return &core.ProviderCredential{
		OrgID:    orgID,
		Provider: provider,
		Sealed:   sealed,
		KeyID:    "0123456789abcdef",
		Hint:     hint,
	}
}

// awsRole is an aws credential: a role and its external id.
func awsRole(orgID string) *core.ProviderCredential {
	return &core.ProviderCredential{
		OrgID:      orgID,
		Provider:   core.ProviderAWS,
		RoleARN:    "arn:aws:iam::111122223333:role/conclave-bedrock",
		ExternalID: "acme-ext-7f3a",
		Hint:       "7f3a",
	}
}

// with returns a copy of c changed by change.
func with(c *core.ProviderCredential, change func(*core.ProviderCredential)) *core.ProviderCredential {
	out := *c
	change(&out)
	return &out
}
