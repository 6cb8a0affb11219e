package calls

import (
	"context"
	"math"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/classify"
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
	DeliberationValue classify.Value
	Total, Classify   time.Duration
}

// Estimate classifies req's question for p. It is free, but counted
// against the same rate and concurrency ceilings as a billed call.
func (s *Service) Estimate(ctx context.Context, p *access.Principal, c Call, req *EstimateParams) (*Estimate, error) {
	start := time.Now()
	mode, err := s.ResolveMode(ctx, p, req.Model, core.ActionEstimate, "")
	if err != nil {
		return nil, err
	}
	if _, err := s.admit(ctx, p, c, &core.AdmitParams{}); err != nil {
		return nil, err
	}
	defer s.releaseSlot(ctx, p.Org.ID, c.RequestID)
	cstart := time.Now()
	cls, err := s.d.Classifier.Classify(ctx, req.Messages)
	if err != nil {
		return nil, core.Errorf(core.CodeClassificationFailed, "The question could not be classified; nothing was billed. Retry shortly.").WithCause(err)
	}
	classified := time.Since(cstart)
	s.recordOutcome(ctx, p, c, core.OutcomeEstimated, "an estimate classifies the prompt without convening a panel")
	return &Estimate{
		RequestID: c.RequestID, Mode: mode, Depth: cls.Depth, DifficultyScore: math.Round(cls.Score*1000) / 1000,
		TaskType: cls.TaskType, HallucinationRisk: cls.HallucinationRisk,
		EstimatedPrice:    mode.Pricing.SurchargeFor(cls.Depth, false),
		DeliberationValue: cls.Value, Total: time.Since(start), Classify: classified,
	}, nil
}
