package storetest

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// RunModeSource is the conformance section of a core.ModeSource, through
// the interface only. src must list at least one mode to orgID; every
// listed mode must resolve by its slug and, when it has one, its ticker,
// exactly as listed and to the same mode; anything else is
// core.ErrNotFound; the listing and each mode's hash are stable.
//
// Suffixes: a listed version of an organisation's mode (Version > 0)
// resolves, named with its "@vN" suffix, to the same version, reached with
// that suffix; a configured mode (Version 0) takes none (ErrNotFound or
// suffix_not_supported); and what follows "@" in no suffix ("@beta",
// "@v0") is ErrNotFound.
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

	for _, m := range modes {
		for _, bad := range []string{"@", "@beta", "@LAB", "@v0", "@v01", "@V1", "@v", "@lab@lab"} {
			_, err := src.ResolveMode(ctx, orgID, m.ID+bad)
			require.ErrorIs(t, err, core.ErrNotFound, "%q is no suffix", m.ID+bad)
		}
		if m.Version == 0 {
			require.Nil(t, m.Reach, "%s: a configured mode has no reach", m.ID)
			for _, suffix := range []string{"@lab", "@v1"} {
				_, err := src.ResolveMode(ctx, orgID, m.ID+suffix)
				require.Error(t, err, "%s: a configured mode takes no suffix", m.ID+suffix)
				if !errors.Is(err, core.ErrNotFound) {
					require.Equal(t, core.CodeSuffixNotSupported, core.AsError(err).Code, "%s: %v", m.ID+suffix, err)
				}
			}
			continue
		}
		require.NotNil(t, m.Reach, "%s: a listed version says how it was reached", m.ID)
		require.Empty(t, m.Reach.Suffix, "%s is listed as it stands", m.ID)
		named := fmt.Sprintf("%s@v%d", m.ID, m.Version)
		v, err := src.ResolveMode(ctx, orgID, named)
		require.NoError(t, err, named)
		require.Equal(t, m.ID, v.ID, named)
		require.Equal(t, m.Version, v.Version, named)
		require.Equal(t, src.ModeConfigHash(m), src.ModeConfigHash(v), "%s is the version listed", named)
		require.Equal(t, fmt.Sprintf("v%d", m.Version), v.Reach.Suffix)
		require.Equal(t, m.Reach.Published, v.Reach.Published, named)
		require.Equal(t, m.Reach.Listing, v.Reach.Listing, named)
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
