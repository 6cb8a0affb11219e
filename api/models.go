package api

import (
	"net/http"
	"net/url"

	"github.com/go-chi/chi/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/calls"
)

// ownedBy is the constant owner of every listed mode.
const ownedBy = "conclave"

type modelList struct {
	Object string       `json:"object"`
	Data   []modelEntry `json:"data"`
}

type modelEntry struct {
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

func (h *handler) modelEntry(v *calls.ModeView) modelEntry {
	m, fam := v.Mode, v.Families
	e := modelEntry{
		ID: m.ID, Object: "model", Created: h.started.Unix(), OwnedBy: ownedBy,
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

// listModels answers GET /v1/models: the modes this key may call.
func (h *handler) listModels(w http.ResponseWriter, r *http.Request) {
	modes, err := h.calls.ListModes(r.Context(), principalOf(r.Context()))
	if err != nil {
		writeError(w, r, err)
		return
	}
	out := modelList{Object: "list", Data: []modelEntry{}}
	for _, m := range modes {
		out.Data = append(out.Data, h.modelEntry(m))
	}
	writeJSON(w, http.StatusOK, out)
}

// getModel answers GET /v1/models/{model} (slug or ticker). The router
// matches on the escaped path, so a ticker a client percent-encoded
// (CNCL%3ASTND) is unescaped here; what does not unescape names no mode.
func (h *handler) getModel(w http.ResponseWriter, r *http.Request) {
	id, err := url.PathUnescape(chi.URLParam(r, "model"))
	if err != nil {
		writeError(w, r, core.ModelNotFound())
		return
	}
	m, err := h.calls.ResolveMode(r.Context(), principalOf(r.Context()), id, core.ActionModelsRead, "")
	if err != nil {
		writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, h.modelEntry(h.calls.View(m)))
}
