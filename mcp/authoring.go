package mcp

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/wire"
)

// The authoring tools answer in the tool server itself: each spends one
// request of the caller's rate, calls mode authoring (core/modes) as plain
// Go — which decides who may act and moves the mode through its lifecycle —
// and renders what it returns. A refusal is the self-answered shape, its
// Detail (mode_invalid's refusals) in the extra block. parseCall has
// checked the arguments against the input schema, so reading them cannot
// fail.

// validateMode checks a spec against the save rules, saving nothing.
func (h *Handler) validateMode(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Meter(ctx, p, c.requestID); err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	checked, err := h.modes.Validate(ctx, p, c.args["spec"], c.str("mode_id"))
	if err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	return structuredResult(wire.ModeValidationOf(checked, ""))
}

// saveMode saves a draft, releases one, or both: a spec saves it (a new
// mode, or a new draft of mode_id) and release releases what was saved;
// release without a spec releases mode_id's saved draft. mode_id alone is
// a save without a spec, which the service refuses with draft_required.
func (h *Handler) saveMode(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Meter(ctx, p, c.requestID); err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	spec, modeID, release, revision := c.args["spec"], c.str("mode_id"), c.flag("release"), c.integer("revision")
	if spec == nil && release {
		r, err := h.modes.Release(ctx, p, modeID, revision)
		if err != nil {
			return h.selfFailure(ctx, err, c.requestID)
		}
		return structuredResult(savedMode{Mode: modeViewOf(r.Mode), Version: versionViewOf(r.Version)})
	}
	saved, err := h.modes.Save(ctx, p, modes.SaveRequest{Spec: spec, ModeRef: modeID, Revision: revision})
	if err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	if !release {
		return structuredResult(savedMode{Mode: modeViewOf(saved.Mode)})
	}
	r, err := h.modes.Release(ctx, p, saved.Mode.ID, saved.Mode.DraftRevision)
	if err != nil {
		// The draft is saved: say so, and name it, so that the caller
		// releases it rather than saving it again.
		e := *core.AsError(err)
		e.Message = fmt.Sprintf("The draft was saved (revision %d) but not released: %s", saved.Mode.DraftRevision, e.Message)
		return h.selfFailure(ctx, e.WithDetail("mode", modeViewOf(saved.Mode)), c.requestID)
	}
	return structuredResult(savedMode{Mode: modeViewOf(r.Mode), Version: versionViewOf(r.Version)})
}

// listMode requests the marketplace listing of a released mode, or
// publishes a version of a listed one.
func (h *Handler) listMode(ctx context.Context, p *access.Principal, c *toolCall) *toolResult {
	if err := h.access.Meter(ctx, p, c.requestID); err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	am, err := h.modes.Publish(ctx, p, modes.PublishRequest{ModeRef: c.str("mode_id"), Version: int(c.integer("version")),
		ListingRevision: c.integer("listing_revision")})
	if err != nil {
		return h.selfFailure(ctx, err, c.requestID)
	}
	return structuredResult(listedMode{Mode: modeViewOf(am)})
}

// savedMode is save_mode's result: the mode, and the version this call
// released (null when it released none).
type savedMode struct {
	Mode    modeView     `json:"mode"`
	Version *versionView `json:"version"`
}

// listedMode is list_mode's result.
type listedMode struct {
	Mode modeView `json:"mode"`
}

// modeView is an organisation's mode as the authoring tools answer it.
type modeView struct {
	ID               string      `json:"id"`
	Ticker           string      `json:"ticker"`
	Name             string      `json:"name"`
	Draft            draftView   `json:"draft"`
	LatestVersion    int         `json:"latest_version"`
	Listing          listingView `json:"listing"`
	CertifiedVersion int         `json:"certified_version"`
	PublishedVersion int         `json:"published_version"`
}

type draftView struct {
	Revision  int64           `json:"revision"`
	State     core.DraftState `json:"state"`
	Validated bool            `json:"validated"`
}

type listingView struct {
	State    core.ListingState `json:"state"`
	Revision int64             `json:"revision"`
}

type versionView struct {
	Version        int    `json:"version"`
	ModeConfigHash string `json:"mode_config_hash"`
}

func modeViewOf(am *core.AuthoredMode) modeView {
	return modeView{ID: am.ID, Ticker: am.Ticker, Name: am.Name,
		Draft:         draftView{Revision: am.DraftRevision, State: am.Draft, Validated: am.DraftValidated},
		LatestVersion: am.LatestVersion, Listing: listingView{State: am.Listing, Revision: am.ListingRevision},
		CertifiedVersion: am.CertifiedVersion, PublishedVersion: am.PublishedVersion}
}

func versionViewOf(v *core.ModeVersion) *versionView {
	return &versionView{Version: v.Version, ModeConfigHash: v.ConfigHash}
}

// str is a string argument ("" when absent).
func (c *toolCall) str(name string) string {
	var s string
	_ = json.Unmarshal(c.args[name], &s) // checked against the schema
	return s
}

// flag is a boolean argument (false when absent).
func (c *toolCall) flag(name string) bool {
	var b bool
	_ = json.Unmarshal(c.args[name], &b) // checked against the schema
	return b
}

// integer is a whole-number argument (0 when absent).
func (c *toolCall) integer(name string) int64 {
	var n int64
	_ = json.Unmarshal(c.args[name], &n) // checked against the schema
	return n
}
