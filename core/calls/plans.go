package calls

import (
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/modes"
)

// A connected app's call is its person's plan usage (access.Principal.OnPlan;
// docs/plans.md). It is admitted, deliberated, billed and settled as a key's
// call is, with these differences, all made here and in the bill's one rule
// (core.BillInput.RealCost):
//
//   - its ceiling is not the deployment's call ceiling but the mode's
//     projection (planProjection), lowered by panel.max_cost_usd when sent,
//     and then, at admission, by what is left of the person's monthly
//     allowance: the hold is the lower of the two, and it is the call's
//     ceiling from then on;
//   - it takes one of the person's slots beside the organisation's;
//   - its bill is the token charge alone (no platform fee, no surcharge),
//     capped at the hold, and its deliberation is budgeted by the whole hold.

// planProjection is the most a call of mode at tier is projected to cost at
// real cost: the mode's cost ceiling (core.Deliberation.CostCeiling: the
// real cost past which its deliberation runs no further round, the most the
// mode lets a deliberation spend) when it has one; else one deliberation of
// the reference question at the tier over the mode's most rounds
// (modes.ReferenceCost, the projection that prices modes); else, for a mode
// whose engines are all unpriced, the deployment's call ceiling, so that a
// plan's call always holds something against the allowance.
func (s *Service) planProjection(mode *core.Mode, tier core.Tier) core.Micros {
	d := mode.Deliberation
	if d.CostCeiling > 0 {
		return d.CostCeiling
	}
	if ref := modes.ReferenceCost(d.Seats[tierOrDefault(tier)], d.Staff, d.MaxRounds, s.d.Catalog.Engines()); ref > 0 {
		return ref
	}
	return s.cfg.CallCeilingFloor
}

// callCeiling is the ceiling p asks to hold for a call of mode: a key's own
// ceiling, else the higher of the deployment's floor and the mode's price
// (a signed-in person's call is a key's of that person); for plan usage,
// the mode's projection. panel.max_cost_usd lowers either.
func (s *Service) callCeiling(p *access.Principal, mode *core.Mode, req *ChatParams) core.Micros {
	if p.OnPlan() {
		return core.Ceiling(s.planProjection(mode, req.Tier), 0, 0, req.MaxCost)
	}
	var own core.Micros
	if p.Key != nil {
		own = p.Key.Ceiling
	}
	return core.Ceiling(own, mode.Pricing.Price(), s.cfg.CallCeilingFloor, req.MaxCost)
}

// planAdmission makes ap the admission of p's plan usage: the person's
// slots, and the allowance that lowers the hold. It asks for no least hold
// (AdmitParams.MinHold): what a question needs is known only once it is
// classified, and checked then (Chat's run), exactly, for the hold it got;
// a projection made before would refuse short questions a small remainder
// can pay for. Only an allowance with nothing left is refused at admission.
func (s *Service) planAdmission(p *access.Principal, ap *core.AdmitParams) {
	plan := s.d.Access.Plan(p)
	allowance := plan.Allowance
	ap.PersonID, ap.PersonSlots, ap.PersonAllowance = p.Person.ID, plan.Concurrency, &allowance
}

// planBelowMinimum refuses a plan's call whose hold cannot pay for the
// first round of its question: plan_limit_reached when the person's
// allowance lowered the hold (asked is what was asked before it), else —
// the mode's projection, or panel.max_cost_usd, is below it — as a key's
// call over its ceiling is refused.
func planBelowMinimum(plan core.Plan, mode *core.Mode, ceiling, asked, need core.Micros, byMaxCost bool) *core.Error {
	if ceiling < asked {
		return core.PlanLimitReached(plan, plan.Allowance-ceiling, time.Now())
	}
	what := "the most this mode is projected to cost"
	if byMaxCost {
		what = "panel.max_cost_usd"
	}
	return core.Errorf(core.CodeInvalidMaxCostUSD,
		"This call may spend $%s (%s), below the $%s one round of %s needs for this question; no seat fired and nothing was billed. "+
			"Shorten the conversation or ask for a lower tier.", ceiling, what, need, mode.ID).WithParam("panel.max_cost_usd")
}

func tierOrDefault(t core.Tier) core.Tier {
	if t == "" {
		return core.DefaultTier
	}
	return t
}
