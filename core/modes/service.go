package modes

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/carrier"
)

// Service is mode authoring, the same for every carrier: REST (/v1/modes)
// and the MCP tools validate_mode, save_mode and list_mode call it as plain
// Go and render what it returns. It checks who may act (the policy: test
// keys, mode-limited keys, another organisation's mode), validates specs
// with the Policy, and moves modes through their lifecycle in the store.
// Refusals are *core.Error; a spec that fails validation is mode_invalid
// with its refusals under Detail["refusals"], and nothing is saved. It is
// safe for concurrent use.
type Service struct {
	d Deps
}

// Deps are the parts a Service calls.
type Deps struct {
	// Access decides who may act. Required.
	Access *access.Service
	// Store keeps organisations' modes. Required.
	Store core.ModeStore
	// Catalog holds the engines specs are validated against and the
	// configured modes, whose tickers no spec may take. Required.
	Catalog *core.Catalog
	// Policy decides which rules a spec breaks. Required.
	Policy Policy
	// Available reports whether an engine can fill a seat now; nil means
	// every engine can.
	Available func(engineID string) bool
	// Judging is the reference cost of the judging one test question buys:
	// JudgingCost of the bench judges' engines (the configuration's judges)
	// at the most repeats a test run may ask. The price floor of an
	// organisation's mode pays it (TestFloor). Defaults to 0, no judging.
	Judging core.Micros
	// MaxModes is the most modes an organisation may hold
	// (limits.modes_per_org): a new mode past it is conflict. Defaults to
	// DefaultMaxModes.
	MaxModes int
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
}

// DefaultMaxModes is the most modes an organisation may hold unless
// configured otherwise.
const DefaultMaxModes = 100

// NewService returns a Service, or an error naming what is missing.
func NewService(d Deps) (*Service, error) {
	if d.Access == nil || d.Store == nil || d.Catalog == nil || d.Policy == nil {
		return nil, errors.New("modes: Access, Store, Catalog and Policy are required")
	}
	switch {
	case d.MaxModes == 0:
		d.MaxModes = DefaultMaxModes
	case d.MaxModes < 0:
		return nil, errors.New("modes: MaxModes must be positive")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Service{d: d}, nil
}

// Checked is a validation's answer: every refusal at once, or the mode the
// spec converts into and its mode_config_hash. Floor is the spec's price
// floor when the spec decodes (nil otherwise).
type Checked struct {
	Refusals   []Refusal
	Mode       *core.Mode
	ConfigHash string
	Floor      *FloorFacts
}

// OK reports whether the spec passed.
func (c *Checked) OK() bool { return len(c.Refusals) == 0 }

// Validate checks spec against the save rules for p's organisation, saving
// nothing. modeRef, when given, names the caller's mode the spec would be a
// new draft of, so that its own ticker does not count as taken.
func (s *Service) Validate(ctx context.Context, p *access.Principal, spec json.RawMessage, modeRef string) (*Checked, error) {
	if err := s.d.Access.Authorize(ctx, p, core.ActionModesValidate, nil, ""); err != nil {
		return nil, err
	}
	ownID := ""
	if modeRef != "" {
		am, err := s.own(ctx, p, modeRef, core.ActionModesRead)
		if err != nil {
			return nil, err
		}
		ownID = am.ID
	}
	return s.check(ctx, p, spec, ownID)
}

// check validates spec for p's organisation; ownID is the mode it is a
// draft of ("" for a new one). A spec over MaxSpecBytes is
// request_too_large, whatever is done with it; the policy failing is
// validation_unavailable.
func (s *Service) check(ctx context.Context, p *access.Principal, spec json.RawMessage, ownID string) (*Checked, error) {
	if err := CheckSize(spec); err != nil {
		return nil, err
	}
	if path, ok := carrier.JSONText(spec); !ok {
		return nil, badText(path)
	}
	taken, err := s.takenTickers(ctx, p.Org.ID, ownID)
	if err != nil {
		return nil, err
	}
	engines := s.d.Catalog.Engines()
	req := Request{Spec: spec, Engines: engines, Available: s.d.Available,
		Author: Author{OrgID: p.Org.ID, OrgTicker: p.Org.Ticker}, TakenTickers: taken, Judging: s.d.Judging}
	rs, m, in, err := validate(ctx, s.d.Policy, req)
	if err != nil {
		return nil, core.Errorf(core.CodeValidationUnavailable, "The spec could not be checked; nothing was saved. Retry shortly.").WithCause(err)
	}
	out := &Checked{Refusals: rs}
	if in != nil {
		out.Floor = in.Floor
	}
	if m != nil {
		out.Mode, out.ConfigHash = m, m.ConfigHash(engines)
	}
	return out, nil
}

// takenTickers are the full tickers a spec of orgID's may not take: the
// organisation's other modes' and the configured modes' (by ticker, and by
// an id of an authored mode's form). (A full ticker
// starts with the organisation's own ticker, so no other organisation's
// mode can hold one.)
func (s *Service) takenTickers(ctx context.Context, orgID, ownID string) ([]string, error) {
	var taken []string
	for _, m := range s.d.Catalog.Modes() {
		taken = append(taken, m.Ticker)
		// A configured mode whose id has an authored mode's form
		// ("acme-panl") holds that mode's ticker too: the configured
		// mode would hide it.
		if owner, mode, ok := strings.Cut(m.ID, "-"); ok && len(owner) == 4 && len(mode) == 4 {
			taken = append(taken, strings.ToUpper(owner)+":"+strings.ToUpper(mode))
		}
	}
	own, err := s.d.Store.ListAuthoredModes(ctx, orgID)
	if err != nil {
		return nil, core.Errorf(core.CodeValidationUnavailable, "The organisation's modes could not be read; nothing was saved. Retry shortly.").WithCause(err)
	}
	for _, m := range own {
		if m.ID != ownID {
			taken = append(taken, m.Ticker)
		}
	}
	return taken, nil
}

// Invalid is the answer to a spec that failed validation: mode_invalid,
// with the refusals under Detail["refusals"].
func Invalid(rs []Refusal) *core.Error {
	msg := "The spec breaks " + plural(len(rs), "rule") + "; nothing was saved. The refusals list each with its path."
	return core.Errorf(core.CodeModeInvalid, "%s", msg).WithDetail("refusals", rs)
}

func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// SaveRequest is one save of a draft.
type SaveRequest struct {
	// Spec is the draft's spec (JSON). Required.
	Spec json.RawMessage
	// ModeRef names the caller's mode the draft belongs to (its id or
	// ticker); "" saves a new mode.
	ModeRef string
	// Revision is the draft revision the save replaces: 0 when the mode
	// has no unreleased draft (otherwise draft_pending), or the revision
	// read (otherwise draft_changed).
	Revision int64
	// KeepInvalid saves a spec that fails validation as an unvalidated
	// draft (it cannot be released: draft_unvalidated) instead of refusing
	// it with mode_invalid. Its name, ticker, description and use_when
	// must still pass their rules (Unkeepable), and its size the cap.
	KeepInvalid bool
}

// Saved is a saved draft: the mode as it now stands, and its check.
type Saved struct {
	Mode    *core.AuthoredMode
	Checked *Checked
}

// Save saves a draft. A spec that fails validation is mode_invalid and
// nothing is saved, unless KeepInvalid; a spec kept invalid whose listing
// fields break their rules is refused with the first such refusal's code
// (Unkeepable). A save without a spec is invalid_request, or
// draft_required when it names a mode (a save always carries a spec; a
// release is asked for apart). A new mode past MaxModes is conflict.
func (s *Service) Save(ctx context.Context, p *access.Principal, req SaveRequest) (*Saved, error) {
	if len(req.Spec) == 0 || string(req.Spec) == "null" {
		if req.ModeRef != "" {
			return nil, core.Errorf(core.CodeDraftRequired, "A save always saves a draft from a spec; to release the mode's draft, ask for a release.").WithParam("spec")
		}
		return nil, core.Errorf(core.CodeInvalidRequest, "A save needs a spec.").WithParam("spec")
	}
	var named struct {
		Name   any `json:"name"`
		Ticker any `json:"ticker"`
	}
	_ = json.Unmarshal(req.Spec, &named) // a spec that is not an object is refused by the check
	name, _ := named.Name.(string)
	ticker, _ := named.Ticker.(string)

	ownID := ""
	if req.ModeRef != "" {
		am, err := s.own(ctx, p, req.ModeRef, core.ActionModesWrite)
		if err != nil {
			return nil, err
		}
		ownID = am.ID
	} else if err := s.d.Access.Authorize(ctx, p, core.ActionModesWrite, s.newModeView(p, ticker), ""); err != nil {
		return nil, err
	}
	checked, err := s.check(ctx, p, req.Spec, ownID)
	if err != nil {
		return nil, err
	}
	if !checked.OK() {
		if !req.KeepInvalid {
			return nil, Invalid(checked.Refusals)
		}
		if rs := Unkeepable(req.Spec, checked.Refusals); len(rs) > 0 {
			return nil, refusalError(rs, "A draft kept invalid still keeps its listing fields to their rules (%s); nothing was saved.")
		}
	}
	am, err := s.d.Store.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: p.Org.ID, ModeID: ownID, Name: name, Ticker: ticker,
		Spec: req.Spec, Validated: checked.OK(), BaseRevision: req.Revision, MaxModes: s.d.MaxModes})
	if err != nil {
		return nil, storeFailure(err, core.CodeSaveUnavailable, "The draft could not be saved; nothing changed. Retry shortly.")
	}
	return &Saved{Mode: am, Checked: checked}, nil
}

// Released is a release: the mode as it now stands and its new version.
type Released struct {
	Mode    *core.AuthoredMode
	Version *core.ModeVersion
}

// Release releases the draft of the caller's mode modeRef as its next
// version. revision is the draft revision the caller read (0: the one read
// now); a draft changed since is draft_changed, so of two releases of one
// draft exactly one wins. The draft is checked again against today's
// engines and rules: a draft that no longer passes is refused with its
// first refusal's code (invalid_request for invalid_value) and every
// refusal under Detail["refusals"].
func (s *Service) Release(ctx context.Context, p *access.Principal, modeRef string, revision int64) (*Released, error) {
	am, err := s.own(ctx, p, modeRef, core.ActionModesRelease)
	if err != nil {
		return nil, err
	}
	if revision == 0 {
		revision = am.DraftRevision
	}
	// The lifecycle answers first (draft_changed, no_draft,
	// draft_unvalidated): the store applies the same change again when it
	// writes, against the state it then finds.
	if _, err := am.Apply(core.ModeAction{Kind: core.ActionRelease, Revision: revision}); err != nil {
		return nil, err
	}
	checked, err := s.check(ctx, p, am.DraftSpec, am.ID)
	if err != nil {
		return nil, err
	}
	if !checked.OK() {
		return nil, recheckFailure(checked.Refusals)
	}
	v, err := s.d.Store.ReleaseMode(ctx, &core.ReleaseMode{OrgID: p.Org.ID, ModeID: am.ID, Revision: revision,
		Mode: checked.Mode, ConfigHash: checked.ConfigHash})
	if err != nil {
		return nil, storeFailure(err, core.CodeSaveUnavailable, "The release could not be saved; nothing changed. Retry shortly.")
	}
	now, err := s.d.Store.AuthoredMode(ctx, p.Org.ID, am.ID)
	if err != nil {
		return nil, storeFailure(err, core.CodeServiceUnavailable, "The mode was released but could not be read back. Read it again.")
	}
	return &Released{Mode: now, Version: v}, nil
}

// recheckFailure is a stored draft that no longer passes (refusalError).
func recheckFailure(rs []Refusal) *core.Error {
	return refusalError(rs, "The draft no longer passes validation (%s); nothing was released. Save a corrected draft.")
}

// refusalError answers refusals as an error: the first refusal's code (a
// check without a code of its own, invalid_value, is invalid_request) and
// path, a message of format around the first refusal's, and every refusal.
// The facts the first refusal carries (price_below_floor's floor_usd and
// recommended_usd, ticker_taken's suggested_ticker) are in the Detail too,
// beside the code they explain.
func refusalError(rs []Refusal, format string) *core.Error {
	first := rs[0]
	code := first.Code
	if code == core.CodeInvalidValue {
		code = core.CodeInvalidRequest
	}
	e := core.Errorf(code, format, first.Message)
	if first.Path != "" {
		e = e.WithParam(first.Path)
	}
	if first.SuggestedTicker != "" {
		e = e.WithDetail("suggested_ticker", first.SuggestedTicker)
	}
	if first.FloorUSD != nil {
		e = e.WithDetail("floor_usd", *first.FloorUSD)
	}
	if first.RecommendedUSD != nil {
		e = e.WithDetail("recommended_usd", *first.RecommendedUSD)
	}
	return e.WithDetail("refusals", rs)
}

// Detail is one of the caller's modes as its owner reads it: its state,
// its draft, its latest released version and the organisations invited to
// its lab.
type Detail struct {
	Mode    *core.AuthoredMode
	Latest  *core.ModeVersion // nil when never released
	Invites []string          // organisation tickers, sorted
}

// Get reads one of the caller's modes.
func (s *Service) Get(ctx context.Context, p *access.Principal, modeRef string) (*Detail, error) {
	am, err := s.own(ctx, p, modeRef, core.ActionModesRead)
	if err != nil {
		return nil, err
	}
	return s.detail(ctx, am)
}

func (s *Service) detail(ctx context.Context, am *core.AuthoredMode) (*Detail, error) {
	d := &Detail{Mode: am}
	var err error
	if am.LatestVersion > 0 {
		if d.Latest, err = s.d.Store.ModeVersion(ctx, am.ID, am.LatestVersion); err != nil {
			return nil, readFailure(err)
		}
	}
	if d.Invites, err = s.d.Store.LabInvites(ctx, am.ID); err != nil {
		return nil, readFailure(err)
	}
	return d, nil
}

// List lists the caller's own modes by ticker; a key limited to named
// modes is shown only those.
func (s *Service) List(ctx context.Context, p *access.Principal) ([]*core.AuthoredMode, error) {
	if err := s.d.Access.Authorize(ctx, p, core.ActionModesRead, nil, ""); err != nil {
		return nil, err
	}
	ms, err := s.d.Store.ListAuthoredModes(ctx, p.Org.ID)
	if err != nil {
		return nil, readFailure(err)
	}
	out := make([]*core.AuthoredMode, 0, len(ms))
	for _, am := range ms {
		d, err := s.d.Access.Decide(ctx, p, core.ActionModesRead, modeView(am), "")
		if err != nil {
			return nil, access.PolicyFailure(err)
		}
		if d.Allow {
			out = append(out, am)
		}
	}
	return out, nil
}

// PublishRequest is a listing change by the author (list_mode).
type PublishRequest struct {
	ModeRef string
	// Version is the version to publish once the listing is approved: it
	// must be the certified one. 0 means the certified version.
	Version int
	// ListingRevision is the listing revision the caller read; 0 means the
	// one read now.
	ListingRevision int64
}

// Publish is the author's marketplace step (list_mode): a mode whose
// listing was never requested is put up for the operator's review
// (pending); a mode whose listing is approved has req.Version published in
// place of the version it serves. Every other state is refused with the
// lifecycle's code.
func (s *Service) Publish(ctx context.Context, p *access.Principal, req PublishRequest) (*core.AuthoredMode, error) {
	am, err := s.own(ctx, p, req.ModeRef, core.ActionModesList)
	if err != nil {
		return nil, err
	}
	a := core.ModeAction{Kind: core.ActionRequestListing, ListingRevision: req.ListingRevision}
	if a.ListingRevision == 0 {
		a.ListingRevision = am.ListingRevision
	}
	if am.Listing == core.ListingApproved {
		a.Kind, a.Version = core.ActionPublish, req.Version
		if a.Version == 0 {
			a.Version = am.CertifiedVersion
		}
	}
	out, err := s.d.Store.ChangeListing(ctx, p.Org.ID, am.ID, a)
	if err != nil {
		return nil, storeFailure(err, core.CodeListingReadFailed, "The listing could not be read or written; nothing changed. Retry shortly.")
	}
	return out, nil
}

// SetLabInvite invites the organisation with ticker orgTicker to the
// caller's mode's lab versions, or withdraws the invitation. A ticker no
// organisation has is answered as one that an organisation has, and no
// invitation is recorded for it (the audit row, written either way, names
// the ticker as asked): neither tells whether the organisation exists
// (only a ticker's form, which is public, is checked).
func (s *Service) SetLabInvite(ctx context.Context, p *access.Principal, modeRef, orgTicker string, invited bool) (*LabInvite, error) {
	am, err := s.own(ctx, p, modeRef, core.ActionModesList)
	if err != nil {
		return nil, err
	}
	orgTicker = strings.ToUpper(orgTicker)
	if !core.ValidTicker(orgTicker) {
		return nil, core.Errorf(core.CodeInvalidValue, "Name the organisation by its four-letter ticker.").WithParam("org")
	}
	if orgTicker == p.Org.Ticker {
		return nil, core.Errorf(core.CodeInvalidValue, "Your own organisation always reaches its modes' lab versions.").WithParam("org")
	}
	if err := s.d.Store.SetLabInvite(ctx, p.Org.ID, am.ID, orgTicker, invited); err != nil {
		return nil, storeFailure(err, core.CodeSaveUnavailable, "The invitation could not be saved; nothing changed. Retry shortly.")
	}
	return &LabInvite{ModeID: am.ID, Org: orgTicker, Invited: invited}, nil
}

// LabInvite is what an invitation (or its withdrawal) answers: the same
// for a ticker no organisation has as for one that an organisation has,
// so that it tells nobody which tickers are taken.
type LabInvite struct {
	ModeID  string
	Org     string // the ticker, upper-case
	Invited bool
}

// own finds the mode modeRef names (its id or ticker, with no suffix) and
// checks that p may do action on it: mode_not_found when there is none,
// forbidden for a configured mode or another organisation's (the policy),
// mode_not_allowed for a key limited to other modes.
func (s *Service) own(ctx context.Context, p *access.Principal, modeRef, action string) (*core.AuthoredMode, error) {
	if !carrier.Text(modeRef) {
		// No mode is named so (and the store could not be asked).
		return nil, core.Errorf(core.CodeModeNotFound, "No mode %q is owned by or available to your organisation.", modeRef).WithParam("mode_id")
	}
	ref, suffix, _, _ := core.SplitModeSuffix(modeRef)
	if suffix != "" {
		return nil, core.Errorf(core.CodeSuffixNotSupported, "Name the mode as it stands, without the @%s suffix: authoring acts on the mode, not one of its versions.", suffix).WithParam("mode_id")
	}
	if m, ok := s.d.Catalog.Resolve(ref); ok {
		return nil, core.Errorf(core.CodeForbidden, "%s is a configured mode: it is changed in the deployment's configuration, not here.", m.ID)
	}
	am, err := s.d.Store.AuthoredModeByRef(ctx, ref)
	switch {
	case errors.Is(err, core.ErrNotFound):
		return nil, core.Errorf(core.CodeModeNotFound, "No mode %q is owned by or available to your organisation.", ref).WithParam("mode_id")
	case err != nil:
		return nil, readFailure(err)
	}
	if err := s.d.Access.Authorize(ctx, p, action, modeView(am), ""); err != nil {
		return nil, err
	}
	return am, nil
}

// modeView is what the policy sees of an organisation's mode.
func modeView(am *core.AuthoredMode) *core.Mode {
	_, key, _ := strings.Cut(am.ID, "-")
	return &core.Mode{ID: am.ID, Key: key, Ticker: am.Ticker, Name: am.Name, OwnerOrg: am.OrgID}
}

// newModeView is what the policy sees of the mode a new spec would create:
// its id and ticker when the spec's ticker is usable (so that a key limited
// to named modes may create only those), nil otherwise.
func (s *Service) newModeView(p *access.Principal, ticker string) *core.Mode {
	if len(ticker) != 4 || strings.ToUpper(ticker) != ticker || p.Org.Ticker == "" {
		return nil
	}
	key := strings.ToLower(ticker)
	return &core.Mode{ID: strings.ToLower(p.Org.Ticker) + "-" + key, Key: key, Ticker: p.Org.Ticker + ":" + ticker, OwnerOrg: p.Org.ID}
}

// storeFailure passes on the store's refusal (a lifecycle code), and
// answers anything else with code.
func storeFailure(err error, code core.Code, msg string) error {
	var e *core.Error
	if errors.As(err, &e) {
		return e
	}
	if errors.Is(err, core.ErrNotFound) {
		return core.Errorf(core.CodeModeNotFound, "The mode no longer exists.").WithParam("mode_id")
	}
	return core.Errorf(code, "%s", msg).WithCause(err)
}

func readFailure(err error) error {
	return core.Errorf(core.CodeServiceUnavailable, "The mode could not be read. Retry shortly.").WithCause(err)
}

// badText refuses a spec one of whose strings (at path within it) holds a
// NUL or bytes that are not UTF-8 (carrier.JSONText): the database cannot
// keep it, whatever is done with it.
func badText(path string) *core.Error {
	param := "spec"
	if path != "" {
		param += "." + path
	}
	return core.Errorf(core.CodeInvalidValue, "%s holds a NUL character (\\u0000) or bytes that are not UTF-8, "+
		"which a mode cannot keep; remove them.", param).WithParam(param)
}
