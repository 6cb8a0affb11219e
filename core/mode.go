package core

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"time"
)

// Tier is the engine tier that fills a panel's seats.
type Tier string

// Tiers, lowest first.
const (
	TierExperience Tier = "experience" // express
	TierPlus       Tier = "plus"       // foundation; the default
	TierPro        Tier = "pro"        // frontier
)

// DefaultTier is the tier of a call that names none.
const DefaultTier = TierPlus

// Tiers lists every tier, lowest first.
var Tiers = []Tier{TierExperience, TierPlus, TierPro}

// Rank orders tiers: experience 1, plus 2, pro 3; 0 for an unknown tier.
func (t Tier) Rank() int {
	switch t {
	case TierExperience:
		return 1
	case TierPlus:
		return 2
	case TierPro:
		return 3
	}
	return 0
}

// Valid reports whether t is one of the three tiers.
func (t Tier) Valid() bool { return t.Rank() > 0 }

// Depth is how hard a question is judged to be; it selects the surcharge.
type Depth string

// Depths. The API emits "deep"; "hard" is accepted as the same band.
const (
	DepthLight  Depth = "light"
	DepthMedium Depth = "medium"
	DepthDeep   Depth = "deep"
)

// Depths lists every depth, lightest first.
var Depths = []Depth{DepthLight, DepthMedium, DepthDeep}

// ParseDepth reads a depth or bucket name; "hard" means DepthDeep.
func ParseDepth(s string) (Depth, bool) {
	switch s {
	case "light":
		return DepthLight, true
	case "medium":
		return DepthMedium, true
	case "deep", "hard":
		return DepthDeep, true
	}
	return "", false
}

// Engine is a model reachable through one adapter.
type Engine struct {
	ID     string `json:"id"`     // "anthropic/claude-sonnet-4", "sim/atlas"
	Family string `json:"family"` // provider family shown on listings: "openai", "anthropic", …
	// MaxTier is the highest tier whose seats this engine may fill.
	MaxTier Tier `json:"max_tier"`
	// Prices per million tokens at the source.
	InputPerMTok  Micros `json:"input_per_mtok"`
	OutputPerMTok Micros `json:"output_per_mtok"`
	Adapter       string `json:"adapter"`  // "openai", "anthropic", "gemini", "bedrock"
	Endpoint      string `json:"endpoint"` // base URL the egress layer sends to
	// Credential names the credential the egress layer injects (an
	// environment variable, for instance); never the secret itself.
	Credential string `json:"credential,omitempty"`
	// Model is the provider's identifier for the model; defaults to the part
	// of ID after the first "/".
	Model string `json:"model"`
	// Carrier runs the adapter: CarrierNative (compiled in, the default),
	// CarrierWasm or CarrierGoPlugin.
	Carrier string `json:"carrier"`
	// Plugin names the plugin-manifest entry that provides the adapter when
	// Carrier is not native.
	Plugin string `json:"plugin,omitempty"`
	// Timeout bounds one attempt of one call; 0 means the egress default.
	Timeout time.Duration `json:"timeout,omitempty"`
	// AWS settings for engines whose adapter signs with AWS SigV4: the
	// region, and the role the service assumes per request (with its
	// external id). STSEndpoint overrides the STS endpoint (for tests and
	// the simulated provider).
	AWSRegion     string `json:"aws_region,omitempty"`
	AWSRoleARN    string `json:"aws_role_arn,omitempty"`
	AWSExternalID string `json:"aws_external_id,omitempty"`
	STSEndpoint   string `json:"sts_endpoint,omitempty"`
}

// Carriers of an adapter.
const (
	CarrierNative   = "native"
	CarrierWasm     = "wasm"
	CarrierGoPlugin = "goplugin"
)

// Seat is one place at a panel: a primary engine and its backup.
type Seat struct {
	Engine string `json:"engine"`
	Backup string `json:"backup,omitempty"`
}

// Staff is an orchestration role (judge, synthesis, grounding, classifier).
type Staff struct {
	Engine string `json:"engine"`
	Backup string `json:"backup,omitempty"`
}

// Critique policies.
const (
	CritiqueAlways = "always" // critique runs on every question
	CritiqueDeep   = "deep"   // critique runs only on deep questions
	CritiqueNever  = "never"
)

// Critiques lists every critique policy.
var Critiques = []string{CritiqueAlways, CritiqueDeep, CritiqueNever}

// StaffRoles lists the orchestration roles a mode may staff.
var StaffRoles = []string{"judge", "synthesis", "grounding", "classifier"}

// MaxRounds is the most rounds a mode may run.
const MaxRounds = 5

// Deliberation is the part of a mode that decides what runs. Its canonical
// JSON is what ConfigHash hashes.
type Deliberation struct {
	// Seats by tier: the row of seats convened for a call at that tier.
	Seats     map[Tier][]Seat  `json:"seats"`
	Staff     map[string]Staff `json:"staff"`
	Critique  string           `json:"critique"`
	MaxRounds int              `json:"max_rounds"`
	// Quorum is how many seats must answer before the straggler deadline may
	// close a round; 0 means all of them.
	Quorum            int           `json:"quorum"`
	StragglerDeadline time.Duration `json:"straggler_deadline"`
	// ExpressThreshold: a question scoring under it takes the express lane
	// (one engine alone); 0 turns the express lane off.
	ExpressThreshold float64 `json:"express_threshold"`
	// CostCeiling stops critique rounds whose projected cost would pass it.
	CostCeiling Micros `json:"cost_ceiling"`
	// HedgePercentile (0–100) is the percentile of an engine's recent
	// answer latencies past which a primary on it is hedged, when that is
	// longer than the hedge delay; 0 means the engine's default (50).
	HedgePercentile float64 `json:"hedge_percentile,omitempty"`
}

// Rounds is the most rounds a panel call classified at depth may run: the
// mode's MaxRounds (at least one) when its critique policy runs critique
// at that depth — always, or deep on a deep question — else one. The
// deliberation engine plans a call's rounds with it, and a test run's
// question is priced with it; this is the one rule.
func (d Deliberation) Rounds(depth Depth) int {
	if d.Critique == CritiqueAlways || d.Critique == CritiqueDeep && depth == DepthDeep {
		return max(1, d.MaxRounds)
	}
	return 1
}

// Pricing is what a mode charges on top of tokens.
type Pricing struct {
	// SurchargeByDepth is what most calls are billed; preferred when set.
	SurchargeByDepth map[Depth]Micros
	// Surcharge is the flat fallback and ceiling; nil when unset.
	Surcharge *Micros
	// Express is the surcharge of an express-lane call; nil when unset.
	Express *Micros
}

// Price is the mode's price for the call ceiling: its flat surcharge, or the
// highest of its per-depth surcharges.
func (p Pricing) Price() Micros {
	var max Micros
	if p.Surcharge != nil {
		max = *p.Surcharge
	}
	for _, v := range p.SurchargeByDepth {
		if v > max {
			max = v
		}
	}
	return max
}

// SurchargeFor is the surcharge of a call classified at depth d, answered
// on the express lane or not: the express price on the express lane when
// the mode has one, else the price for the depth (or the flat surcharge).
// Chat bills it and estimate quotes it; this is the one surcharge rule.
func (p Pricing) SurchargeFor(d Depth, express bool) Micros {
	if express && p.Express != nil {
		return *p.Express
	}
	v, _ := p.DepthPrice(d)
	return v
}

// DepthPrice is the surcharge of a panel call classified at depth d — the
// price for the depth, else the flat surcharge — and whether the mode has
// either. A benchmark run prices its questions by band with it (a mode
// with neither has no API price for the band); SurchargeFor bills a call
// with it.
func (p Pricing) DepthPrice(d Depth) (Micros, bool) {
	if v, ok := p.SurchargeByDepth[d]; ok {
		return v, true
	}
	if p.Surcharge != nil {
		return *p.Surcharge, true
	}
	return 0, false
}

// Mode is a configured panel that callers name in `model`.
type Mode struct {
	Key         string // "standard"
	ID          string // the slug callers use: "conclave-standard"
	Ticker      string // "CNCL:STND"
	Name        string
	Description string
	UseWhen     string
	PriceTier   string
	// OwnerOrg is the organisation that owns the mode; "" for system modes.
	OwnerOrg string
	// Plans limits the mode to organisations on these plans; empty means every
	// organisation. Policy reads it; see policies/authz.rego.
	Plans                []string
	IncludesDeliberation bool
	Deliberation         Deliberation
	Pricing              Pricing
	// Version is the released version of an organisation's mode that
	// runs; 0 for a configured mode. It is not part of the mode_config_hash:
	// two versions that run the same panel share it.
	Version int `json:",omitempty"`
	// Reach says how the caller reached an organisation's mode, for the
	// policy to decide whether it may (nil for a configured mode). The
	// mode source sets it on the copy it returns to one caller.
	Reach *ModeReach `json:"-"`
}

// ModeReach is how a caller reached one version of an organisation's mode:
// the facts the policy's marketplace rules read (policies/authz.rego).
type ModeReach struct {
	// Suffix is the suffix the caller named: "" (the mode as served),
	// "lab" (the latest release) or "v3" (version 3).
	Suffix string
	// Listing is the mode's listing state.
	Listing ListingState
	// Published: the version is the one the approved listing serves every
	// organisation.
	Published bool
	// Invited: the caller's organisation is invited to the mode's lab
	// versions (every version but the published one).
	Invited bool
}

// ConfigHash is a short hash of the canonical JSON of the mode's deliberation
// configuration and of the engines it can convene: a change means the panel
// itself changed.
func (m *Mode) ConfigHash(engines map[string]*Engine) string {
	type hashed struct {
		Deliberation Deliberation `json:"deliberation"`
		Engines      []*Engine    `json:"engines"`
	}
	h := hashed{Deliberation: m.Deliberation}
	for _, id := range m.EngineIDs() {
		if e, ok := engines[id]; ok {
			h.Engines = append(h.Engines, e)
		}
	}
	b, err := json.Marshal(h) // map keys are sorted, so this is canonical
	if err != nil {
		panic(fmt.Sprintf("hashing mode %q: %v", m.ID, err))
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}

// EngineIDs lists every engine the mode may convene (seats, backups, staff),
// sorted and without repeats.
func (m *Mode) EngineIDs() []string {
	set := map[string]bool{}
	for _, row := range m.Deliberation.Seats {
		for _, s := range row {
			set[s.Engine] = true
			if s.Backup != "" {
				set[s.Backup] = true
			}
		}
	}
	for _, s := range m.Deliberation.Staff {
		set[s.Engine] = true
		if s.Backup != "" {
			set[s.Backup] = true
		}
	}
	out := make([]string, 0, len(set))
	for id := range set {
		if id != "" {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}
