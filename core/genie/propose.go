package genie

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/core/modes"
)

// genie_propose_mode: the assistant designs a whole mode spec from a
// description. The staff engine is told the engines the caller may seat
// (tier, family, price) and answers a spec with a reason per choice; the
// spec is then held to validate_mode's own check (modes.Service.Validate).
// A refusal whose fix is certain is repaired here (a price under the floor
// takes the recommended price; a taken ticker the suggested one); any other
// is sent back to the engine once. A spec that still fails is never
// returned: no_proposal, with its refusals.

// ProposeLead opens the system prompt of a proposal. The simulator
// (adapters/sim, genie.go) answers a prompt that starts with it with a spec
// built from the prompt's INPUT, as a real engine is asked to.
const ProposeLead = "You are Conclave's mode designer."

// maxDescription is the longest description the assistant reads, in bytes.
const maxDescription = 4 << 10

// EngineLister lists the engines the caller may seat, up to its tier
// (calls.Service.ListEngines).
type EngineLister interface {
	ListEngines(ctx context.Context, p *access.Principal) (*calls.EngineList, error)
}

// SpecValidator is validate_mode's check (modes.Service.Validate).
type SpecValidator interface {
	Validate(ctx context.Context, p *access.Principal, spec json.RawMessage, modeRef string) (*modes.Checked, error)
}

// ProposeDeps are what a Proposer reads and calls.
type ProposeDeps struct {
	Engines   EngineLister
	Validator SpecValidator
	// Available reports whether an engine can fill a seat now (the modes
	// service's Available); nil means every engine can.
	Available func(engineID string) bool
	// Caller and Staff are the assistant's staff engines, asked in order
	// until one answers (Engines(catalog)); Catalog names their models and
	// prices the engines the prompt lists.
	Caller  deliberate.Caller
	Catalog *core.Catalog
	Staff   []string
	Logger  *slog.Logger
}

// Proposer answers genie_propose_mode. Safe for concurrent use.
type Proposer struct{ d ProposeDeps }

// NewProposer returns a Proposer, or an error naming what is missing.
func NewProposer(d ProposeDeps) (*Proposer, error) {
	if d.Engines == nil || d.Validator == nil || d.Caller == nil || d.Catalog == nil {
		return nil, errors.New("genie: Engines, Validator, Caller and Catalog are required")
	}
	if d.Available == nil {
		d.Available = func(string) bool { return true }
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Proposer{d: d}, nil
}

// Proposal is what genie_propose_mode returns: a spec that passes
// validate_mode as it stands, its price, and why each choice was made.
type Proposal struct {
	Spec json.RawMessage `json:"spec"`
	// Price is the spec's floor and recommended price (validate_mode's
	// figures) beside the surcharges it charges.
	Price ProposalPrice `json:"price"`
	// Reasons say why, per choice (seats, staff, rounds, critique, quorum,
	// price …), in the engine's words.
	Reasons map[string]string `json:"reasons"`
	// ModeConfigHash is the hash validate_mode answers for the spec.
	ModeConfigHash string `json:"mode_config_hash"`
	// Repairs lists what was changed after the engine answered: a price
	// raised to the recommendation, a ticker replaced, or "asked again" with
	// the refusals the first spec met. Empty when it passed as answered.
	Repairs []string `json:"repairs"`
}

// ProposalPrice is a proposal's price.
type ProposalPrice struct {
	FloorUSD            core.Dollars            `json:"floor_usd"`
	RecommendedUSD      core.Dollars            `json:"recommended_usd"`
	SurchargeByDepth    map[string]core.Dollars `json:"q_surcharge_by_depth,omitempty"`
	SurchargeUSD        *core.Dollars           `json:"q_surcharge_usd,omitempty"`
	SurchargeExpressUSD *core.Dollars           `json:"q_surcharge_express_usd,omitempty"`
}

// ProposalEngine is an engine as the prompt lists it.
type ProposalEngine struct {
	ID      string      `json:"id"`
	Family  string      `json:"family"`
	MaxTier core.Tier   `json:"max_tier"`
	Tiers   []core.Tier `json:"tiers"`
	// InputPerMTok and OutputPerMTok are its source prices per million
	// tokens, in dollars: what the floor is computed from.
	InputPerMTok  core.Dollars `json:"input_usd_per_mtok"`
	OutputPerMTok core.Dollars `json:"output_usd_per_mtok"`
}

// ProposalInput is the prompt's INPUT document. The description is the
// user message, not part of INPUT: it is the caller's text, sent as it came.
type ProposalInput struct {
	Description string           `json:"-"`
	Tier        core.Tier        `json:"tier"`
	Engines     []ProposalEngine `json:"engines"`
	// Refusals are the previous spec's, when the engine is asked again.
	Refusals []modes.Refusal `json:"refusals,omitempty"`
	Previous json.RawMessage `json:"previous_spec,omitempty"`
	// Unfounded says why a previous reply that the description cannot be
	// met was not accepted, when the engine is asked again.
	Unfounded string `json:"unfounded,omitempty"`
}

// Unable is an engine's reply that the description cannot be met with
// INPUT's engines: the provider families it reads the description to
// allow and the least tier it accepts. The proposer believes it only when
// those engines indeed cannot fill a row (Confirm).
type Unable struct {
	Families []string  `json:"families"`
	MinTier  core.Tier `json:"min_tier"`
	Reason   string    `json:"reason"`
}

// proposeSystem is the proposal's instruction; INPUT follows it.
const proposeSystem = ProposeLead + " Design one deliberation mode spec for the user's description, using only " +
	"INPUT's engines, each at a tier it lists: seats of 2 to 6 engines per row from at least two provider families, " +
	"each with a backup; staff (judge, synthesis, classifier); critique (always, deep or never); max_rounds (1 to 5); " +
	"quorum; cost_ceiling_usd; api_commercial with q_surcharge_by_depth (light, medium, deep) and q_surcharge_usd; " +
	"name (3 to 60 letters, digits and spaces), ticker (four letters A-Z), use_when and description — the fields of " +
	"docs/modes.md. Seat no tier above INPUT's tier. When INPUT lists refusals, answer the previous spec corrected. " +
	"Reply with one JSON object only: {\"spec\": {…}, \"reasons\": {\"seats\": \"…\", \"staff\": \"…\", " +
	"\"rounds\": \"…\", \"critique\": \"…\", \"quorum\": \"…\", \"price\": \"…\"}}."

// Propose designs a mode from description for p. It saves nothing and is
// never billed to p.
func (pr *Proposer) Propose(ctx context.Context, p *access.Principal, description string) (*Proposal, error) {
	description = strings.TrimSpace(description)
	switch {
	case description == "":
		return nil, core.Errorf(core.CodeInvalidRequest, "description is empty: describe the mode to design.").WithParam("description")
	case len(description) > maxDescription:
		return nil, core.Errorf(core.CodeInvalidRequest, "description is at most %d bytes.", maxDescription).WithParam("description")
	}
	list, err := pr.d.Engines.ListEngines(ctx, p)
	if err != nil {
		return nil, err
	}
	in := &ProposalInput{Description: description, Tier: list.Tier, Engines: pr.seatable(list)}
	if err := CanSeat(in.Engines); err != nil {
		return nil, err
	}
	var repairs []string
	var reasons map[string]string
	for asked := 1; ; asked++ {
		spec, again, unable, err := pr.ask(ctx, in)
		if err != nil {
			return nil, err
		}
		if unable != nil {
			if err := Confirm(in.Engines, unable); err != nil {
				return nil, err
			}
			if asked == 2 {
				return nil, core.Errorf(core.CodeNoProposal,
					"The assistant twice said the description cannot be met, though the engines available to you can meet it; nothing is proposed. Describe the mode more plainly.")
			}
			repairs = append(repairs, "asked again: the engines of "+core.List(unable.Families)+" can fill a row")
			in.Unfounded = fmt.Sprintf("Your previous reply said the description cannot be met, but INPUT's engines of %s at tier %s or above can fill a row: design the spec.",
				core.List(unable.Families), unable.MinTier)
			continue
		}
		if len(again) > 0 {
			reasons = again
		}
		checked, spec, fixed, err := pr.check(ctx, p, spec)
		if err != nil {
			return nil, err
		}
		repairs = append(repairs, fixed...)
		if checked.OK() {
			return proposalOf(spec, checked, reasons, repairs), nil
		}
		if asked == 2 {
			return nil, core.Errorf(core.CodeNoProposal,
				"The assistant's spec broke %s even when asked again; nothing is proposed. Describe the mode more plainly.",
				refusalCodes(checked.Refusals)).WithDetail("refusals", checked.Refusals)
		}
		repairs = append(repairs, "asked again with "+refusalCodes(checked.Refusals))
		in.Refusals, in.Previous, in.Unfounded = checked.Refusals, spec, ""
	}
}

// proposalOf is the answer for a spec that passed checked.
func proposalOf(spec json.RawMessage, checked *modes.Checked, reasons map[string]string, repairs []string) *Proposal {
	out := &Proposal{Spec: spec, Reasons: reasons, ModeConfigHash: checked.ConfigHash, Repairs: repairs}
	if out.Repairs == nil {
		out.Repairs = []string{}
	}
	if out.Reasons == nil {
		out.Reasons = map[string]string{}
	}
	if checked.Floor != nil {
		out.Price.FloorUSD, out.Price.RecommendedUSD = checked.Floor.FloorUSD, checked.Floor.RecommendedUSD
	}
	if s, err := modes.Decode(spec); err == nil && s.APICommercial != nil {
		out.Price.SurchargeByDepth, out.Price.SurchargeUSD = s.APICommercial.SurchargeByDepth, s.APICommercial.SurchargeUSD
		out.Price.SurchargeExpressUSD = s.APICommercial.ExpressUSD
	}
	return out
}

// seatable are list's engines that can fill a seat now, with their prices.
func (pr *Proposer) seatable(list *calls.EngineList) []ProposalEngine {
	var out []ProposalEngine
	for _, v := range list.Engines {
		e, ok := pr.d.Catalog.Engine(v.ID)
		if !ok || !pr.d.Available(v.ID) {
			continue
		}
		out = append(out, ProposalEngine{ID: v.ID, Family: v.Family, MaxTier: v.MaxTier, Tiers: v.Tiers,
			InputPerMTok: core.Dollars(e.InputPerMTok), OutputPerMTok: core.Dollars(e.OutputPerMTok)})
	}
	return out
}

// CanSeat refuses engines that cannot fill one row of a mode: none at all
// is engines_unavailable (422, as the spec gives it for a proposal); fewer
// than the two seats of two provider families a fixed row needs, at every
// tier the engines reach, is too_few_engines.
func CanSeat(engines []ProposalEngine) error {
	if len(engines) == 0 {
		return core.Errorf(core.CodeEnginesUnavailable, "No engine is available to build a proposal. Retry shortly.").
			WithStatus(422)
	}
	for _, t := range core.Tiers {
		families := map[string]bool{}
		for _, e := range engines {
			if slices.Contains(e.Tiers, t) {
				families[e.Family] = true
			}
		}
		if len(families) >= 2 {
			return nil
		}
	}
	return core.Errorf(core.CodeTooFewEngines,
		"The engines available to you cannot fill a row: a row needs two seats from two provider families (list_engines).")
}

// ask asks the staff engines for a spec over in, and reads it: the
// answer's spec (a JSON object) and its reasons, or its reply that the
// description cannot be met. An answer with neither is no_proposal; no
// engine answering is genie_unavailable.
func (pr *Proposer) ask(ctx context.Context, in *ProposalInput) (json.RawMessage, map[string]string, *Unable, error) {
	input, err := json.Marshal(in)
	if err != nil {
		return nil, nil, nil, err
	}
	text, err := staffCall(ctx, pr.d.Caller, pr.d.Catalog, pr.d.Staff, pr.d.Logger, proposeSystem+"\n\nINPUT:\n"+string(input),
		[]core.Message{{Role: core.RoleUser, Content: in.Description}}, func(text string) (string, bool) { return text, text != "" })
	if err != nil {
		return nil, nil, nil, err
	}
	if unable, ok := ParseUnable(text); ok {
		return nil, nil, unable, nil
	}
	spec, reasons, ok := ParseProposal(text)
	if !ok {
		return nil, nil, nil, core.Errorf(core.CodeNoProposal,
			"The assistant answered without a usable spec; nothing is proposed. Ask again, perhaps more plainly.")
	}
	return spec, reasons, nil, nil
}

// ParseUnable reads an engine's reply that the description cannot be met:
// one JSON object (alone or in a ```json fence) holding "unable" with at
// least one family and a valid min_tier.
func ParseUnable(text string) (*Unable, bool) {
	var out struct {
		Unable *Unable `json:"unable"`
	}
	if json.Unmarshal([]byte(unfence(text)), &out) != nil || out.Unable == nil ||
		len(out.Unable.Families) == 0 || !out.Unable.MinTier.Valid() {
		return nil, false
	}
	return out.Unable, true
}

// Confirm holds an engine's reply that the description cannot be met to
// the engines: when the engines of u's families, at u's tier or above,
// indeed cannot fill a row it is too_few_engines (422) with the engine's
// reason; when they can it returns nil, and the reply is unfounded.
func Confirm(engines []ProposalEngine, u *Unable) error {
	var within []ProposalEngine
	for _, e := range engines {
		if !slices.Contains(u.Families, e.Family) {
			continue
		}
		e.Tiers = slices.DeleteFunc(slices.Clone(e.Tiers), func(t core.Tier) bool { return t.Rank() < u.MinTier.Rank() })
		if len(e.Tiers) > 0 {
			within = append(within, e)
		}
	}
	if CanSeat(within) == nil {
		return nil
	}
	reason := strings.TrimSpace(u.Reason)
	if reason != "" && !strings.HasSuffix(reason, ".") {
		reason += "."
	}
	return core.Errorf(core.CodeTooFewEngines,
		"The description allows engines of %s at tier %s or above, and those available to you cannot fill a row with two provider families (list_engines). %s",
		core.List(u.Families), u.MinTier, reason).WithDetail("families", u.Families).WithDetail("min_tier", u.MinTier)
}

// unfence is text's JSON: the body of its first ```json fence, or text.
func unfence(text string) string {
	text = strings.TrimSpace(text)
	if i := strings.Index(text, "```"); i >= 0 {
		body := strings.TrimPrefix(text[i+3:], "json")
		if j := strings.Index(body, "```"); j >= 0 {
			return strings.TrimSpace(body[:j])
		}
	}
	return text
}

// ParseProposal reads an engine's answer: one JSON object (alone, or in a
// ```json fence) holding "spec", a JSON object, and "reasons", an object of
// strings (optional). ok is false when there is no such spec.
func ParseProposal(text string) (spec json.RawMessage, reasons map[string]string, ok bool) {
	text = unfence(text)
	var out struct {
		Spec    json.RawMessage `json:"spec"`
		Reasons map[string]any  `json:"reasons"`
	}
	if json.Unmarshal([]byte(text), &out) != nil {
		return nil, nil, false
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(out.Spec, &obj) != nil || len(obj) == 0 {
		return nil, nil, false
	}
	reasons = map[string]string{}
	for k, v := range out.Reasons {
		if s, isText := v.(string); isText && strings.TrimSpace(s) != "" {
			reasons[k] = s
		}
	}
	return out.Spec, reasons, true
}

// check validates spec as validate_mode does and applies the repairs whose
// fix is certain (Repair), validating again when it made any. It returns
// the last check, the spec it checked and what was repaired.
func (pr *Proposer) check(ctx context.Context, p *access.Principal, spec json.RawMessage) (*modes.Checked, json.RawMessage, []string, error) {
	checked, err := pr.d.Validator.Validate(ctx, p, spec, "")
	if err != nil {
		return nil, nil, nil, err
	}
	fixedSpec, fixed := Repair(spec, checked.Refusals)
	if len(fixed) == 0 {
		return checked, spec, nil, nil
	}
	if checked, err = pr.d.Validator.Validate(ctx, p, fixedSpec, ""); err != nil {
		return nil, nil, nil, err
	}
	return checked, fixedSpec, fixed, nil
}

// Repair applies to spec the fixes refusals make certain: a price under
// the floor (price_below_floor) takes the recommended price it carries; a
// taken ticker (ticker_taken) the free ticker it suggests. It returns the
// repaired spec and a line per fix; none when no refusal has a certain fix
// (spec is then returned as it came).
func Repair(spec json.RawMessage, refusals []modes.Refusal) (json.RawMessage, []string) {
	var doc map[string]any
	if json.Unmarshal(spec, &doc) != nil {
		return spec, nil
	}
	var fixed []string
	for _, r := range refusals {
		switch {
		case r.Code == core.CodePriceBelowFloor && r.RecommendedUSD != nil && r.Path != "":
			if setPath(doc, r.Path, json.Number(core.Micros(*r.RecommendedUSD).String())) {
				fixed = append(fixed, fmt.Sprintf("%s raised to the recommended $%s", r.Path, core.Micros(*r.RecommendedUSD)))
			}
		case r.Code == core.CodeTickerTaken && r.SuggestedTicker != "" && r.Path == "ticker":
			if setPath(doc, "ticker", r.SuggestedTicker) {
				fixed = append(fixed, "ticker taken: "+r.SuggestedTicker+" instead")
			}
		}
	}
	if len(fixed) == 0 {
		return spec, nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return spec, nil
	}
	return out, fixed
}

// setPath sets the field a dotted refusal path names (objects only, no
// array index) in doc, when every object on the way is there.
func setPath(doc map[string]any, path string, v any) bool {
	parts := strings.Split(path, ".")
	cur := doc
	for _, k := range parts[:len(parts)-1] {
		next, ok := cur[k].(map[string]any)
		if !ok {
			return false
		}
		cur = next
	}
	last := parts[len(parts)-1]
	if strings.ContainsAny(last, "[]") {
		return false
	}
	if _, ok := cur[last]; !ok {
		return false
	}
	cur[last] = v
	return true
}

// refusalCodes names refusals' codes, sorted and once each.
func refusalCodes(rs []modes.Refusal) string {
	seen := map[string]bool{}
	var codes []string
	for _, r := range rs {
		if !seen[string(r.Code)] {
			seen[string(r.Code)] = true
			codes = append(codes, string(r.Code))
		}
	}
	sort.Strings(codes)
	return strings.Join(codes, ", ")
}
