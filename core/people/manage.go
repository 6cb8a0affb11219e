package people

import (
	"context"
	"errors"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/carrier"
)

// authorize asks the policy whether p may do action in its organisation;
// owner is the person who created the object acted on, for "own" grants.
func (s *Service) authorize(ctx context.Context, p *access.Principal, action, owner string) error {
	return s.d.Access.AuthorizeOwned(ctx, p, action, owner)
}

// member finds a person of p's organisation: core.ErrNotFound otherwise.
func (s *Service) member(ctx context.Context, p *access.Principal, personID string) (*core.Membership, error) {
	if err := knownID(personID); err != nil {
		return nil, err
	}
	return s.d.Store.Membership(ctx, personID, p.Org.ID)
}

// knownID refuses, as unknown, an id that could not name anything because
// it cannot reach the database (a NUL, or bytes that are not UTF-8: a page
// path's %00): the answer is 404, never a failed query's 503.
func knownID(id string) error {
	if !carrier.Text(id) {
		return core.ErrNotFound
	}
	return nil
}

// lastOwner words core.ErrLastOwner for people.
func lastOwner(err error) error {
	if errors.Is(err, core.ErrLastOwner) {
		return core.Errorf(core.CodeLastOwner, "This is the organisation's last owner: make another person an owner first.")
	}
	return err
}

// Members lists p's organisation's people (people.read).
func (s *Service) Members(ctx context.Context, p *access.Principal) ([]*core.Member, error) {
	if err := s.authorize(ctx, p, core.ActionPeopleRead, ""); err != nil {
		return nil, err
	}
	return s.d.Store.Members(ctx, p.Org.ID)
}

// SetRole changes a person's role (people.manage); the last owner's is
// refused with last_owner (409).
func (s *Service) SetRole(ctx context.Context, p *access.Principal, personID string, role core.Role) (*core.Membership, error) {
	if err := s.authorize(ctx, p, core.ActionPeopleManage, ""); err != nil {
		return nil, err
	}
	if !role.Valid() {
		return nil, &FieldError{Field: "role", Message: "Choose owner or member."}
	}
	if err := knownID(personID); err != nil {
		return nil, err
	}
	m, err := s.d.Store.SetRole(act(ctx, p), &core.SetRoleParams{OrgID: p.Org.ID, PersonID: personID, Role: role})
	return m, lastOwner(err)
}

// RemoveMember takes a person out of p's organisation (people.manage;
// last_owner for the last owner).
func (s *Service) RemoveMember(ctx context.Context, p *access.Principal, personID string) error {
	if err := s.authorize(ctx, p, core.ActionPeopleManage, ""); err != nil {
		return err
	}
	if err := knownID(personID); err != nil {
		return err
	}
	return lastOwner(s.d.Store.RemoveMember(act(ctx, p), p.Org.ID, personID))
}

// EndSessions ends a person's sessions (people.manage; audited).
func (s *Service) EndSessions(ctx context.Context, p *access.Principal, personID string) (int, error) {
	if err := s.authorize(ctx, p, core.ActionPeopleManage, ""); err != nil {
		return 0, err
	}
	if _, err := s.member(ctx, p, personID); err != nil {
		return 0, err
	}
	return s.d.Store.EndSessions(act(ctx, p), personID, p.Org.ID, nil)
}

// HasPassword reports whether p's person has a password.
func (s *Service) HasPassword(ctx context.Context, p *access.Principal) (bool, error) {
	_, err := s.d.Store.PasswordHash(ctx, p.Person.ID)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, core.ErrNotFound):
		return false, nil
	}
	return false, err
}

// ChangePassword sets p's person's password (current must match when they
// have one) and ends their other sessions (all but keepSecret's).
func (s *Service) ChangePassword(ctx context.Context, p *access.Principal, current, next, keepSecret string) error {
	stored, err := s.d.Store.PasswordHash(ctx, p.Person.ID)
	switch {
	case err == nil:
		ok, err := s.checkPassword(ctx, stored, current)
		if err != nil {
			return err
		}
		if !ok {
			return &FieldError{Field: "current", Message: "This is not your current password."}
		}
	case !errors.Is(err, core.ErrNotFound):
		return err
	}
	if err := CheckPassword(next, p.Person.Email); err != nil {
		return err
	}
	phc, err := s.newHash(ctx, next)
	if err != nil {
		return err
	}
	return s.d.Store.SetPassword(act(ctx, p), p.Person.ID, phc, hashSecret(keepSecret))
}

// CreateKey creates an API key for p's organisation, recorded as p's
// person's, whose scopes the policy bounds by p's role (keys.create): a
// scope asked for that the role may not grant refuses the key. Nil scopes
// ask for every scope the policy lets the role grant (each asked for on its
// own); when it grants none, the refusal says why.
func (s *Service) CreateKey(ctx context.Context, p *access.Principal, k *NewKey) (string, *core.Key, error) {
	if err := checkName(k.Name, "name", false); err != nil {
		return "", nil, err
	}
	if p.Org == nil {
		return "", nil, core.Errorf(core.CodeForbidden, "You are not in an organisation yet.")
	}
	ask := func(scopes []string) error {
		in := p.PolicyInput(core.ActionKeysCreate)
		in.Scopes = scopes
		return s.d.Access.AuthorizeInput(ctx, in)
	}
	scopes := k.Scopes
	if scopes == nil {
		for _, sc := range core.AllScopes {
			if ask([]string{sc}) == nil {
				scopes = append(scopes, sc)
			}
		}
		if scopes == nil {
			scopes = core.AllScopes
		}
	}
	if err := ask(scopes); err != nil {
		return "", nil, err
	}
	secret, hash := core.NewKeySecret(k.Test)
	key, err := s.d.Keys.CreateKey(act(ctx, p), &core.CreateKeyParams{OrgID: p.Org.ID, Hash: hash, Hint: core.KeyHint(secret),
		Name: k.Name, Test: k.Test, Scopes: scopes, Modes: k.Modes, PersonID: p.Person.ID})
	if err != nil {
		return "", nil, err
	}
	return secret, key, nil
}

// RevokeKey revokes a key of p's organisation (keys.revoke; a member their
// own). Another organisation's key is core.ErrNotFound.
func (s *Service) RevokeKey(ctx context.Context, p *access.Principal, keyID string) (*core.Key, error) {
	if p.Org == nil {
		return nil, core.ErrNotFound
	}
	keys, err := s.d.Keys.ListKeys(ctx, p.Org.ID)
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		if k.ID == keyID {
			if err := s.authorize(ctx, p, core.ActionKeysRevoke, k.PersonID); err != nil {
				return nil, err
			}
			return s.d.Keys.RevokeKey(act(ctx, p), keyID)
		}
	}
	return nil, core.ErrNotFound
}

// byokOff answers the BYOK methods when bring-your-own-key is off.
var byokOff = core.Errorf(core.CodeServiceUnavailable, "Bring-your-own-key is off on this server (its operator has not set CONCLAVE_BYOK_KEY).")

// SetBYOK sets or replaces the organisation's credential for provider
// (byok.write, owners by default): apiKey for an API-key provider, or
// roleARN and externalID for aws.
func (s *Service) SetBYOK(ctx context.Context, p *access.Principal, provider, apiKey, roleARN, externalID string) (*core.ProviderCredential, error) {
	if err := s.authorize(ctx, p, core.ActionBYOKWrite, ""); err != nil {
		return nil, err
	}
	if s.d.Credentials == nil || s.d.Maker == nil {
		return nil, byokOff
	}
	if !core.ValidBYOKProvider(provider) {
		return nil, &FieldError{Field: "provider", Message: "Choose openai, anthropic, google, mistral or aws."}
	}
	var (
		c   *core.ProviderCredential
		err error
	)
	if provider == core.ProviderAWS {
		c, err = s.d.Maker.NewRoleCredential(p.Org.ID, roleARN, externalID)
	} else {
		c, err = s.d.Maker.NewKeyCredential(p.Org.ID, provider, apiKey)
	}
	if err != nil {
		field := "api_key"
		if provider == core.ProviderAWS {
			field = "role_arn"
		}
		return nil, &FieldError{Field: field, Message: err.Error()}
	}
	return s.d.Credentials.SetProviderCredential(act(ctx, p), c)
}

// RemoveBYOK removes it (byok.write).
func (s *Service) RemoveBYOK(ctx context.Context, p *access.Principal, provider string) error {
	if err := s.authorize(ctx, p, core.ActionBYOKWrite, ""); err != nil {
		return err
	}
	if s.d.Credentials == nil {
		return byokOff
	}
	if !core.ValidBYOKProvider(provider) {
		return &FieldError{Field: "provider", Message: "Choose openai, anthropic, google, mistral or aws."}
	}
	return s.d.Credentials.RemoveProviderCredential(act(ctx, p), p.Org.ID, provider)
}

// Audit reads p's organisation's audit trail (audit.read).
func (s *Service) Audit(ctx context.Context, p *access.Principal, q *core.AuditQuery) ([]*core.AuditEntry, error) {
	if err := s.authorize(ctx, p, core.ActionAuditRead, ""); err != nil {
		return nil, err
	}
	qq := *q
	qq.OrgID = p.Org.ID
	return s.d.Store.Audit(ctx, &qq)
}

// Allowed reports whether the policy lets p do action in its organisation
// (a page shows or hides what it offers by it; the action itself asks
// again).
func (s *Service) Allowed(ctx context.Context, p *access.Principal, action string) bool {
	return s.authorize(ctx, p, action, "") == nil
}

// KeysPage lists up to limit of the API keys p may revoke (every key for
// owners, their own for members), newest first, after the cursor when
// set: the keys page, a page at a time.
func (s *Service) KeysPage(ctx context.Context, p *access.Principal, after *core.KeyCursor, limit int) ([]*core.Key, error) {
	if p.Org == nil {
		return nil, nil
	}
	q := &core.KeyQuery{OrgID: p.Org.ID, After: after, Limit: limit}
	if s.authorize(ctx, p, core.ActionKeysRevoke, "") != nil {
		if p.Person == nil {
			return nil, nil
		}
		q.PersonID = p.Person.ID
	}
	return s.d.Keys.ListKeysPage(ctx, q)
}

// KeyNames names the keys of p's organisation among ids, by id: what a
// page shows for a key a receipt or a spend line was made with. A key p
// may not see among its organisation's is named too (its name is not a
// secret; its use already shows on what p may read).
func (s *Service) KeyNames(ctx context.Context, p *access.Principal, ids []string) (map[string]*core.Key, error) {
	out := map[string]*core.Key{}
	if p.Org == nil || len(ids) == 0 {
		return out, nil
	}
	keys, err := s.d.Keys.ListKeysPage(ctx, &core.KeyQuery{OrgID: p.Org.ID, IDs: ids, Limit: len(ids)})
	if err != nil {
		return nil, err
	}
	for _, k := range keys {
		out[k.ID] = k
	}
	return out, nil
}

// Keys lists the API keys of p's organisation that p may revoke: every key
// for a role granted keys.revoke on any key (owners), only their own for a
// role granted it on their own (members), oldest first, revoked ones
// included.
func (s *Service) Keys(ctx context.Context, p *access.Principal) ([]*core.Key, error) {
	if p.Org == nil {
		return nil, nil
	}
	all, err := s.d.Keys.ListKeys(ctx, p.Org.ID)
	if err != nil {
		return nil, err
	}
	if s.authorize(ctx, p, core.ActionKeysRevoke, "") == nil {
		return all, nil
	}
	var own []*core.Key
	for _, k := range all {
		if k.PersonID == p.Person.ID {
			own = append(own, k)
		}
	}
	return own, nil
}
