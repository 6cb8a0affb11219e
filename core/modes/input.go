package modes

import (
	"bytes"
	"encoding/json"
	"slices"
	"sort"
	"strings"

	"github.com/conclavehq/conclave/core"
)

// Request is one spec to validate and what it is validated against.
type Request struct {
	// Spec is the spec as the author sent it (JSON).
	Spec []byte
	// Engines are the deployment's engines (core.Catalog.Engines).
	Engines map[string]*core.Engine
	// Available reports whether an engine can fill a seat now; nil means
	// every engine can.
	Available func(id string) bool
	Author    Author
	// TakenTickers are the full tickers (OWNR:MODE) already in use by
	// modes other than the one being validated.
	TakenTickers []string
	// Judging is the reference cost of the judging one test question buys
	// (JudgingCost of the deployment's bench judges): a mode an
	// organisation owns is floored to pay it (TestFloor). Zero counts no
	// judging.
	Judging core.Micros
}

// Author is who the spec is validated for.
type Author struct {
	// OrgID is the owning organisation; "" when the person has none.
	OrgID string `json:"org_id"`
	// OrgTicker is the organisation's four-letter ticker, the company part
	// of the mode's ticker.
	OrgTicker string `json:"org_ticker"`
	// System is set when an operator validates a system mode (one that
	// every organisation sees), which no organisation owns.
	System bool `json:"system"`
}

// Input is the document the policy reads as `input`: the spec exactly as
// sent, the engine catalogue, the vocabulary core accepts, the author, the
// taken tickers and the price floor. docs/modes.md describes it.
type Input struct {
	Spec         any           `json:"spec"`
	Engines      []EngineFacts `json:"engines"`
	Vocabulary   Vocabulary    `json:"vocabulary"`
	Author       Author        `json:"author"`
	TakenTickers []string      `json:"taken_tickers"`
	// Floor is nil when the spec does not decode, so that no floor can be
	// worked out; price_below_floor is then not checked (the spec already
	// has refusals).
	Floor *FloorFacts `json:"floor"`
}

// EngineFacts is what the policy knows of an engine.
type EngineFacts struct {
	ID        string    `json:"id"`
	Family    string    `json:"family"`
	MaxTier   core.Tier `json:"max_tier"`
	Available bool      `json:"available"`
}

// Vocabulary is the set of names core accepts, passed to the policy so
// that the policy and core.CheckMode never disagree on them.
type Vocabulary struct {
	Tiers      []core.Tier `json:"tiers"` // lowest first
	StaffRoles []string    `json:"staff_roles"`
	Critiques  []string    `json:"critiques"`
	Depths     []string    `json:"depths"`
	MaxRounds  int         `json:"max_rounds"`
	// MaxSeats is the most seats a row may hold (MaxSeats); Go refuses a
	// longer row before the policy runs.
	MaxSeats int `json:"max_seats"`
}

// FloorFacts is the price floor of the spec (see Floor and TestFloor).
type FloorFacts struct {
	FloorUSD       core.Dollars `json:"floor_usd"`
	RecommendedUSD core.Dollars `json:"recommended_usd"`
}

// NewInput builds the policy input for req. A spec that is not a JSON
// object is answered here, with one invalid_value refusal, because no rule
// can read it.
func NewInput(req Request) (*Input, *Refusal) {
	var raw any
	dec := json.NewDecoder(bytes.NewReader(req.Spec))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil || dec.More() {
		return nil, &Refusal{Code: core.CodeInvalidValue, Message: "The spec is not one JSON object.", Path: ""}
	}
	if _, ok := raw.(map[string]any); !ok {
		return nil, &Refusal{Code: core.CodeInvalidValue, Message: "The spec is not a JSON object.", Path: ""}
	}
	in := &Input{
		Spec:         raw,
		Engines:      engineFacts(req),
		Vocabulary:   vocabulary(),
		Author:       req.Author,
		TakenTickers: slices.Sorted(slices.Values(req.TakenTickers)),
	}
	if in.TakenTickers == nil {
		in.TakenTickers = []string{}
	}
	if s, err := Decode(req.Spec); err == nil {
		floor, recommended := floors(s, req)
		in.Floor = &FloorFacts{FloorUSD: core.Dollars(floor), RecommendedUSD: core.Dollars(recommended)}
	}
	return in, nil
}

func (req Request) available(id string) bool {
	return req.Available == nil || req.Available(id)
}

func engineFacts(req Request) []EngineFacts {
	out := make([]EngineFacts, 0, len(req.Engines))
	for id, e := range req.Engines {
		out = append(out, EngineFacts{ID: id, Family: strings.ToLower(e.Family), MaxTier: e.MaxTier, Available: req.available(id)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func vocabulary() Vocabulary {
	depths := make([]string, 0, len(core.Depths)+1)
	for _, d := range core.Depths {
		depths = append(depths, string(d))
	}
	depths = append(depths, "hard") // read as deep (core.ParseDepth)
	return Vocabulary{
		Tiers:      slices.Clone(core.Tiers),
		StaffRoles: slices.Clone(core.StaffRoles),
		Critiques:  slices.Clone(core.Critiques),
		Depths:     depths,
		MaxRounds:  core.MaxRounds,
		MaxSeats:   MaxSeats,
	}
}
