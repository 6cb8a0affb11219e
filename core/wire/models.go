package wire

import (
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/calls"
)

// ownedBy is the constant owner of every listed mode.
const ownedBy = "conclave"

// ModelList is the answer to GET /v1/models and the list_modes tool's
// result.
type ModelList struct {
	Object string       `json:"object"`
	Data   []ModelEntry `json:"data"`
}

// ModelEntry is one listed mode.
type ModelEntry struct {
	ID       string     `json:"id"`
	Object   string     `json:"object"`
	Created  int64      `json:"created"`
	OwnedBy  string     `json:"owned_by"`
	Conclave modelBlock `json:"conclave"`
}

type modelBlock struct {
	ModeKey              string       `json:"mode_key"`
	Name                 string       `json:"name"`
	Ticker               *string      `json:"ticker"`
	Description          *string      `json:"description"`
	UseWhen              string       `json:"use_when"`
	PriceTier            *string      `json:"price_tier"`
	ModeConfigHash       string       `json:"mode_config_hash"`
	Pricing              modelPricing `json:"pricing"`
	Providers            []string     `json:"providers"`
	ProviderFamilies     []string     `json:"provider_families"`
	IncludesDeliberation bool         `json:"includes_deliberation"`
	Tiers                []core.Tier  `json:"tiers"`
}

type modelPricing struct {
	QSurchargeUSD        *core.Dollars               `json:"q_surcharge_usd"`
	QSurchargeByDepth    map[core.Depth]core.Dollars `json:"q_surcharge_by_depth"`
	QSurchargeExpressUSD *core.Dollars               `json:"q_surcharge_express_usd"`
}

// ModelEntryOf is a mode as listed; created is the listing's creation time
// (Unix seconds).
func ModelEntryOf(v *calls.ModeView, created int64) ModelEntry {
	m, fam := v.Mode, v.Families
	e := ModelEntry{
		ID: m.ID, Object: "model", Created: created, OwnedBy: ownedBy,
		Conclave: modelBlock{
			ModeKey: m.Key, Name: m.Name, Ticker: optional(m.Ticker), Description: optional(m.Description),
			UseWhen: m.UseWhen, PriceTier: optional(m.PriceTier), ModeConfigHash: v.ConfigHash,
			Providers: fam, ProviderFamilies: fam, IncludesDeliberation: m.IncludesDeliberation,
			Tiers: core.ModeForPolicy(m).Tiers,
		},
	}
	p := m.Pricing
	if p.Surcharge != nil {
		v := core.Dollars(*p.Surcharge)
		e.Conclave.Pricing.QSurchargeUSD = &v
	}
	if p.Express != nil {
		v := core.Dollars(*p.Express)
		e.Conclave.Pricing.QSurchargeExpressUSD = &v
	}
	if len(p.SurchargeByDepth) > 0 {
		e.Conclave.Pricing.QSurchargeByDepth = map[core.Depth]core.Dollars{}
		for d, v := range p.SurchargeByDepth {
			e.Conclave.Pricing.QSurchargeByDepth[d] = core.Dollars(v)
		}
	}
	return e
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// ModelListOf lists views; created is as for ModelEntryOf.
func ModelListOf(views []*calls.ModeView, created int64) *ModelList {
	out := &ModelList{Object: "list", Data: []ModelEntry{}}
	for _, v := range views {
		out.Data = append(out.Data, ModelEntryOf(v, created))
	}
	return out
}
