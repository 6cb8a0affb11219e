package storetest

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunModeSource is the conformance section of a core.ModeSource, through
// the interface only. src must list at least one mode to orgID; every
// listed mode must resolve by its slug and, when it has one, its ticker,
// exactly as listed and to the same mode; anything else is
// core.ErrNotFound; the listing and each mode's hash are stable.
func RunModeSource(t *testing.T, src core.ModeSource, orgID string) {
	t.Helper()
	ctx := context.Background()
	modes, err := src.ListModes(ctx, orgID)
	require.NoError(t, err)
	require.NotEmpty(t, modes, "the source lists modes")
	again, err := src.ListModes(ctx, orgID)
	require.NoError(t, err)
	require.Equal(t, ids(modes), ids(again), "the listing is in a stable order")

	hashes := map[string]string{}
	for _, m := range modes {
		got, err := src.ResolveMode(ctx, orgID, m.ID)
		require.NoError(t, err, m.ID)
		require.Equal(t, m.ID, got.ID)
		if m.Ticker != "" {
			byTicker, err := src.ResolveMode(ctx, orgID, m.Ticker)
			require.NoError(t, err, m.Ticker)
			require.Equal(t, m.ID, byTicker.ID, "the ticker names the same mode")
		}
		h := src.ModeConfigHash(got)
		require.NotEmpty(t, h, "%s has a mode_config_hash", m.ID)
		require.Equal(t, h, src.ModeConfigHash(m), "the hash is stable")
		for other, oh := range hashes {
			require.NotEqual(t, oh, h, "%s and %s differ in what runs, so in their hash", m.ID, other)
		}
		hashes[m.ID] = h
	}
	for _, id := range []string{"", "no-such-mode", "NOPE:NOPE", upper(modes[0].ID), modes[0].ID + " "} {
		_, err := src.ResolveMode(ctx, orgID, id)
		require.ErrorIs(t, err, core.ErrNotFound, "%q resolves to nothing", id)
	}
}

func ids(modes []*core.Mode) []string {
	out := make([]string, len(modes))
	for i, m := range modes {
		out[i] = m.ID
	}
	return out
}

// upper is s with ASCII letters upper-cased: a slug written otherwise than
// listed.
func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'a' && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
