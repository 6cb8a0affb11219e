package people

import (
	"context"
	"errors"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/oauth"
)

// appsOff answers the apps methods when the embedded authorization server
// is off.
var appsOff = core.Errorf(core.CodeServiceUnavailable, "Connected apps are off on this server: it trusts another authorization server.")

// Apps lists the connected apps of p's organisation, newest first, revoked
// ones included: everyone's for a person granted apps.read on "any" (an
// owner, as shipped), else the person's own.
func (s *Service) Apps(ctx context.Context, p *access.Principal) ([]*oauth.Grant, error) {
	if s.d.Grants == nil {
		return nil, appsOff
	}
	if p.Org == nil {
		return nil, core.Errorf(core.CodeForbidden, "You are not in an organisation yet.")
	}
	if s.authorize(ctx, p, core.ActionAppsRead, "") == nil {
		return s.d.Grants.ListGrants(ctx, p.Org.ID, "")
	}
	if err := s.authorize(ctx, p, core.ActionAppsRead, p.PersonID()); err != nil {
		return nil, err
	}
	return s.d.Grants.ListGrants(ctx, p.Org.ID, p.PersonID())
}

// RevokeApp revokes a connected app's grant in p's organisation (apps.revoke;
// a member their own): its access tokens stop working within the grant
// cache's few seconds and its refresh token at once. Another
// organisation's grant is core.ErrNotFound. The audit trail records it.
func (s *Service) RevokeApp(ctx context.Context, p *access.Principal, grantID string) (*oauth.Grant, error) {
	if s.d.Grants == nil {
		return nil, appsOff
	}
	if p.Org == nil {
		return nil, core.ErrNotFound
	}
	if err := knownID(grantID); err != nil {
		return nil, err
	}
	g, err := s.d.Grants.Grant(ctx, grantID)
	switch {
	case errors.Is(err, core.ErrNotFound) || (err == nil && g.OrgID != p.Org.ID):
		return nil, core.ErrNotFound
	case err != nil:
		return nil, err
	}
	if err := s.authorize(ctx, p, core.ActionAppsRevoke, g.PersonID); err != nil {
		return nil, err
	}
	return s.d.Grants.RevokeGrant(act(ctx, p), p.Org.ID, grantID)
}
