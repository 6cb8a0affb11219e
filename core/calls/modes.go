package calls

import (
	"context"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// ResolveMode finds the mode id names (slug or ticker) and checks that p
// may use it for action at tier ("" when the request names none):
// model_not_found for an unknown mode, the policy's refusal otherwise.
func (s *Service) ResolveMode(ctx context.Context, p *access.Principal, id, action string, tier core.Tier) (*core.Mode, error) {
	m, ok := s.d.Catalog.Resolve(id)
	if !ok {
		return nil, core.Errorf(core.CodeModelNotFound, "The model %q does not exist or is not available to your organisation. GET /v1/models lists the modes you can call.", id).WithParam("model")
	}
	if err := s.d.Access.Authorize(ctx, p, action, m, tier); err != nil {
		return nil, err
	}
	return m, nil
}

// ListModes lists the modes p may see, in catalog order.
func (s *Service) ListModes(ctx context.Context, p *access.Principal) ([]*core.Mode, error) {
	var out []*core.Mode
	for _, m := range s.d.Catalog.Modes() {
		d, err := s.d.Access.Decide(ctx, p, core.ActionModelsRead, m, "")
		if err != nil {
			return nil, access.PolicyFailure(err)
		}
		if d.Allow {
			out = append(out, m)
		}
	}
	return out, nil
}
