package calls

import (
	"context"
	"errors"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/carrier"
)

// ModeView is a mode as carriers list it: the mode, its mode_config_hash
// and the provider families its seats come from.
type ModeView struct {
	Mode       *core.Mode
	ConfigHash string
	Families   []string
}

// ResolveMode finds the mode id names (slug or ticker, with a version
// suffix or none) in the mode source and checks that p may use it for
// action at tier ("" when the request names none): model_not_found for an
// unknown mode or version, suffix_not_supported for a configured mode named
// with a suffix, the policy's refusal otherwise.
func (s *Service) ResolveMode(ctx context.Context, p *access.Principal, id, action string, tier core.Tier) (*core.Mode, error) {
	if !carrier.Text(id) {
		// No mode is named so, and the store cannot be asked: PostgreSQL
		// refuses the text. Every carrier's model reaches this one check.
		return nil, core.ModelNotFound()
	}
	m, err := s.d.Modes.ResolveMode(ctx, p.Org.ID, id)
	var ce *core.Error
	switch {
	case errors.Is(err, core.ErrNotFound):
		return nil, core.ModelNotFound()
	case errors.As(err, &ce) && ce.Code == core.CodeSuffixNotSupported:
		return nil, err
	case err != nil:
		return nil, core.Errorf(core.CodeServiceUnavailable, "The mode could not be read; nothing was run or billed. Retry shortly.").WithCause(err)
	}
	if err := s.d.Access.Authorize(ctx, p, action, m, tier); err != nil {
		return nil, err
	}
	return m, nil
}

// ListModes lists the modes p may see, in the source's order.
func (s *Service) ListModes(ctx context.Context, p *access.Principal) ([]*ModeView, error) {
	modes, err := s.d.Modes.ListModes(ctx, p.Org.ID)
	if err != nil {
		return nil, core.Errorf(core.CodeServiceUnavailable, "The modes could not be read. Retry shortly.").WithCause(err)
	}
	var out []*ModeView
	for _, m := range modes {
		d, err := s.d.Access.Decide(ctx, p, core.ActionModelsRead, m, "")
		if err != nil {
			return nil, access.PolicyFailure(err)
		}
		if d.Allow {
			out = append(out, s.View(m))
		}
	}
	return out, nil
}

// ModeConfigHash is the mode_config_hash of a mode the service resolved.
func (s *Service) ModeConfigHash(m *core.Mode) string { return s.d.Modes.ModeConfigHash(m) }

// View describes a mode the service resolved, for listing.
func (s *Service) View(m *core.Mode) *ModeView {
	return &ModeView{Mode: m, ConfigHash: s.ModeConfigHash(m), Families: s.d.Catalog.Families(m)}
}
