package people

import (
	"context"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// OrgSettings reads p's organisation as it is now, settings included
// (org.settings: owners).
func (s *Service) OrgSettings(ctx context.Context, p *access.Principal) (*core.Org, error) {
	if err := s.authorize(ctx, p, core.ActionOrgSettings, ""); err != nil {
		return nil, err
	}
	return s.d.Orgs.GetOrg(ctx, p.Org.ID)
}

// SetTranscripts sets whether p's organisation keeps its calls' transcripts
// (org.settings: owners; audited as org.settings_changed). Off, the
// receipts of calls that settle from then on keep no prompt or answer
// text; the answer stored for an idempotent replay is kept until the
// idempotency reaper removes it, and receipts already written keep theirs.
func (s *Service) SetTranscripts(ctx context.Context, p *access.Principal, keep bool) (*core.Org, error) {
	if err := s.authorize(ctx, p, core.ActionOrgSettings, ""); err != nil {
		return nil, err
	}
	return s.d.Orgs.SetOrgTranscripts(act(ctx, p), p.Org.ID, keep)
}
