package core

// The mode lifecycle's state machine: the one place that decides which
// change an organisation's mode allows and which code refuses the others.
// Stores load a mode's ModeState, call Apply, and write the state it returns
// only if the mode still holds the state they read (docs/modes.md,
// "Lifecycle").

// DraftState is whether a mode's draft holds changes not yet released.
type DraftState string

// Draft states.
const (
	// DraftPending: the draft was saved and not released since.
	DraftPending DraftState = "pending"
	// DraftReleased: the draft is the latest released version.
	DraftReleased DraftState = "released"
)

// ListingState is where a mode's marketplace listing stands in review.
type ListingState string

// Listing states.
const (
	ListingNone     ListingState = "none"     // never requested
	ListingPending  ListingState = "pending"  // requested, awaiting review
	ListingApproved ListingState = "approved" // listed: the version approved, or a later certified one, is published
	ListingRejected ListingState = "rejected" // refused in review
	ListingDelisted ListingState = "delisted" // taken down after approval
)

// ListingStates lists every listing state.
var ListingStates = []ListingState{ListingNone, ListingPending, ListingApproved, ListingRejected, ListingDelisted}

// ModeActionKind names a change to a mode.
type ModeActionKind string

// The changes a mode's lifecycle knows: the author's (save, release,
// request a listing, publish), the operator's listing review (approve,
// reject, delist), and certification's record of a certified version.
const (
	ActionSave           ModeActionKind = "save"
	ActionRelease        ModeActionKind = "release"
	ActionRequestListing ModeActionKind = "request_listing"
	ActionApprove        ModeActionKind = "approve"
	ActionReject         ModeActionKind = "reject"
	ActionDelist         ModeActionKind = "delist"
	ActionCertify        ModeActionKind = "certify"
	ActionPublish        ModeActionKind = "publish"
)

// ListingActions are the operator's review actions.
var ListingActions = []ModeActionKind{ActionApprove, ActionReject, ActionDelist}

// ModeState is everything the lifecycle decides on. A new mode's state is
// what Apply(ActionSave) returns from the zero ModeState.
type ModeState struct {
	// DraftRevision counts the draft's changes: every save and every
	// release adds one, so a writer naming the revision it read learns
	// whether anything changed since.
	DraftRevision  int64
	Draft          DraftState
	DraftValidated bool // the draft passed validation when saved
	// LatestVersion is the newest released version; 0 when never released.
	LatestVersion int
	Listing       ListingState
	// ListingRevision counts the listing's changes (requests, reviews,
	// certification, publishing), for the same purpose as DraftRevision.
	ListingRevision int64
	// CertifiedVersion is the version the operator approved, or a later
	// one certification passed; 0 for none.
	CertifiedVersion int
	// PublishedVersion is the version the marketplace serves to other
	// organisations; 0 while the listing is not approved.
	PublishedVersion int
}

// ModeAction is one requested change.
type ModeAction struct {
	Kind ModeActionKind
	// Revision is the draft revision the writer read: for a save, the
	// draft it replaces (0 for none); for a release, the draft it releases.
	Revision int64
	// Validated: for a save, whether the spec passed validation.
	Validated bool
	// ListingRevision is the listing revision the writer read (request,
	// review and publish).
	ListingRevision int64
	// Version: for approve, certify and publish, the released version
	// concerned.
	Version int
}

// Apply returns the state after a, or the *Error whose code refuses it.
// It is a pure function of s and a.
func (s ModeState) Apply(a ModeAction) (ModeState, error) {
	n := s
	switch a.Kind {
	case ActionSave:
		if s.DraftRevision == 0 { // a new mode
			if a.Revision != 0 {
				return s, Errorf(CodeDraftChanged, "the mode has no draft revision %d", a.Revision)
			}
			n.Listing = ListingNone
		} else {
			if a.Revision != 0 && a.Revision != s.DraftRevision {
				return s, Errorf(CodeDraftChanged, "the draft is at revision %d, not %d", s.DraftRevision, a.Revision)
			}
			if a.Revision == 0 && s.Draft == DraftPending {
				return s, Errorf(CodeDraftPending, "the mode has an unreleased draft (revision %d): release it, or name its revision to replace it", s.DraftRevision)
			}
		}
		n.DraftRevision++
		n.Draft = DraftPending
		n.DraftValidated = a.Validated
		return n, nil

	case ActionRelease:
		switch {
		case a.Revision == 0:
			return s, Errorf(CodeDraftRequired, "a release names the draft revision it releases")
		case a.Revision != s.DraftRevision:
			return s, Errorf(CodeDraftChanged, "the draft is at revision %d, not %d", s.DraftRevision, a.Revision)
		case s.Draft != DraftPending:
			return s, Errorf(CodeNoDraft, "the draft is already released as version %d", s.LatestVersion)
		case !s.DraftValidated:
			return s, Errorf(CodeDraftUnvalidated, "the draft did not pass validation")
		}
		n.DraftRevision++
		n.Draft = DraftReleased
		n.LatestVersion++
		return n, nil

	case ActionCertify:
		if err := s.versionReleased(a.Version); err != nil {
			return s, err
		}
		if err := s.listingApproved(); err != nil {
			return s, err
		}
		n.CertifiedVersion = a.Version
		n.ListingRevision++
		return n, nil
	}
	return s.applyListing(a)
}

// applyListing is Apply for the listing's actions, which name the listing
// revision they read.
func (s ModeState) applyListing(a ModeAction) (ModeState, error) {
	n := s
	if a.ListingRevision != s.ListingRevision {
		return s, Errorf(CodeListingChanged, "the listing is at revision %d, not %d", s.ListingRevision, a.ListingRevision)
	}
	switch a.Kind {
	case ActionRequestListing:
		switch {
		case s.LatestVersion == 0:
			return s, Errorf(CodeModeNotReleased, "the mode was never released")
		case s.Listing == ListingRejected:
			return s, Errorf(CodeListingRejected, "the listing was rejected in review")
		case s.Listing == ListingDelisted:
			return s, Errorf(CodeListingDelisted, "the listing was taken down")
		case s.Listing != ListingNone:
			return s, Errorf(CodeConflict, "the listing is already %s", s.Listing)
		}
		n.Listing = ListingPending
	case ActionApprove:
		if s.Listing != ListingPending && s.Listing != ListingRejected && s.Listing != ListingDelisted {
			return s, Errorf(CodeConflict, "a listing %s cannot be approved", s.Listing)
		}
		if err := s.versionReleased(a.Version); err != nil {
			return s, err
		}
		// The operator's approval is the marketplace's badge: the version
		// reviewed becomes the certified version, and the one published.
		n.Listing = ListingApproved
		n.CertifiedVersion = a.Version
		n.PublishedVersion = a.Version
	case ActionReject:
		if s.Listing != ListingPending {
			return s, Errorf(CodeConflict, "a listing %s cannot be rejected", s.Listing)
		}
		n.Listing = ListingRejected
	case ActionDelist:
		if s.Listing != ListingApproved {
			return s, Errorf(CodeConflict, "a listing %s cannot be delisted", s.Listing)
		}
		n.Listing = ListingDelisted
		n.PublishedVersion = 0
	case ActionPublish:
		if err := s.listingApproved(); err != nil {
			return s, err
		}
		if a.Version == 0 || a.Version != s.CertifiedVersion {
			return s, Errorf(CodePublishedVersionUncertified, "version %d is not the certified version", a.Version)
		}
		n.PublishedVersion = a.Version
	default:
		return s, Errorf(CodeInvalidRequest, "unknown mode action %q", a.Kind)
	}
	n.ListingRevision++
	return n, nil
}

// versionReleased refuses a version the mode has not released.
func (s ModeState) versionReleased(v int) error {
	if s.LatestVersion == 0 {
		return Errorf(CodeModeNotReleased, "the mode was never released")
	}
	if v < 1 || v > s.LatestVersion {
		return Errorf(CodeModeNotFound, "the mode has no version %d", v)
	}
	return nil
}

// listingApproved refuses a listing that is not approved, with the code of
// where it stands.
func (s ModeState) listingApproved() error {
	switch s.Listing {
	case ListingApproved:
		return nil
	case ListingRejected:
		return Errorf(CodeListingRejected, "the listing was rejected in review")
	case ListingDelisted:
		return Errorf(CodeListingDelisted, "the listing was taken down")
	}
	return Errorf(CodeListingRequired, "the mode is not listed (its listing is %s)", s.Listing)
}
