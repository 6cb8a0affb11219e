package api

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/conclavehq/conclave/core"
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

func (h *handler) modelEntry(m *core.Mode) modelEntry {
	fam := h.catalog.Families(m)
	e := modelEntry{
		ID: m.ID, Object: "model", Created: h.started.Unix(), OwnedBy: ownedBy,
		Conclave: modelBlock{
			ModeKey: m.Key, Name: m.Name, Ticker: optional(m.Ticker), Description: optional(m.Description),
			UseWhen: m.UseWhen, PriceTier: optional(m.PriceTier), ModeConfigHash: h.catalog.ConfigHash(m),
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
	out := modelList{Object: "list", Data: []modelEntry{}}
	for _, m := range h.catalog.Modes() {
		d, err := h.decide(r.Context(), core.ActionModelsRead, m)
		if err != nil {
			writeError(w, r, policyFailure(err))
			return
		}
		if d.Allow {
			out.Data = append(out.Data, h.modelEntry(m))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// getModel answers GET /v1/models/{model} (slug or ticker).
func (h *handler) getModel(w http.ResponseWriter, r *http.Request) {
	m, ok := h.resolveMode(w, r, chi.URLParam(r, "model"), core.ActionModelsRead)
	if !ok {
		return
	}
	writeJSON(w, http.StatusOK, h.modelEntry(m))
}

// resolveMode finds the mode a request names (slug or ticker) and checks the
// caller may use it for action: 404 model_not_found for an unknown mode, the
// policy's refusal otherwise. It returns false when it has answered.
func (h *handler) resolveMode(w http.ResponseWriter, r *http.Request, id, action string) (*core.Mode, bool) {
	return h.resolveModeTier(w, r, id, action, "")
}

// resolveModeTier is resolveMode for a request that asks for a tier, which
// the policy also checks.
func (h *handler) resolveModeTier(w http.ResponseWriter, r *http.Request, id, action string, tier core.Tier) (*core.Mode, bool) {
	m, ok := h.catalog.Resolve(id)
	if !ok {
		writeError(w, r, core.Errorf(core.CodeModelNotFound, "The model %q does not exist or is not available to your organisation. GET /v1/models lists the modes you can call.", id).WithParam("model"))
		return nil, false
	}
	d, err := h.decideTier(r.Context(), action, m, tier)
	if err != nil {
		writeError(w, r, policyFailure(err))
		return nil, false
	}
	if !d.Allow {
		e := &core.Error{Code: d.Code, Message: d.Message}
		if d.Code == core.CodeTierNotPermitted {
			e.Param = "tier"
		}
		if d.Code == core.CodeModelNotFound || d.Code == core.CodeModeNotPermitted {
			e.Param = "model"
		}
		writeError(w, r, e)
		return nil, false
	}
	return m, true
}
