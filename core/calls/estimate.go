package calls

import (
	"context"
	"math"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/classify"
	"github.com/conclavehq/conclave/core/deliberate"
)

// Estimate is what a real call would make of a question — its
// classification and the surcharge it would quote — without running the
// panel and without charge.
type Estimate struct {
	RequestID         string
	Mode              *core.Mode
	Depth             core.Depth
	DifficultyScore   float64
	TaskType          string
	HallucinationRisk string
	EstimatedPrice    core.Micros
	// Lane is the lane a call would take: the express price is quoted for
	// the express lane.
	Lane core.Lane
	// DeliberationValue is the verdict on whether a panel helps; its Basis
	// names what classified the question: the mode's classifier engine, or
	// "heuristic" when the deterministic fallback did.
	DeliberationValue classify.Value
	Total, Classify   time.Duration
}

// classification is what an estimate reports of a question.
type classification struct {
	score          float64
	depth          core.Depth
	taskType, risk string
	lane           core.Lane
	value          classify.Value
}

// classify classifies as a real call would: the deliberator's plan (the
// mode's classifier engine, the deterministic fallback when it fails, the
// lane from the mode's express threshold), or the Classifier when the
// service runs no deliberations.
func (s *Service) classify(ctx context.Context, mode *core.Mode, tier core.Tier, messages []core.Message) (*classification, error) {
	if s.d.Deliberator == nil {
		c, err := s.d.Classifier.Classify(ctx, messages)
		if err != nil {
			return nil, err
		}
		return &classification{score: c.Score, depth: c.Depth, taskType: c.TaskType, risk: c.HallucinationRisk,
			lane: core.LanePanel, value: c.Value}, nil
	}
	plan, err := s.d.Deliberator.Plan(ctx, &deliberate.Request{Mode: mode, Tier: tier, Messages: messages})
	if err != nil {
		return nil, err
	}
	c := plan.Classification
	v := plan.Value
	if c.By != "" {
		v.Basis = c.By
	}
	return &classification{score: c.Score, depth: c.Depth, taskType: c.TaskType, risk: c.HallucinationRisk,
		lane: plan.Lane, value: v}, nil
}

// Estimate classifies req's question for p. It is free, but counted
// against the same rate and concurrency ceilings as a billed call.
func (s *Service) Estimate(ctx context.Context, p *access.Principal, c Call, req *EstimateParams) (*Estimate, error) {
	start := time.Now()
	// Checked as Chat checks the same body: the tier against the policy,
	// the prompt against the key's input limit.
	mode, err := s.ResolveMode(ctx, p, req.Model, core.ActionEstimate, req.Tier)
	if err != nil {
		return nil, s.d.Access.Refused(ctx, p, c.RequestID, err)
	}
	if err := s.checkInput(ctx, p, req.Messages); err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		return nil, s.d.Access.Refused(ctx, p, c.RequestID, err)
	}
	if _, err := s.admit(ctx, p, c, &core.AdmitParams{}); err != nil {
		return nil, err
	}
	defer s.releaseSlot(ctx, p.Org.ID, c.RequestID)
	cstart := time.Now()
	cls, err := s.classify(ctx, mode, req.Tier, req.Messages)
	if err != nil {
		return nil, core.Errorf(core.CodeClassificationFailed, "The question could not be classified; nothing was billed. Retry shortly.").WithCause(err)
	}
	classified := time.Since(cstart)
	s.recordOutcome(ctx, p, c, core.OutcomeEstimated, "an estimate classifies the prompt without convening a panel")
	// The surcharge quoted is the one the call would bill: none for plan
	// usage, billed at real cost.
	quote := core.ComputeBill(core.BillInput{
		Surcharge: mode.Pricing.SurchargeFor(cls.depth, cls.lane == core.LaneExpress), RealCost: p.OnPlan(),
	})
	return &Estimate{
		RequestID: c.RequestID, Mode: mode, Depth: cls.depth, DifficultyScore: math.Round(cls.score*1000) / 1000,
		TaskType: cls.taskType, HallucinationRisk: cls.risk, Lane: cls.lane,
		EstimatedPrice:    quote.Surcharge,
		DeliberationValue: cls.value, Total: time.Since(start), Classify: classified,
	}, nil
}
