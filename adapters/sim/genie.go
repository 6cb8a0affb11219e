package sim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/genie"
)

// The mode assistant's proposals (genie_propose_mode). A prompt whose
// system part starts with genie.ProposeLead carries INPUT, the engines the
// caller may seat and its tier, and the caller's description as the user
// message; the simulator answers the JSON a real engine is asked for — a
// spec and a reason per choice — built from INPUT and the description's
// words, so that core/genie parses and validates it for real:
//
//   - "cheap", "budget" or "fast" ask for the experience tier, the cheapest
//     engines, no critique and one round; "frontier", "pro" or "best" for
//     the pro tier (when INPUT's tier allows it) and the dearest engines;
//     "thorough" or "careful" for critique on every question, three rounds;
//     otherwise plus, critique on deep questions, two rounds;
//   - "N seats" (2 to 6) sets the row's size, 3 by default;
//   - provider families by their short names (openai, anthropic, google,
//     amazon, mistral, meta — a family's name after "sim-"): named after
//     "only" or "just" they are the families allowed; named after "no",
//     "not", "without", "except", "excluding" or "avoid" they are left
//     out; "pro tier only" (or "only pro tier", any tier) is the least tier
//     accepted. When the engines left cannot seat two families in a row,
//     the reply is {"unable": …} with the families and tier it read;
//   - "$0.25 a question" or "5 cents per question" is the budget: every
//     surcharge is set to it (under the floor, the proposer's repair).
//
// The directive [[sim: propose=…]] forces a faulty answer: prose (no JSON:
// no_proposal), under_floor (every price $0.01: the floor repair),
// broken (a critique no rule accepts, on every ask: no_proposal after the
// second), broken_once (the same, corrected when asked again with the
// refusals) or unfounded (the reply that the description cannot be met,
// naming every family, until told the engines can meet it). An outage is
// the usual error= directive.

// proposeModes are the values of the propose directive.
var proposeModes = []string{"prose", "under_floor", "broken", "broken_once", "unfounded"}

// seatsRe finds "N seats" in a description.
var seatsRe = regexp.MustCompile(`\b([2-6])\s+seats?\b`)

// proposeReply answers a proposal prompt.
func proposeReply(system, description, mode string) string {
	if mode == "prose" {
		return "A good mode for this would seat three engines from different families and charge a modest surcharge."
	}
	var in genie.ProposalInput
	if _, doc, ok := strings.Cut(system, "\nINPUT:\n"); !ok || json.Unmarshal([]byte(doc), &in) != nil {
		return "I could not read the engines I may seat."
	}
	if familiesOf(in.Engines) < 2 {
		return "There are too few engines to seat a panel."
	}
	lim := limitsOf(in.Engines, description)
	if mode == "unfounded" && in.Unfounded == "" {
		lim.Families = familyNames(in.Engines)
		return unableReply(lim, "I doubt these engines can seat a panel.")
	}
	allowed := limits(lim).within(in.Engines)
	if !seatsTwoFamilies(allowed) {
		return unableReply(lim, "The families the description allows cannot seat two families in a row at that tier.")
	}
	in.Engines = allowed
	spec, reasons := proposeSpec(&in, description, lim.MinTier)
	if mode == "under_floor" {
		cent := core.Dollars(10_000)
		spec.APICommercial.SurchargeByDepth = map[string]core.Dollars{"light": cent, "medium": cent, "deep": cent}
		spec.APICommercial.SurchargeUSD = &cent
		reasons["price"] = "One cent a question, the least a mode may charge."
	}
	doc, _ := json.Marshal(spec)
	if mode == "broken" || mode == "broken_once" && len(in.Refusals) == 0 {
		var m map[string]any
		_ = json.Unmarshal(doc, &m)
		m["critique"] = "sometimes"
		doc, _ = json.Marshal(m)
	}
	out, _ := json.Marshal(struct {
		Spec    json.RawMessage   `json:"spec"`
		Reasons map[string]string `json:"reasons"`
	}{doc, reasons})
	return string(out)
}

// unableReply is the reply that the description cannot be met.
func unableReply(u genie.Unable, reason string) string {
	u.Reason = reason
	out, _ := json.Marshal(struct {
		Unable genie.Unable `json:"unable"`
	}{u})
	return string(out)
}

// Words of a description's limits on families.
var (
	onlyWords = map[string]bool{"only": true, "just": true}
	notWords  = map[string]bool{"no": true, "not": true, "without": true, "except": true, "excluding": true, "avoid": true}
	// linkWords continue a list of families after only or no.
	linkWords = map[string]bool{"and": true, "or": true, "nor": true, "from": true, "engines": true, "models": true,
		"the": true, "of": true}
	tierOnlyRe = regexp.MustCompile(`\b(experience|plus|pro)[- ]tier only\b|\bonly (experience|plus|pro)[- ]tier\b`)
	dollarsRe  = regexp.MustCompile(`\$([0-9]+(?:\.[0-9]+)?) (?:a|per) question`)
	centsRe    = regexp.MustCompile(`\b([0-9]+) cents? (?:a|per) question`)
)

// limits are a description's limits on families and tier, as an engine
// reads them; within filters engines to them.
type limits genie.Unable

func (l limits) within(engines []genie.ProposalEngine) []genie.ProposalEngine {
	var out []genie.ProposalEngine
	for _, e := range engines {
		if !contains(l.Families, e.Family) {
			continue
		}
		var tiers []core.Tier
		for _, t := range e.Tiers {
			if t.Rank() >= l.MinTier.Rank() {
				tiers = append(tiers, t)
			}
		}
		if len(tiers) > 0 {
			e.Tiers = tiers
			out = append(out, e)
		}
	}
	return out
}

// limitsOf reads description's limits against engines' families: every
// family unless "only" names some, less those named after a negation; the
// least tier experience unless "X tier only" says otherwise.
func limitsOf(engines []genie.ProposalEngine, description string) genie.Unable {
	short := map[string]string{}
	for _, f := range familyNames(engines) {
		short[strings.TrimPrefix(f, "sim-")] = f
	}
	only, without := map[string]bool{}, map[string]bool{}
	var list map[string]bool // the list a family word joins; nil outside one
	for _, w := range wordsOf(strings.ToLower(description)) {
		switch f, isFamily := short[w]; {
		case onlyWords[w]:
			list = only
		case notWords[w]:
			list = without
		case isFamily && list != nil:
			list[f] = true
		case !linkWords[w]:
			list = nil
		}
	}
	u := genie.Unable{MinTier: core.TierExperience}
	for _, f := range familyNames(engines) {
		if (len(only) == 0 || only[f]) && !without[f] {
			u.Families = append(u.Families, f)
		}
	}
	if m := tierOnlyRe.FindStringSubmatch(strings.ToLower(description)); m != nil {
		u.MinTier = core.Tier(m[1] + m[2])
	}
	return u
}

// familyNames are engines' families, sorted, once each.
func familyNames(engines []genie.ProposalEngine) []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range engines {
		if !seen[e.Family] {
			seen[e.Family] = true
			out = append(out, e.Family)
		}
	}
	sort.Strings(out)
	return out
}

// seatsTwoFamilies reports whether engines seat two families at one tier.
func seatsTwoFamilies(engines []genie.ProposalEngine) bool {
	for _, t := range core.Tiers {
		if familiesOf(eligibleAt(engines, t)) >= 2 {
			return true
		}
	}
	return false
}

// budgetOf is the price a question the description names, if any.
func budgetOf(description string) (core.Dollars, bool) {
	low := strings.ToLower(description)
	if m := dollarsRe.FindStringSubmatch(low); m != nil {
		if v, err := core.ParseUSD(m[1]); err == nil {
			return core.Dollars(v), true
		}
	}
	if m := centsRe.FindStringSubmatch(low); m != nil {
		if v, err := core.ParseUSD("0." + fmt.Sprintf("%02s", m[1])); err == nil && len(m[1]) <= 2 {
			return core.Dollars(v), true
		}
	}
	return 0, false
}

// proposeSpec designs the spec the description's words ask for, from the
// engines of in, at minTier or above.
func proposeSpec(in *genie.ProposalInput, description string, minTier core.Tier) (*modesSpec, map[string]string) {
	low := strings.ToLower(description)
	has := func(words ...string) bool {
		for _, w := range words {
			if regexp.MustCompile(`\b` + w + `\b`).MatchString(low) {
				return true
			}
		}
		return false
	}
	cheap, frontier := has("cheap", "budget", "fast"), has("frontier", "pro", "best")
	tier, row := seatRow(in, low, cheap, frontier, minTier)
	seats := make([]seatSpec, len(row))
	for i, e := range row {
		seats[i] = seatSpec{Engine: e.ID, Backup: row[(i+1)%len(row)].ID}
	}
	critique, rounds, ceiling := "deep", 2, core.Dollars(1_500_000)
	switch {
	case cheap:
		critique, rounds, ceiling = "never", 1, core.Dollars(500_000)
	case has("thorough", "careful"):
		critique, rounds, ceiling = "always", 3, core.Dollars(5_000_000)
	}
	scale := map[core.Tier]core.Dollars{core.TierExperience: 1, core.TierPlus: 2, core.TierPro: 6}[tier]
	light, medium, deep := 50_000*scale, 100_000*scale, 150_000*scale
	spec := &modesSpec{
		Name: nameOf(description), Ticker: tickerOf(description), UseWhen: useWhenOf(description),
		Description: fmt.Sprintf("%d seats from %d provider families at the %s tier.", len(seats), familiesOf(row), tier),
		SeatsByTier: map[core.Tier][]seatSpec{tier: seats},
		Staff: map[string]seatSpec{
			"judge":      {Engine: seats[0].Engine, Backup: seats[0].Backup},
			"synthesis":  {Engine: seats[1].Engine, Backup: seats[1].Backup},
			"classifier": {Engine: cheapest(in.Engines).ID},
		},
		Critique: critique, MaxRounds: rounds, Quorum: 2, StragglerDeadlineS: 20, CostCeilingUSD: ceiling,
		APICommercial: &commercialSpec{PriceTier: "standard",
			SurchargeByDepth: map[string]core.Dollars{"light": light, "medium": medium, "deep": deep}, SurchargeUSD: &deep},
	}
	priceReason := "A surcharge that grows with the question's depth."
	if budget, ok := budgetOf(description); ok {
		spec.APICommercial.SurchargeByDepth = map[string]core.Dollars{"light": budget, "medium": budget, "deep": budget}
		spec.APICommercial.SurchargeUSD = &budget
		priceReason = "The description's budget a question, at every depth."
	}
	reasons := map[string]string{
		"seats": fmt.Sprintf("%d seats at the %s tier from %d provider families, so that their answers disagree usefully.",
			len(seats), tier, familiesOf(row)),
		"staff":    "The first two seats judge and synthesize, each backed by the other; the cheapest engine classifies.",
		"rounds":   fmt.Sprintf("At most %d rounds.", rounds),
		"critique": "Critique " + critique + ".",
		"quorum":   "Two answers may close a round once the straggler deadline passes.",
		"price":    priceReason,
	}
	return spec, reasons
}

// seatRow picks the row's tier and engines: experience when cheap, pro
// when frontier (within in's tier, and not under minTier), stepping down
// until two families can fill a row there; the cheapest engines first
// when cheap, else the dearest; "N seats" of them, 3 by default.
func seatRow(in *genie.ProposalInput, low string, cheap, frontier bool, minTier core.Tier) (core.Tier, []genie.ProposalEngine) {
	tier := core.TierPlus
	switch {
	case cheap:
		tier = core.TierExperience
	case frontier:
		tier = core.TierPro
	}
	if in.Tier.Valid() && tier.Rank() > in.Tier.Rank() {
		tier = in.Tier
	}
	if tier.Rank() < minTier.Rank() {
		tier = minTier
	}
	var eligible []genie.ProposalEngine
	for ; tier.Valid(); tier = core.Tiers[max(tier.Rank()-2, 0)] {
		eligible = eligibleAt(in.Engines, tier)
		if familiesOf(eligible) >= 2 || tier.Rank() <= minTier.Rank() {
			break
		}
	}
	price := func(e genie.ProposalEngine) core.Dollars { return e.InputPerMTok + e.OutputPerMTok }
	sort.SliceStable(eligible, func(i, j int) bool {
		if cheap {
			return price(eligible[i]) < price(eligible[j])
		}
		return price(eligible[i]) > price(eligible[j])
	})
	n := 3
	if m := seatsRe.FindStringSubmatch(low); m != nil {
		n = int(m[1][0] - '0')
	}
	row := pickRow(eligible, max(min(n, len(eligible)), 2))
	for len(row) < 2 { // one engine reaches the tier: seat it twice and let validation refuse it
		row = append(row, in.Engines[len(row)%len(in.Engines)])
	}
	return tier, row
}

// modesSpec, seatSpec and commercialSpec are the fields of a mode spec the
// simulator writes, as docs/modes.md names them.
type modesSpec struct {
	Name               string                   `json:"name"`
	Ticker             string                   `json:"ticker"`
	Description        string                   `json:"description"`
	UseWhen            string                   `json:"use_when"`
	SeatsByTier        map[core.Tier][]seatSpec `json:"seats_by_tier"`
	Staff              map[string]seatSpec      `json:"staff"`
	Critique           string                   `json:"critique"`
	MaxRounds          int                      `json:"max_rounds"`
	Quorum             int                      `json:"quorum"`
	StragglerDeadlineS float64                  `json:"straggler_deadline_s"`
	CostCeilingUSD     core.Dollars             `json:"cost_ceiling_usd"`
	APICommercial      *commercialSpec          `json:"api_commercial"`
}

type seatSpec struct {
	Engine string `json:"engine"`
	Backup string `json:"backup,omitempty"`
}

type commercialSpec struct {
	PriceTier        string                  `json:"price_tier"`
	SurchargeByDepth map[string]core.Dollars `json:"q_surcharge_by_depth"`
	SurchargeUSD     *core.Dollars           `json:"q_surcharge_usd"`
}

// eligibleAt are the engines that can fill a seat at tier.
func eligibleAt(engines []genie.ProposalEngine, tier core.Tier) []genie.ProposalEngine {
	var out []genie.ProposalEngine
	for _, e := range engines {
		for _, t := range e.Tiers {
			if t == tier {
				out = append(out, e)
				break
			}
		}
	}
	return out
}

// pickRow takes n engines in order: first one of each family, then the
// rest.
func pickRow(engines []genie.ProposalEngine, n int) []genie.ProposalEngine {
	var row []genie.ProposalEngine
	taken, families := map[string]bool{}, map[string]bool{}
	for _, e := range engines {
		if len(row) < n && !families[e.Family] {
			row, taken[e.ID], families[e.Family] = append(row, e), true, true
		}
	}
	for _, e := range engines {
		if len(row) < n && !taken[e.ID] {
			row, taken[e.ID] = append(row, e), true
		}
	}
	return row
}

func familiesOf(engines []genie.ProposalEngine) int { return len(familyNames(engines)) }

func cheapest(engines []genie.ProposalEngine) genie.ProposalEngine {
	best := engines[0]
	for _, e := range engines[1:] {
		if e.InputPerMTok+e.OutputPerMTok < best.InputPerMTok+best.OutputPerMTok {
			best = e
		}
	}
	return best
}

// wordsOf are the description's words of letters and digits.
func wordsOf(description string) []string {
	return strings.FieldsFunc(description, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
}

// nameOf is a name of the description's first words (3 to 60 characters).
func nameOf(description string) string {
	w := wordsOf(description)
	name := strings.Join(w[:min(len(w), 4)], " ")
	if len(name) > 60 {
		name = strings.TrimSpace(name[:60])
	}
	if len(name) < 3 {
		return "Proposed Panel"
	}
	return strings.ToUpper(name[:1]) + name[1:]
}

// tickerOf is four letters from the description's words: their initials,
// then letters of the first word, then P.
func tickerOf(description string) string {
	var t []byte
	var letters []byte
	for _, w := range wordsOf(strings.ToUpper(description)) {
		for i := 0; i < len(w); i++ {
			if w[i] >= 'A' && w[i] <= 'Z' {
				if i == 0 && len(t) < 4 {
					t = append(t, w[i])
				} else {
					letters = append(letters, w[i])
				}
			}
		}
	}
	for _, c := range letters {
		if len(t) == 4 {
			break
		}
		t = append(t, c)
	}
	for len(t) < 4 {
		t = append(t, 'P')
	}
	return string(t)
}

// useWhenOf is the description as a use_when sentence: no < > or control
// characters, at most 400 bytes.
func useWhenOf(description string) string {
	s := strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, description)
	s = strings.TrimSpace(s)
	if len(s) > 400 {
		s = strings.ToValidUTF8(s[:400], "")
	}
	if s == "" {
		return "When a question is worth several opinions."
	}
	return s
}
