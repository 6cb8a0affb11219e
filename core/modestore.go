package core

import (
	"context"
	"encoding/json"
	"time"
)

// AuthoredMode is an organisation's own mode as stored: its identity, its
// one draft and where its lifecycle stands (ModeState). Released versions
// are read apart (ModeVersion).
type AuthoredMode struct {
	ID     string // the slug: "acme-panl"
	OrgID  string // the owning organisation
	Ticker string // "ACME:PANL"
	Name   string
	ModeState
	// DraftSpec is the draft's spec exactly as saved (JSON).
	DraftSpec    json.RawMessage
	DraftSavedAt time.Time
	CreatedAt    time.Time
}

// ModeVersion is one released version of an authored mode. It never
// changes once written.
type ModeVersion struct {
	ModeID  string
	Version int
	// Spec is the draft's spec as it was released.
	Spec json.RawMessage
	// Mode is the spec converted into the mode the engine runs
	// (modes.ToMode), and ConfigHash its mode_config_hash.
	Mode       *Mode
	ConfigHash string
	ReleasedAt time.Time
}

// SaveModeDraft is a draft to save.
type SaveModeDraft struct {
	OrgID string
	// ModeID names the mode the draft belongs to; "" creates a new mode
	// from Ticker and Name.
	ModeID string
	// Name is the spec's name; Ticker the mode part of its ticker ("PANL").
	// A draft of an existing mode keeps the mode's ticker.
	Name   string
	Ticker string
	Spec   json.RawMessage
	// Validated: the spec passed validation (modes.Validate).
	Validated bool
	// BaseRevision is the draft revision the draft replaces (0: none).
	BaseRevision int64
	// MaxModes, when positive, is the most modes the organisation may
	// hold: a new mode past it is refused with conflict. A new draft of a
	// mode it holds is not held back.
	MaxModes int
}

// ReleaseMode releases a mode's draft as its next version.
type ReleaseMode struct {
	OrgID  string
	ModeID string
	// Revision is the draft revision the caller read, validated and
	// converted into Mode; the release fails with draft_changed if the
	// draft is no longer at it.
	Revision   int64
	Mode       *Mode
	ConfigHash string
}

// ModeStore keeps organisations' own modes: drafts, immutable released
// versions, listings and the certified version. Every change goes through
// ModeState.Apply and is written only if the mode still holds the state it
// was applied to, so concurrent writers (replicas) cannot both win: the
// loser gets the code Apply gives against the winner's state
// (draft_changed, listing_changed). Refusals are *Error with the
// lifecycle's codes; a mode that does not exist or belongs to another
// organisation is mode_not_found. Implementations are safe for concurrent
// use.
type ModeStore interface {
	// SaveModeDraft saves a draft: a new mode (name_taken, ticker_taken,
	// org_owner_missing when no organisation holds it, conflict when the
	// organisation already holds MaxModes) or a new draft of one (conflict
	// when it changes the ticker). Of concurrent new modes of one
	// organisation, no more are saved than MaxModes allows.
	SaveModeDraft(ctx context.Context, p *SaveModeDraft) (*AuthoredMode, error)
	// ReleaseMode releases the draft as the next version.
	ReleaseMode(ctx context.Context, p *ReleaseMode) (*ModeVersion, error)
	// AuthoredMode reads one of orgID's modes.
	AuthoredMode(ctx context.Context, orgID, modeID string) (*AuthoredMode, error)
	// AuthoredModeByRef finds a mode by its slug or ticker, exactly as
	// listed, whoever owns it; ErrNotFound when there is none.
	AuthoredModeByRef(ctx context.Context, ref string) (*AuthoredMode, error)
	// ModeVersion reads one released version (ErrNotFound if none).
	ModeVersion(ctx context.Context, modeID string, version int) (*ModeVersion, error)
	// ModeVersions reads several released versions in one trip, in the
	// order asked, for the listing of modes: each with its Mode and
	// ConfigHash but no Spec (nil), which a listing does not show and
	// which may be large. A version that does not exist is ErrNotFound.
	ModeVersions(ctx context.Context, refs []ModeVersionRef) ([]*ModeVersion, error)
	// ListAuthoredModes lists orgID's modes by ticker. A listed mode has
	// no DraftSpec (nil): listings read the modes' state, not their
	// drafts, which may be large; AuthoredMode reads one in full.
	ListAuthoredModes(ctx context.Context, orgID string) ([]*AuthoredMode, error)
	// ListPublishedModes lists every mode whose listing is approved and
	// serves a published version, by ticker, without DraftSpec as
	// ListAuthoredModes.
	ListPublishedModes(ctx context.Context) ([]*AuthoredMode, error)
	// ChangeListing applies the author's listing action to orgID's mode:
	// ActionRequestListing, or ActionPublish of a.Version, naming the
	// listing revision read. Review actions are forbidden here.
	ChangeListing(ctx context.Context, orgID, modeID string, a ModeAction) (*AuthoredMode, error)
	// ReviewListing applies the operator's review a (ActionApprove, naming
	// the version reviewed; ActionReject; ActionDelist) to any
	// organisation's mode, naming the listing revision read; the operator
	// CLI calls it.
	ReviewListing(ctx context.Context, modeID string, a ModeAction) (*AuthoredMode, error)
	// RecordCertified records version as the mode's certified version
	// (ActionCertify); certification calls it when a run passes.
	RecordCertified(ctx context.Context, modeID string, version int) (*AuthoredMode, error)

	// SetLabInvite invites the organisation whose ticker is orgTicker to
	// ownerOrgID's mode's lab versions, or withdraws the invitation
	// (invited false; withdrawing one that does not exist is no error).
	// mode_not_found for a mode ownerOrgID does not own. A ticker no other
	// organisation has (none, or ownerOrgID's own) is no error, takes the
	// same statements as any other and records nothing: the caller must
	// not learn from the answer whether an organisation has the ticker.
	SetLabInvite(ctx context.Context, ownerOrgID, modeID, orgTicker string, invited bool) error
	// LabInvites lists the tickers of the organisations invited to the
	// mode's lab, sorted.
	LabInvites(ctx context.Context, modeID string) ([]string, error)
	// LabInvited reports whether orgID is invited to the mode's lab.
	LabInvited(ctx context.Context, modeID, orgID string) (bool, error)
}

// ModeVersionRef names one released version.
type ModeVersionRef struct {
	ModeID  string
	Version int
}
