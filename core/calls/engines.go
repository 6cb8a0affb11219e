package calls

import (
	"context"
	"sort"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// EngineView is an engine as a caller may see it: its id, its provider
// family and the tiers whose seats it can fill — never its endpoint, its
// credential or its source prices.
type EngineView struct {
	ID      string
	Family  string
	MaxTier core.Tier
	// Tiers are the tiers it can fill, lowest first, up to the caller's
	// allowed tier.
	Tiers []core.Tier
}

// EngineList is the engines a caller can seat, up to the highest tier it
// may ask for.
type EngineList struct {
	Tier    core.Tier
	Engines []EngineView
}

// tiersDescending are the tiers, highest first.
var tiersDescending = []core.Tier{core.TierPro, core.TierPlus, core.TierExperience}

// ListEngines lists the engines of the catalog that can fill seats for p,
// ordered by id: each with the tiers it can fill, up to the highest tier
// the policy lets p ask for. A principal that may not read modes is
// refused as GET /v1/models refuses it.
func (s *Service) ListEngines(ctx context.Context, p *access.Principal) (*EngineList, error) {
	if err := s.d.Access.Authorize(ctx, p, core.ActionModelsRead, nil, ""); err != nil {
		return nil, err
	}
	var allowed core.Tier
	for _, t := range tiersDescending {
		d, err := s.d.Access.Decide(ctx, p, core.ActionModelsRead, nil, t)
		if err != nil {
			return nil, access.PolicyFailure(err)
		}
		if d.Allow {
			allowed = t
			break
		}
	}
	out := &EngineList{Tier: allowed, Engines: []EngineView{}}
	if allowed == "" {
		return out, nil
	}
	for _, e := range s.d.Catalog.Engines() {
		v := EngineView{ID: e.ID, Family: e.Family, MaxTier: e.MaxTier}
		for i := len(tiersDescending) - 1; i >= 0; i-- {
			t := tiersDescending[i]
			if t.Rank() <= e.MaxTier.Rank() && t.Rank() <= allowed.Rank() {
				v.Tiers = append(v.Tiers, t)
			}
		}
		if len(v.Tiers) > 0 {
			out.Engines = append(out.Engines, v)
		}
	}
	sort.Slice(out.Engines, func(i, j int) bool { return out.Engines[i].ID < out.Engines[j].ID })
	return out, nil
}
