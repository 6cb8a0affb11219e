package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/modes"
)

// modesRoutes serves the mode pages when the server has a modes service:
// the organisation's modes, one mode with its versions and their diff, and
// the builder, which checks a spec through the same validation as
// validate_mode (modes.Service.Validate) and saves, releases and lists
// through the same service as /v1/modes. The service asks the policy
// itself; the pages only leave out what it would refuse.
func (h *handler) modesRoutes(mux *http.ServeMux) error {
	if h.modes == nil {
		return nil
	}
	if err := h.parsePages("modes", "mode", "mode-edit", "mode-diff"); err != nil {
		return err
	}
	mux.HandleFunc("GET /modes", h.withOrg(h.modesPage))
	mux.HandleFunc("GET /modes/new", h.withOrg(h.newModePage))
	mux.HandleFunc("POST /modes/new", h.withOrg(h.postBuilder))
	mux.HandleFunc("POST /modes/validate", h.withOrg(h.validateBuilder))
	mux.HandleFunc("GET /modes/{id}", h.withOrg(h.modePage))
	mux.HandleFunc("GET /modes/{id}/edit", h.withOrg(h.editModePage))
	mux.HandleFunc("POST /modes/{id}/edit", h.withOrg(h.postBuilder))
	mux.HandleFunc("GET /modes/{id}/diff", h.withOrg(h.modeDiffPage))
	mux.HandleFunc("POST /modes/{id}/release", h.withOrg(h.releaseMode))
	mux.HandleFunc("POST /modes/{id}/listing", h.withOrg(h.requestListing))
	mux.HandleFunc("POST /modes/{id}/invites", h.withOrg(h.labInvite))
	return nil
}

// inviteNotice answers every lab invitation, whether or not an
// organisation has the ticker (modes.Service.SetLabInvite).
const inviteNotice = "The invitation is recorded if that organisation exists."

// modeNotice is the confirmation a redirect asked for (?done=…), from a
// fixed set.
func modeNotice(r *http.Request) string {
	switch r.URL.Query().Get("done") {
	case "saved":
		return "Draft saved. Release it to make it the mode's next version."
	case "released":
		return "Released as the mode's next version."
	case "listing":
		return "Listing requested: the operator reviews it before other organisations see the mode."
	case "published":
		return "The certified version is published."
	case "invited":
		return inviteNotice
	case "withdrawn":
		return "The invitation is withdrawn."
	}
	return ""
}

// modeStatus is one mode's standing in a word or two, as its list shows it.
type modeStatus struct {
	Word, Class string
}

// statusOf is what the data says of am: certified, listed, released or a
// draft, with its listing's review and its unreleased draft beside.
func statusOf(am *core.AuthoredMode) []modeStatus {
	var out []modeStatus
	switch {
	case am.Listing == core.ListingApproved && am.PublishedVersion > 0:
		out = append(out, modeStatus{"listed v" + strconv.Itoa(am.PublishedVersion), "ok"})
	case am.Listing == core.ListingPending:
		out = append(out, modeStatus{"listing in review", "warn"})
	case am.Listing == core.ListingRejected:
		out = append(out, modeStatus{"listing refused", "bad"})
	case am.Listing == core.ListingDelisted:
		out = append(out, modeStatus{"delisted", "bad"})
	}
	if am.CertifiedVersion > 0 {
		out = append(out, modeStatus{"certified v" + strconv.Itoa(am.CertifiedVersion), "ok"})
	}
	if am.LatestVersion > 0 {
		out = append(out, modeStatus{"released v" + strconv.Itoa(am.LatestVersion), "ok"})
	}
	if am.Draft == core.DraftPending {
		switch {
		case !am.DraftValidated:
			out = append(out, modeStatus{"draft, not valid", "bad"})
		default:
			out = append(out, modeStatus{"draft", "muted"})
		}
	}
	return out
}

// listingWords say where a listing stands.
var listingWords = map[core.ListingState]string{
	core.ListingNone:     "not requested",
	core.ListingPending:  "requested, in the operator's review",
	core.ListingApproved: "approved: the certified version is listed",
	core.ListingRejected: "refused in review",
	core.ListingDelisted: "taken down after approval",
}

type modesData struct {
	Modes []modeRow
}

type modeRow struct {
	Mode   *core.AuthoredMode
	Status []modeStatus
}

func (h *handler) modesPage(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	ms, err := h.modes.List(r.Context(), p)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	d := &modesData{}
	for _, am := range ms {
		d.Modes = append(d.Modes, modeRow{Mode: am, Status: statusOf(am)})
	}
	v := newView("Modes", p)
	v.Nav, v.Data, v.Notice = "modes", d, modeNotice(r)
	h.render(w, r, http.StatusOK, "modes", v)
}

type modeData struct {
	Detail   *modes.Detail
	Status   []modeStatus
	Versions []*core.ModeVersion
	// CanRelease, CanList: the policy lets the person release the draft
	// and change the listing (and invite organisations to the lab).
	CanRelease, CanList bool
	// Releasable: there is a validated draft to release; Listable: the
	// listing may be requested (none yet) or, approved, the certified
	// version published.
	Releasable, Listable bool
	Publish              bool
	// Listing is the listing's state in words.
	Listing string
	// From and To are the versions the diff form offers first; Next is
	// the version a release makes.
	From, To, Next int
}

// modeView reads the mode the path names for its page.
func (h *handler) modeView(w http.ResponseWriter, r *http.Request, status int, v *view) {
	p := principalOf(r.Context())
	d, err := h.modes.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.failed(w, r, err)
		return
	}
	vs, err := h.modes.Versions(r.Context(), p, d.Mode.ID)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	am := d.Mode
	md := &modeData{Detail: d, Status: statusOf(am), Versions: vs,
		CanRelease: h.modes.Allows(r.Context(), p, am, core.ActionModesRelease),
		CanList:    h.modes.Allows(r.Context(), p, am, core.ActionModesList),
		Releasable: am.Draft == core.DraftPending && am.DraftValidated,
		Listable: am.LatestVersion > 0 && (am.Listing == core.ListingNone ||
			(am.Listing == core.ListingApproved && am.CertifiedVersion > 0 && am.CertifiedVersion != am.PublishedVersion)),
		Publish: am.Listing == core.ListingApproved,
		Listing: listingWords[am.Listing],
		From:    max(am.LatestVersion-1, 1), To: am.LatestVersion, Next: am.LatestVersion + 1}
	v.Title, v.Nav, v.Data, v.Wide = am.Name, "modes", md, false
	h.render(w, r, status, "mode", v)
}

func (h *handler) modePage(w http.ResponseWriter, r *http.Request) {
	v := newView("Mode", principalOf(r.Context()))
	v.Notice = modeNotice(r)
	h.modeView(w, r, http.StatusOK, v)
}

// releaseMode releases the draft at the revision the page read.
func (h *handler) releaseMode(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	rev, _ := strconv.ParseInt(r.PostFormValue("revision"), 10, 64)
	rel, err := h.modes.Release(r.Context(), p, r.PathValue("id"), max(rev, 0))
	if err != nil {
		h.modeRefused(w, r, err)
		return
	}
	http.Redirect(w, r, "/modes/"+url.PathEscape(rel.Mode.ID)+"?done=released", http.StatusSeeOther)
}

// requestListing asks for the listing, or publishes the certified version
// of an approved one (modes.Service.Publish).
func (h *handler) requestListing(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	rev, _ := strconv.ParseInt(r.PostFormValue("listing_revision"), 10, 64)
	am, err := h.modes.Publish(r.Context(), p, modes.PublishRequest{ModeRef: r.PathValue("id"), ListingRevision: max(rev, 0)})
	if err != nil {
		h.modeRefused(w, r, err)
		return
	}
	done := "listing"
	if am.Listing == core.ListingApproved {
		done = "published"
	}
	http.Redirect(w, r, "/modes/"+url.PathEscape(am.ID)+"?done="+done, http.StatusSeeOther)
}

// labInvite invites an organisation by ticker (invited=false withdraws).
// Whether an organisation has the ticker, the answer is the same redirect
// to the same notice; only a ticker's form, which is public, is checked.
func (h *handler) labInvite(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	org := strings.TrimSpace(r.PostFormValue("org"))
	invited := r.PostFormValue("invited") != "false"
	li, err := h.modes.SetLabInvite(r.Context(), p, r.PathValue("id"), org, invited)
	if err != nil {
		var ce *core.Error
		if errors.As(err, &ce) && ce.Param == "org" {
			v := newView("Mode", p)
			v.Values["org"], v.Errors["org"] = org, ce.Message
			h.modeView(w, r, core.InfoFor(ce.Code).Status, v)
			return
		}
		h.modeRefused(w, r, err)
		return
	}
	done := "invited"
	if !invited {
		done = "withdrawn"
	}
	http.Redirect(w, r, "/modes/"+url.PathEscape(li.ModeID)+"?done="+done, http.StatusSeeOther)
}

// modeRefused shows a refusal of an action on the mode page above it, with
// the refusal's status; a mode that cannot be read is h.failed.
func (h *handler) modeRefused(w http.ResponseWriter, r *http.Request, err error) {
	var ce *core.Error
	if !errors.As(err, &ce) || ce.Code == core.CodeModeNotFound || ce.Code == core.CodeServiceUnavailable {
		h.failed(w, r, err)
		return
	}
	v := newView("Mode", principalOf(r.Context()))
	v.Error = ce.Message
	h.modeView(w, r, core.InfoFor(ce.Code).Status, v)
}

// The builder's fields besides the seats and staff (one per tier and
// role), and the depths a surcharge may be set for.
var (
	builderText    = []string{"name", "ticker", "description", "use_when", "critique"}
	builderNumbers = []string{"max_rounds", "quorum", "cost_ceiling_usd"}
)

// builderData is what the builder renders from.
type builderData struct {
	// ModeID is the mode the draft belongs to ("" for a new mode).
	ModeID, Ticker string
	Revision       int64
	Tiers          []core.Tier
	Roles          []string
	Critiques      []string
	Depths         []core.Depth
	// Summary are the refusals that name no field of the form.
	Summary []fieldRefusal
	// Floor and Recommended are the price floor and recommended price of
	// the spec as it stands ("" when it does not decode).
	Floor, Recommended string
	Checked            bool
	// Groups are the form's fields, in fieldsets.
	Groups []fieldGroup
}

// fieldGroup is one fieldset of the builder.
type fieldGroup struct {
	Legend, Hint string
	// Prices: the group shows the price floor.
	Prices bool
	Fields []builderField
}

// builderField is one field of the builder with what was typed in it and
// the refusals beside it.
type builderField struct {
	Name, Label, Hint string
	// Kind is text, area, number, money or select (of Options).
	Kind    string
	Options []string
	Rows    int
	// Mono: the field holds engine ids or JSON, set in a fixed width.
	Mono  bool
	Value string
	Error string
}

// builderGroups are the builder's fieldsets, filled from v.
func builderGroups(v *view) []fieldGroup {
	f := func(name, label, kind, hint string) builderField {
		return builderField{Name: name, Label: label, Kind: kind, Hint: hint, Value: v.Values[name], Error: v.Errors[name], Rows: 3}
	}
	about := fieldGroup{Legend: "The mode", Fields: []builderField{
		f("name", "Name", "text", ""),
		f("ticker", "Ticker", "text", "Four capital letters: the mode is called "+orgTicker(v)+":TICKER."),
		f("description", "Description", "area", "Optional."),
		f("use_when", "Use when", "area", "When a caller should pick this mode, in a sentence."),
	}}
	seats := fieldGroup{Legend: "Seats by tier",
		Hint: "One seat a line: its engine, then its backup if any, e.g. sim/atlas sim/gemini-flash. A tier left empty has no row of its own."}
	for _, t := range core.Tiers {
		sf := f("seats_"+string(t), string(t), "area", "")
		sf.Rows, sf.Mono = 4, true
		seats.Fields = append(seats.Fields, sf)
	}
	staff := fieldGroup{Legend: "Staff", Hint: "Each role's engine, then its backup if any. Leave a role empty to go without it."}
	for _, role := range core.StaffRoles {
		staff.Fields = append(staff.Fields, f("staff_"+role, role, "text", ""))
	}
	critique := f("critique", "Critique", "select", "")
	critique.Options = core.Critiques
	delib := fieldGroup{Legend: "Deliberation", Fields: []builderField{
		critique,
		f("max_rounds", "Most rounds", "number", "From 1 to "+strconv.Itoa(core.MaxRounds)+"."),
		f("quorum", "Quorum", "number", "Optional: the fewest seats that must answer."),
		f("cost_ceiling_usd", "Cost ceiling (USD)", "money", "The most one call may cost at the source."),
	}}
	prices := fieldGroup{Legend: "Prices (USD a question, on top of tokens)", Prices: true, Fields: []builderField{
		f("surcharge_usd", "Surcharge", "money", "One price for every depth."),
	}}
	for _, d := range core.Depths {
		prices.Fields = append(prices.Fields, f("surcharge_"+string(d), "Surcharge at "+string(d), "money", ""))
	}
	extra := f("extra", "Other fields (JSON)", "area",
		"Any other field of the spec as one JSON object — min_tier, seats, pool, family_diversity, straggler_deadline_s, "+
			"hedge_percentile, express_threshold, api_commercial.price_tier — over the fields above.")
	extra.Rows, extra.Mono = 8, true
	return []fieldGroup{about, seats, staff, delib, prices, {Legend: "Advanced", Fields: []builderField{extra}}}
}

func orgTicker(v *view) string {
	if v.Org != nil && v.Org.Ticker != "" {
		return v.Org.Ticker
	}
	return "ORG"
}

// fieldRefusal is one refusal as the builder shows it: the form field it
// names ("" for none), the spec's path and the message.
type fieldRefusal struct {
	Field   string `json:"field"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

func (h *handler) newModePage(w http.ResponseWriter, r *http.Request) {
	v := newView("New mode", principalOf(r.Context()))
	v.Values["critique"], v.Values["max_rounds"] = core.CritiqueDeep, "2"
	h.builderView(w, r, http.StatusOK, v, &builderData{}, nil)
}

func (h *handler) editModePage(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	d, err := h.modes.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.failed(w, r, err)
		return
	}
	v := newView("Edit "+d.Mode.Name, p)
	v.Values = formFromSpec(d.Mode.DraftSpec)
	h.builderView(w, r, http.StatusOK, v, &builderData{ModeID: d.Mode.ID, Ticker: d.Mode.Ticker, Revision: d.Mode.DraftRevision}, nil)
}

// builderView renders the builder with what was typed (v.Values), after
// checking it when checked is set (the refusals beside their fields).
func (h *handler) builderView(w http.ResponseWriter, r *http.Request, status int, v *view, bd *builderData, checked []fieldRefusal) {
	bd.Tiers, bd.Roles, bd.Critiques, bd.Depths = core.Tiers, core.StaffRoles, core.Critiques, core.Depths
	for _, f := range checked {
		if f.Field == "" {
			bd.Summary = append(bd.Summary, f)
			continue
		}
		if v.Errors[f.Field] != "" {
			v.Errors[f.Field] += " "
		}
		v.Errors[f.Field] += f.Message
	}
	bd.Groups = builderGroups(v)
	v.Nav, v.Data = "modes", bd
	h.render(w, r, status, "mode-edit", v)
}

// builderValues are the builder's fields as posted.
func builderValues(r *http.Request) map[string]string {
	out := map[string]string{}
	for k, vs := range r.PostForm {
		if len(vs) > 0 && isBuilderField(k) {
			out[k] = vs[0]
		}
	}
	return out
}

func isBuilderField(k string) bool {
	if slices.Contains(builderText, k) || slices.Contains(builderNumbers, k) || k == "extra" || k == "surcharge_usd" {
		return true
	}
	for _, t := range core.Tiers {
		if k == "seats_"+string(t) {
			return true
		}
	}
	for _, role := range core.StaffRoles {
		if k == "staff_"+role {
			return true
		}
	}
	for _, d := range core.Depths {
		if k == "surcharge_"+string(d) {
			return true
		}
	}
	return false
}

// check validates the builder's fields as the spec they make, through
// modes.Service.Validate: the refusals by field, and the price floor.
func (h *handler) check(r *http.Request, p *access.Principal, vals map[string]string, modeID string) ([]fieldRefusal, *modes.Checked, error) {
	spec, local := specFromForm(vals)
	c, err := h.modes.Validate(r.Context(), p, spec, modeID)
	if err != nil {
		return nil, nil, err
	}
	out := local
	for _, rf := range c.Refusals {
		out = append(out, fieldRefusal{Field: fieldOf(rf.Path, vals), Path: rf.Path, Message: rf.Message})
	}
	return out, c, nil
}

// validateBuilder answers the builder's script: the refusals of the form
// as posted, each with the field it names, and the price floor.
func (h *handler) validateBuilder(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "The form could not be read."})
		return
	}
	vals := builderValues(r)
	rs, c, err := h.check(r, principalOf(r.Context()), vals, r.PostFormValue("mode"))
	if err != nil {
		h.jsonError(w, err)
		return
	}
	out := struct {
		Refusals    []fieldRefusal `json:"refusals"`
		Floor       string         `json:"floor"`
		Recommended string         `json:"recommended"`
	}{Refusals: rs}
	if out.Refusals == nil {
		out.Refusals = []fieldRefusal{}
	}
	if c.Floor != nil {
		out.Floor, out.Recommended = usd(core.Micros(c.Floor.FloorUSD)), usd(core.Micros(c.Floor.RecommendedUSD))
	}
	writeJSON(w, http.StatusOK, out)
}

// postBuilder is the builder's form: action=check renders it again with
// its refusals; action=save saves the draft and goes to the mode's page,
// or renders the refusals that stopped it.
func (h *handler) postBuilder(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	if err := r.ParseForm(); err != nil {
		h.message(w, r, http.StatusBadRequest, "Not saved", "The form could not be read.")
		return
	}
	modeID := r.PathValue("id")
	rev, _ := strconv.ParseInt(r.PostFormValue("revision"), 10, 64)
	vals := builderValues(r)
	title := "New mode"
	bd := &builderData{ModeID: modeID, Revision: max(rev, 0), Checked: true}
	if modeID != "" {
		d, err := h.modes.Get(r.Context(), p, modeID)
		if err != nil {
			h.failed(w, r, err)
			return
		}
		title, bd.Ticker = "Edit "+d.Mode.Name, d.Mode.Ticker
	}
	v := newView(title, p)
	v.Values = vals
	status := http.StatusOK
	if r.PostFormValue("action") == "save" {
		spec, local := specFromForm(vals)
		if len(local) == 0 {
			s, err := h.modes.Save(r.Context(), p, modes.SaveRequest{Spec: spec, ModeRef: modeID, Revision: bd.Revision})
			if err == nil {
				http.Redirect(w, r, "/modes/"+url.PathEscape(s.Mode.ID)+"?done=saved", http.StatusSeeOther)
				return
			}
			var ce *core.Error
			if !errors.As(err, &ce) || ce.Code == core.CodeServiceUnavailable {
				h.failed(w, r, err)
				return
			}
			status = core.InfoFor(ce.Code).Status
			if ce.Code != core.CodeModeInvalid {
				// A refusal of the store or the lifecycle (name_taken,
				// draft_changed, conflict): beside its field, or above.
				if f := fieldOf(ce.Param, vals); f != "" {
					v.Errors[f] = ce.Message
				} else {
					v.Error = ce.Message
				}
			}
		} else {
			status = http.StatusUnprocessableEntity
		}
	}
	rs, c, err := h.check(r, p, vals, modeID)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	if c.Floor != nil {
		bd.Floor, bd.Recommended = usd(core.Micros(c.Floor.FloorUSD)), usd(core.Micros(c.Floor.RecommendedUSD))
	}
	h.builderView(w, r, status, v, bd, rs)
}

// fieldOf is the builder field a refusal's spec path names: the path's
// own field for the plain fields, seats_TIER and staff_ROLE for a tier's
// seats and a role, surcharge_usd and surcharge_DEPTH for the prices, and
// extra for a field only the advanced JSON holds; "" for a path that
// names none of them (the whole spec), shown above the form.
func fieldOf(path string, vals map[string]string) string {
	parts := splitPath(path)
	if len(parts) == 0 {
		return ""
	}
	top := parts[0]
	if extraHas(vals["extra"], top, parts) {
		return "extra"
	}
	switch {
	case slices.Contains(builderText, top) || slices.Contains(builderNumbers, top):
		return top
	case top == "seats_by_tier" && len(parts) > 1 && slices.Contains(core.Tiers, core.Tier(parts[1])):
		return "seats_" + parts[1]
	case top == "staff" && len(parts) > 1 && slices.Contains(core.StaffRoles, parts[1]):
		return "staff_" + parts[1]
	case top == "api_commercial" && len(parts) > 1 && parts[1] == "q_surcharge_usd":
		return "surcharge_usd"
	case top == "api_commercial" && len(parts) > 2 && parts[1] == "q_surcharge_by_depth" &&
		slices.Contains(core.Depths, core.Depth(parts[2])):
		return "surcharge_" + parts[2]
	}
	return ""
}

// extraHas reports whether the advanced JSON sets the field at parts (its
// top field, or for api_commercial its second).
func extraHas(extra, top string, parts []string) bool {
	if strings.TrimSpace(extra) == "" {
		return false
	}
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(extra), &m) != nil {
		return false
	}
	raw, ok := m[top]
	if !ok {
		return false
	}
	if top != "api_commercial" || len(parts) < 2 {
		return true
	}
	var inner map[string]json.RawMessage
	if json.Unmarshal(raw, &inner) != nil {
		return true
	}
	_, ok = inner[parts[1]]
	return ok
}

// splitPath splits a refusal's path ("seats_by_tier.plus[1].engine") into
// its names and indexes: seats_by_tier, plus, 1, engine.
func splitPath(path string) []string {
	return strings.FieldsFunc(path, func(c rune) bool { return c == '.' || c == '[' || c == ']' })
}

// seatOf reads a seat (or a staff role) as the builder writes it: its
// engine, then its backup if any. Nil for a blank line; ok is false for
// more than two words.
func seatOf(line string) (seat map[string]any, ok bool) {
	switch words := strings.Fields(line); len(words) {
	case 0:
		return nil, true
	case 1:
		return map[string]any{"engine": words[0]}, true
	case 2:
		return map[string]any{"engine": words[0], "backup": words[1]}, true
	}
	return nil, false
}

// specFromForm is the spec the builder's fields make: each field that is
// set, with the advanced JSON's fields over them (an object the form fills
// in part — seats_by_tier, staff, api_commercial — merged field by
// field). A number that does not read as one is passed on as text, for
// the validation to refuse beside its field; what cannot be
// made into a spec at all (a seat line of three words, advanced JSON that
// is not an object) is a refusal of the form's own.
func specFromForm(vals map[string]string) (json.RawMessage, []fieldRefusal) {
	obj := map[string]any{}
	for _, k := range builderText {
		if s := strings.TrimSpace(vals[k]); s != "" {
			obj[k] = s
		}
	}
	for _, k := range builderNumbers {
		if s := strings.TrimSpace(vals[k]); s != "" {
			obj[k] = number(s)
		}
	}
	rows, local := seatsFromForm(vals)
	if len(rows) > 0 {
		obj["seats_by_tier"] = rows
	}
	staff, refused := staffFromForm(vals)
	local = append(local, refused...)
	if len(staff) > 0 {
		obj["staff"] = staff
	}
	if api := commercialFromForm(vals); len(api) > 0 {
		obj["api_commercial"] = api
	}
	if extra := strings.TrimSpace(vals["extra"]); extra != "" {
		if !mergeAdvanced(obj, extra) {
			local = append(local, fieldRefusal{Field: "extra", Message: "The advanced fields are not one JSON object: write them as {\"field\": value, …}, or leave the box empty."})
		}
	}
	return encodeJSON(obj, ""), local
}

// seatsFromForm is the seat rows the builder's seats_<tier> boxes make, one
// seat a line, with a refusal for each line that is not a seat.
func seatsFromForm(vals map[string]string) (map[string]any, []fieldRefusal) {
	var local []fieldRefusal
	rows := map[string]any{}
	for _, t := range core.Tiers {
		field := "seats_" + string(t)
		var row []any
		for line := range strings.Lines(vals[field]) {
			seat, ok := seatOf(line)
			switch {
			case !ok:
				local = append(local, fieldRefusal{Field: field, Path: "seats_by_tier." + string(t),
					Message: fmt.Sprintf("%q is not a seat: write one seat a line, its engine and then, if any, its backup.", strings.TrimSpace(line))})
			case seat != nil:
				row = append(row, seat)
			}
		}
		if len(row) > 0 {
			rows[string(t)] = row
		}
	}
	return rows, local
}

// staffFromForm is the staff the builder's staff_<role> fields name, with a
// refusal for each that is not an engine and a backup.
func staffFromForm(vals map[string]string) (map[string]any, []fieldRefusal) {
	var local []fieldRefusal
	staff := map[string]any{}
	for _, role := range core.StaffRoles {
		field := "staff_" + role
		seat, ok := seatOf(vals[field])
		switch {
		case !ok:
			local = append(local, fieldRefusal{Field: field, Path: "staff." + role,
				Message: "Name the role's engine and then, if any, its backup: two words at most."})
		case seat != nil:
			staff[role] = seat
		}
	}
	return staff, local
}

// commercialFromForm is the api_commercial the builder's surcharge fields
// make: the flat surcharge and the surcharges by depth that are set.
func commercialFromForm(vals map[string]string) map[string]any {
	api := map[string]any{}
	if s := strings.TrimSpace(vals["surcharge_usd"]); s != "" {
		api["q_surcharge_usd"] = number(s)
	}
	depths := map[string]any{}
	for _, d := range core.Depths {
		if s := strings.TrimSpace(vals["surcharge_"+string(d)]); s != "" {
			depths[string(d)] = number(s)
		}
	}
	if len(depths) > 0 {
		api["q_surcharge_by_depth"] = depths
	}
	return api
}

// mergeAdvanced merges the advanced JSON's fields over obj: an object the
// form fills in part (seats_by_tier, staff, api_commercial) takes the
// advanced JSON's fields beside the form's. false when extra is not one
// JSON object (what it did hold is merged all the same).
func mergeAdvanced(obj map[string]any, extra string) bool {
	var more map[string]any
	dec := json.NewDecoder(strings.NewReader(extra))
	dec.UseNumber()
	ok := dec.Decode(&more) == nil && more != nil && !dec.More()
	for k, val := range more {
		inner, ok1 := val.(map[string]any)
		have, ok2 := obj[k].(map[string]any)
		if ok1 && ok2 {
			for ik, iv := range inner {
				have[ik] = iv
			}
			continue
		}
		obj[k] = val
	}
	return ok
}

// number is a figure typed into the form: a JSON number when it reads as
// one, the text as typed otherwise.
func number(s string) any {
	var n json.Number
	if json.Unmarshal([]byte(s), &n) == nil {
		return n
	}
	return s
}

// encodeJSON writes v without escaping HTML's characters (a spec keeps its
// text as typed), indented by indent when it is not "".
func encodeJSON(v any, indent string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if indent != "" {
		enc.SetIndent("", indent)
	}
	_ = enc.Encode(v)
	return bytes.TrimRight(b.Bytes(), "\n")
}

// formFromSpec is the builder's fields of a saved spec: each field the
// form has that holds a value of its shape, and every other field in the
// advanced JSON.
func formFromSpec(spec json.RawMessage) map[string]string {
	vals := map[string]string{}
	var obj map[string]any
	dec := json.NewDecoder(bytes.NewReader(spec))
	dec.UseNumber()
	if dec.Decode(&obj) != nil || obj == nil {
		if len(spec) > 0 {
			vals["extra"] = string(spec)
		}
		return vals
	}
	for _, k := range builderText {
		if s, ok := obj[k].(string); ok {
			vals[k] = s
			delete(obj, k)
		}
	}
	for _, k := range builderNumbers {
		if n, ok := obj[k].(json.Number); ok {
			vals[k] = n.String()
			delete(obj, k)
		}
	}
	if rows, ok := obj["seats_by_tier"].(map[string]any); ok {
		for _, t := range core.Tiers {
			if lines, ok := seatLines(rows[string(t)]); ok {
				vals["seats_"+string(t)] = lines
				delete(rows, string(t))
			}
		}
		if len(rows) == 0 {
			delete(obj, "seats_by_tier")
		}
	}
	if staff, ok := obj["staff"].(map[string]any); ok {
		for _, role := range core.StaffRoles {
			if words, ok := seatWords(staff[role]); ok {
				vals["staff_"+role] = words
				delete(staff, role)
			}
		}
		if len(staff) == 0 {
			delete(obj, "staff")
		}
	}
	if api, ok := obj["api_commercial"].(map[string]any); ok {
		if n, ok := api["q_surcharge_usd"].(json.Number); ok {
			vals["surcharge_usd"] = n.String()
			delete(api, "q_surcharge_usd")
		}
		if depths, ok := api["q_surcharge_by_depth"].(map[string]any); ok {
			for _, d := range core.Depths {
				if n, ok := depths[string(d)].(json.Number); ok {
					vals["surcharge_"+string(d)] = n.String()
					delete(depths, string(d))
				}
			}
			if len(depths) == 0 {
				delete(api, "q_surcharge_by_depth")
			}
		}
		if len(api) == 0 {
			delete(obj, "api_commercial")
		}
	}
	if len(obj) > 0 {
		vals["extra"] = string(encodeJSON(obj, "  "))
	}
	return vals
}

// seatLines is a row of seats as the builder's lines, when every seat is
// an engine and an optional backup.
func seatLines(v any) (string, bool) {
	row, ok := v.([]any)
	if !ok {
		return "", false
	}
	lines := make([]string, 0, len(row))
	for _, s := range row {
		words, ok := seatWords(s)
		if !ok {
			return "", false
		}
		lines = append(lines, words)
	}
	return strings.Join(lines, "\n"), true
}

// seatWords is a seat or a staff role as "engine backup", when it holds
// only those, as single words.
func seatWords(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	engine, ok := m["engine"].(string)
	if !ok || len(strings.Fields(engine)) != 1 {
		return "", false
	}
	words := engine
	for k, val := range m {
		switch k {
		case "engine":
		case "backup":
			b, ok := val.(string)
			if !ok || len(strings.Fields(b)) != 1 {
				return "", false
			}
			words += " " + b
		default:
			return "", false
		}
	}
	return words, true
}

// diffLine is one field of two specs: its path and its value in each
// ("" when absent).
type diffLine struct {
	Path, From, To string
	// Kind is "changed", "added" or "removed".
	Kind string
}

// specDiff compares two specs field by field: every leaf (a string,
// number, true, false or null, or an empty list or object) by its path,
// in path order, listing those whose value differs.
func specDiff(from, to json.RawMessage) []diffLine {
	a, b := flatten(from), flatten(to)
	paths := map[string]bool{}
	for p := range a {
		paths[p] = true
	}
	for p := range b {
		paths[p] = true
	}
	keys := make([]string, 0, len(paths))
	for p := range paths {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	var out []diffLine
	for _, p := range keys {
		x, inA := a[p]
		y, inB := b[p]
		switch {
		case inA && inB && x != y:
			out = append(out, diffLine{Path: p, From: x, To: y, Kind: "changed"})
		case inA && !inB:
			out = append(out, diffLine{Path: p, From: x, Kind: "removed"})
		case !inA && inB:
			out = append(out, diffLine{Path: p, To: y, Kind: "added"})
		}
	}
	return out
}

// flatten is a JSON document's leaves by path ("api_commercial.q_surcharge_usd",
// "seats_by_tier.plus[0].engine"), each as JSON text; a document that is
// not JSON is one leaf, its text, at the path "spec".
func flatten(doc json.RawMessage) map[string]string {
	out := map[string]string{}
	var v any
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		if len(doc) > 0 {
			out["spec"] = string(doc)
		}
		return out
	}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case map[string]any:
			if len(x) == 0 && path != "" {
				out[path] = "{}"
			}
			for k, e := range x {
				if path == "" {
					walk(k, e)
				} else {
					walk(path+"."+k, e)
				}
			}
		case []any:
			if len(x) == 0 {
				out[path] = "[]"
			}
			for i, e := range x {
				walk(path+"["+strconv.Itoa(i)+"]", e)
			}
		default:
			out[path] = string(encodeJSON(x, ""))
		}
	}
	walk("", v)
	return out
}

type diffData struct {
	Mode     *core.AuthoredMode
	Versions []*core.ModeVersion
	// From and To are the versions compared (0 for the draft).
	From, To int
	Lines    []diffLine
}

// modeDiffPage compares two released versions of a mode, or a version
// and the draft (to=draft), field by field.
func (h *handler) modeDiffPage(w http.ResponseWriter, r *http.Request) {
	p := principalOf(r.Context())
	d, err := h.modes.Get(r.Context(), p, r.PathValue("id"))
	if err != nil {
		h.failed(w, r, err)
		return
	}
	am := d.Mode
	vs, err := h.modes.Versions(r.Context(), p, am.ID)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	dd := &diffData{Mode: am, Versions: vs}
	v := newView("Changes to "+am.Name, p)
	v.Nav, v.Data = "modes", dd
	q := r.URL.Query()
	from, err1 := versionParam(q.Get("from"), am)
	to, err2 := versionParam(q.Get("to"), am)
	if err1 != nil || err2 != nil {
		v.Error = "Choose two of the mode's versions to compare: a number from 1 to " + strconv.Itoa(am.LatestVersion) + ", or draft."
		h.render(w, r, http.StatusBadRequest, "mode-diff", v)
		return
	}
	dd.From, dd.To = from, to
	spec := func(n int) (json.RawMessage, error) {
		if n == 0 {
			return am.DraftSpec, nil
		}
		mv, err := h.modes.Version(r.Context(), p, am.ID, n)
		if err != nil {
			return nil, err
		}
		return mv.Spec, nil
	}
	a, err := spec(from)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	b, err := spec(to)
	if err != nil {
		h.failed(w, r, err)
		return
	}
	dd.Lines = specDiff(a, b)
	h.render(w, r, http.StatusOK, "mode-diff", v)
}

// versionParam reads a version of am named in the address: a released
// version's number, or "draft" (0). Left out, it is the latest version.
func versionParam(s string, am *core.AuthoredMode) (int, error) {
	switch s {
	case "":
		if am.LatestVersion == 0 {
			return 0, nil
		}
		return am.LatestVersion, nil
	case "draft":
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > am.LatestVersion {
		return 0, errors.New("no such version")
	}
	return n, nil
}
