package core

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// Apply is pure: a refusal returns the state it was given and a code the
// code table knows; an action it does not know is invalid_request. (Every
// transition and code is tested against PostgreSQL by
// storetest.RunModeStore.)
func TestModeStateApplyRefusesWithKnownCodes(t *testing.T) {
	t.Parallel()
	states := []ModeState{
		{},
		{DraftRevision: 1, Draft: DraftPending, DraftValidated: true, Listing: ListingNone},
		{DraftRevision: 2, Draft: DraftReleased, DraftValidated: true, LatestVersion: 1, Listing: ListingApproved, ListingRevision: 2},
	}
	kinds := append([]ModeActionKind{ActionSave, ActionRelease, ActionRequestListing, ActionCertify, ActionPublish, "rename"}, ListingActions...)
	for _, s := range states {
		for _, k := range kinds {
			for _, rev := range []int64{0, 1, 2, 3} {
				a := ModeAction{Kind: k, Revision: rev, ListingRevision: rev, Version: int(rev)}
				next, err := s.Apply(a)
				if err != nil {
					require.Equal(t, s, next, "%+v refused changes nothing", a)
					require.True(t, KnownCode(AsError(err).Code), "%+v: %v", a, err)
					continue
				}
				require.NotEqual(t, s, next, "%+v allowed changes the state", a)
				require.True(t, next.DraftRevision > s.DraftRevision || next.ListingRevision > s.ListingRevision,
					"%+v allowed moves a revision on", a)
			}
		}
	}
	_, err := ModeState{}.Apply(ModeAction{Kind: "rename"})
	require.Equal(t, CodeInvalidRequest, AsError(err).Code)
}

// The operator's approval names a released version, which becomes both the
// certified and the published version; a delisting withdraws the published
// version and keeps the certified one; approving again may name a newer
// release.
func TestModeStateApprove(t *testing.T) {
	t.Parallel()
	pending := ModeState{DraftRevision: 2, Draft: DraftReleased, DraftValidated: true, LatestVersion: 2,
		Listing: ListingPending, ListingRevision: 1}
	approve := func(s ModeState, v int) (ModeState, error) {
		return s.Apply(ModeAction{Kind: ActionApprove, ListingRevision: s.ListingRevision, Version: v})
	}

	// A version never released, or none named, is mode_not_found.
	for _, v := range []int{0, -1, 3} {
		got, err := approve(pending, v)
		require.Equal(t, CodeModeNotFound, AsError(err).Code, "version %d", v)
		require.Equal(t, pending, got)
	}
	// A stale listing revision is checked first.
	_, err := pending.Apply(ModeAction{Kind: ActionApprove, ListingRevision: 0, Version: 9})
	require.Equal(t, CodeListingChanged, AsError(err).Code)

	approved, err := approve(pending, 1)
	require.NoError(t, err)
	want := pending
	want.Listing, want.ListingRevision, want.CertifiedVersion, want.PublishedVersion = ListingApproved, 2, 1, 1
	require.Equal(t, want, approved, "the version reviewed is certified and published")
	_, err = approve(approved, 2)
	require.Equal(t, CodeConflict, AsError(err).Code, "an approved listing is not approved again")

	// A later certification certifies version 2; the author publishes it.
	certified, err := approved.Apply(ModeAction{Kind: ActionCertify, Version: 2})
	require.NoError(t, err)
	require.Equal(t, 2, certified.CertifiedVersion)
	require.Equal(t, 1, certified.PublishedVersion, "certifying publishes nothing")
	published, err := certified.Apply(ModeAction{Kind: ActionPublish, Version: 2, ListingRevision: certified.ListingRevision})
	require.NoError(t, err)
	require.Equal(t, 2, published.PublishedVersion)

	delisted, err := published.Apply(ModeAction{Kind: ActionDelist, ListingRevision: published.ListingRevision})
	require.NoError(t, err)
	require.Equal(t, ListingDelisted, delisted.Listing)
	require.Zero(t, delisted.PublishedVersion, "delisting withdraws the published version")
	require.Equal(t, 2, delisted.CertifiedVersion, "and keeps the certified one")

	// Approved again after the delisting, at the version reviewed now.
	again, err := approve(delisted, 1)
	require.NoError(t, err)
	require.Equal(t, ListingApproved, again.Listing)
	require.Equal(t, 1, again.CertifiedVersion)
	require.Equal(t, 1, again.PublishedVersion)

	// A rejected listing may be approved too.
	rejected, err := pending.Apply(ModeAction{Kind: ActionReject, ListingRevision: pending.ListingRevision})
	require.NoError(t, err)
	got, err := approve(rejected, 2)
	require.NoError(t, err)
	require.Equal(t, [2]int{2, 2}, [2]int{got.CertifiedVersion, got.PublishedVersion})
}
