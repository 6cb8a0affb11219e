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
