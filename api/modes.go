package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
	"github.com/conclavehq/conclave/core/wire"
)

// modeRoutes serves /v1/modes: an organisation authoring its own modes.
// Every route spends one request of the key's rate first; the mode service
// then asks the policy itself (modes.validate, modes.write, modes.read), so
// no scope is checked here. Bodies are closed: a field a route does not
// read is refused.
func (h *handler) modeRoutes() http.Handler {
	r := chi.NewRouter()
	r.NotFound(h.metered(notFound))
	r.MethodNotAllowed(h.metered(methodNotAllowed(r)))
	r.Group(func(r chi.Router) {
		r.Use(h.meter)
		r.Post("/validate", h.validateMode)
		r.Get("/", h.listOwnModes)
		r.Post("/", h.saveMode)
		r.Get("/{mode}", h.getOwnMode)
		r.Post("/{mode}/release", h.releaseMode)
		r.Post("/{mode}/listing", h.changeListing)
		r.Put("/{mode}/lab_invites/{org}", h.labInvite(true))
		r.Delete("/{mode}/lab_invites/{org}", h.labInvite(false))
	})
	return r
}

// The request bodies. Each is closed (decodeClosedJSON): its fields are
// all a route reads.
type (
	validateModeRequest struct {
		Spec   json.RawMessage `json:"spec"`
		ModeID string          `json:"mode_id"`
	}
	saveModeRequest struct {
		Spec        json.RawMessage `json:"spec"`
		ModeID      string          `json:"mode_id"`
		Revision    int64           `json:"revision"`
		KeepInvalid bool            `json:"keep_invalid"`
	}
	releaseModeRequest struct {
		Revision int64 `json:"revision"`
	}
	listingRequest struct {
		Version         int   `json:"version"`
		ListingRevision int64 `json:"listing_revision"`
	}
)

// validateMode answers POST /v1/modes/validate: every rule the spec breaks,
// or its mode_config_hash. A spec that fails is still a 200: the answer is
// the validation, not an error.
func (h *handler) validateMode(w http.ResponseWriter, r *http.Request) {
	var in validateModeRequest
	if err := decodeClosedJSON(w, r, h.cfg.MaxBodyBytes, &in, false); err != nil {
		writeError(w, r, err)
		return
	}
	if !present(in.Spec) {
		writeError(w, r, core.Errorf(core.CodeInvalidRequest, "Send the mode spec to validate in spec.").WithParam("spec"))
		return
	}
	if err := specIsObject(in.Spec); err != nil {
		writeError(w, r, err)
		return
	}
	c, err := h.modes.Validate(r.Context(), principalOf(r.Context()), in.Spec, in.ModeID)
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, wire.ModeValidationOf(c, "mode.validation"))
}

// saveMode answers POST /v1/modes: a draft saved, 201 with Location for a
// new mode, 200 for a new draft of one of the caller's modes.
func (h *handler) saveMode(w http.ResponseWriter, r *http.Request) {
	var in saveModeRequest
	if err := decodeClosedJSON(w, r, h.cfg.MaxBodyBytes, &in, false); err != nil {
		writeError(w, r, err)
		return
	}
	if present(in.Spec) {
		if err := specIsObject(in.Spec); err != nil {
			writeError(w, r, err)
			return
		}
	}
	if in.Revision < 0 {
		writeError(w, r, badNumber("revision", "the revision of the draft the save replaces, or 0 for none"))
		return
	}
	s, err := h.modes.Save(r.Context(), principalOf(r.Context()), modes.SaveRequest{
		Spec:        in.Spec,
		ModeRef:     in.ModeID,
		Revision:    in.Revision,
		KeepInvalid: in.KeepInvalid,
	})
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := savedMode{modeObject: modeObjectOf(s.Mode)}
	if !s.Checked.OK() {
		out.Refusals = s.Checked.Refusals
	}
	status := http.StatusOK
	if in.ModeID == "" {
		status = http.StatusCreated
		w.Header().Set("Location", "/v1/modes/"+url.PathEscape(s.Mode.ID))
	}
	writeJSON(w, status, out)
}

// listOwnModes answers GET /v1/modes: the caller's organisation's modes.
func (h *handler) listOwnModes(w http.ResponseWriter, r *http.Request) {
	ms, err := h.modes.List(r.Context(), principalOf(r.Context()))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := modeList{Object: "list", Data: make([]modeObject, len(ms))}
	for i, m := range ms {
		out.Data[i] = modeObjectOf(m)
	}
	writeJSON(w, http.StatusOK, out)
}

// getOwnMode answers GET /v1/modes/{mode}: one of the caller's modes with
// its draft's spec, its latest release and its lab invitations.
func (h *handler) getOwnMode(w http.ResponseWriter, r *http.Request) {
	ref, err := modeInPath(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	d, err := h.modes.Get(r.Context(), principalOf(r.Context()), ref)
	if err != nil {
		writeError(w, r, inPath(err))
		return
	}
	writeJSON(w, http.StatusOK, modeDetailOf(d))
}

// releaseMode answers POST /v1/modes/{mode}/release: the draft released as
// the mode's next version.
func (h *handler) releaseMode(w http.ResponseWriter, r *http.Request) {
	var in releaseModeRequest
	if err := decodeClosedJSON(w, r, h.cfg.MaxBodyBytes, &in, true); err != nil {
		writeError(w, r, err)
		return
	}
	if in.Revision < 0 {
		writeError(w, r, badNumber("revision", "the draft revision you read; leave it out for the current one"))
		return
	}
	ref, err := modeInPath(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	rel, err := h.modes.Release(r.Context(), principalOf(r.Context()), ref, in.Revision)
	if err != nil {
		writeError(w, r, inPath(err))
		return
	}
	writeJSON(w, http.StatusOK, releasedMode{Mode: modeObjectOf(rel.Mode), Version: modeVersionOf(rel.Version)})
}

// changeListing answers POST /v1/modes/{mode}/listing: the listing
// requested for the operator's review, or, once approved, the certified
// version published (modes.Service.Publish).
func (h *handler) changeListing(w http.ResponseWriter, r *http.Request) {
	var in listingRequest
	if err := decodeClosedJSON(w, r, h.cfg.MaxBodyBytes, &in, true); err != nil {
		writeError(w, r, err)
		return
	}
	switch {
	case in.Version < 0:
		writeError(w, r, badNumber("version", "the released version to publish; leave it out for the certified one"))
		return
	case in.ListingRevision < 0:
		writeError(w, r, badNumber("listing_revision", "the listing revision you read; leave it out for the current one"))
		return
	}
	ref, err := modeInPath(r)
	if err != nil {
		writeError(w, r, err)
		return
	}
	m, err := h.modes.Publish(r.Context(), principalOf(r.Context()), modes.PublishRequest{
		ModeRef: ref, Version: in.Version, ListingRevision: in.ListingRevision,
	})
	if err != nil {
		writeError(w, r, inPath(err))
		return
	}
	writeJSON(w, http.StatusOK, modeObjectOf(m))
}

// labInvite answers PUT (invited) and DELETE (withdrawn)
// /v1/modes/{mode}/lab_invites/{org}: the organisation with ticker {org}
// invited to the mode's lab versions, or no longer. Both are idempotent.
func (h *handler) labInvite(invited bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ref, err := modeInPath(r)
		if err != nil {
			writeError(w, r, err)
			return
		}
		org, err := url.PathUnescape(chi.URLParam(r, "org"))
		if err != nil {
			writeError(w, r, core.Errorf(core.CodeInvalidValue,
				"Name the organisation by its four-letter ticker.").WithParam("org"))
			return
		}
		li, err := h.modes.SetLabInvite(r.Context(), principalOf(r.Context()), ref, org, invited)
		if err != nil {
			writeError(w, r, inPath(err))
			return
		}
		writeJSON(w, http.StatusOK, labInviteOf(li))
	}
}

// labInviteAnswer is the answer of PUT and DELETE
// /v1/modes/{mode}/lab_invites/{org}: never whether an organisation has
// the ticker.
type labInviteAnswer struct {
	OK      bool   `json:"ok"`
	Mode    string `json:"mode"`
	Org     string `json:"org"`
	Invited bool   `json:"invited"`
	Note    string `json:"note"`
}

func labInviteOf(li *modes.LabInvite) labInviteAnswer {
	note := fmt.Sprintf("If an organisation has the ticker %s, it now reaches the lab versions of %s (@lab, @vN).", li.Org, li.ModeID)
	if !li.Invited {
		note = fmt.Sprintf("If an organisation with the ticker %s was invited to the lab versions of %s, it no longer is.", li.Org, li.ModeID)
	}
	return labInviteAnswer{OK: true, Mode: li.ModeID, Org: li.Org, Invited: li.Invited, Note: note}
}

// modeInPath is the mode {mode} names. The router matches on the escaped
// path, so a ticker a client percent-encoded (ACME%3APANL) is unescaped
// here, as for /v1/models/{model}; what does not unescape names no mode.
func modeInPath(r *http.Request) (string, error) {
	raw := chi.URLParam(r, "mode")
	ref, err := url.PathUnescape(raw)
	if err != nil {
		return "", core.Errorf(core.CodeModeNotFound,
			"No mode %q is owned by or available to your organisation.", raw).WithParam("mode")
	}
	return ref, nil
}

// inPath is err for a mode named in the path: the service names the mode
// by the body's field (mode_id); here the path's {mode} named it.
func inPath(err error) error {
	var e *core.Error
	if errors.As(err, &e) && e.Param == "mode_id" {
		return e.WithParam("mode")
	}
	return err
}

// present reports whether a body field was sent with a value (not left out
// and not null).
func present(raw json.RawMessage) bool {
	return len(raw) > 0 && string(raw) != "null"
}

// badNumber refuses a negative number in a body field that counts
// revisions or versions.
func badNumber(field, what string) *core.Error {
	return core.Errorf(core.CodeInvalidRequest, "%s is a whole number from 0: %s.", field, what).WithParam(field)
}

// specIsObject refuses a spec that is not a JSON object, as any body field
// of the wrong type is refused.
func specIsObject(raw json.RawMessage) error {
	if b := bytes.TrimSpace(raw); len(b) == 0 || b[0] != '{' {
		return core.Errorf(core.CodeInvalidJSON,
			"The request body field \"spec\" has the wrong type: a mode spec is a JSON object.").WithParam("spec")
	}
	return nil
}

// The answers. docs/modes.md ("REST endpoints") describes every field;
// api/openapi.json holds them to the same names.
type (
	// modeObject is one of the organisation's modes as its owner reads it.
	// A version number is null where the store keeps 0 (none).
	modeObject struct {
		Object           string      `json:"object"`
		ID               string      `json:"id"`
		Ticker           string      `json:"ticker"`
		Name             string      `json:"name"`
		Draft            modeDraft   `json:"draft"`
		LatestVersion    *int        `json:"latest_version"`
		Listing          modeListing `json:"listing"`
		CertifiedVersion *int        `json:"certified_version"`
		PublishedVersion *int        `json:"published_version"`
		CreatedAt        time.Time   `json:"created_at"`
	}
	modeDraft struct {
		Revision  int64           `json:"revision"`
		State     core.DraftState `json:"state"`
		Validated bool            `json:"validated"`
		SavedAt   time.Time       `json:"saved_at"`
		// Spec is sent only by the routes that read one mode in full.
		Spec json.RawMessage `json:"spec,omitempty"`
	}
	modeListing struct {
		State    core.ListingState `json:"state"`
		Revision int64             `json:"revision"`
	}
	// modeDetail is modeObject with the draft's spec, the latest release
	// and the organisations invited to the lab.
	modeDetail struct {
		modeObject
		LatestRelease *modeRelease `json:"latest_release"`
		LabInvites    []string     `json:"lab_invites"`
	}
	// modeVersion is one released version.
	modeVersion struct {
		Version        int       `json:"version"`
		ModeConfigHash string    `json:"mode_config_hash"`
		ReleasedAt     time.Time `json:"released_at"`
	}
	// modeRelease is a released version with the spec it was released
	// from.
	modeRelease struct {
		modeVersion
		Spec json.RawMessage `json:"spec"`
	}
	// savedMode is the answer to a save: the mode, and the refusals of a
	// draft kept invalid (keep_invalid).
	savedMode struct {
		modeObject
		Refusals []modes.Refusal `json:"refusals,omitempty"`
	}
	releasedMode struct {
		Mode    modeObject  `json:"mode"`
		Version modeVersion `json:"version"`
	}
	modeList struct {
		Object string       `json:"object"`
		Data   []modeObject `json:"data"`
	}
)

func modeObjectOf(m *core.AuthoredMode) modeObject {
	return modeObject{
		Object: "mode",
		ID:     m.ID,
		Ticker: m.Ticker,
		Name:   m.Name,
		Draft: modeDraft{
			Revision:  m.DraftRevision,
			State:     m.Draft,
			Validated: m.DraftValidated,
			SavedAt:   m.DraftSavedAt.UTC(),
		},
		LatestVersion:    version(m.LatestVersion),
		Listing:          modeListing{State: m.Listing, Revision: m.ListingRevision},
		CertifiedVersion: version(m.CertifiedVersion),
		PublishedVersion: version(m.PublishedVersion),
		CreatedAt:        m.CreatedAt.UTC(),
	}
}

func modeDetailOf(d *modes.Detail) modeDetail {
	out := modeDetail{modeObject: modeObjectOf(d.Mode), LabInvites: d.Invites}
	out.Draft.Spec = d.Mode.DraftSpec
	if d.Latest != nil {
		out.LatestRelease = &modeRelease{modeVersion: modeVersionOf(d.Latest), Spec: d.Latest.Spec}
	}
	if out.LabInvites == nil {
		out.LabInvites = []string{}
	}
	return out
}

func modeVersionOf(v *core.ModeVersion) modeVersion {
	return modeVersion{Version: v.Version, ModeConfigHash: v.ConfigHash, ReleasedAt: v.ReleasedAt.UTC()}
}

// version is a version number on the wire: null for none (0).
func version(v int) *int {
	if v == 0 {
		return nil
	}
	return &v
}
