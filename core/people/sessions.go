package people

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/carrier"
)

// Principal resolves a session cookie's secret to the person signed in, in
// the organisation the session has chosen (their first by name when it has
// none, or they left it), with their role there: a *access.Principal of
// kind core.PrincipalSession (Org nil when they belong to none). A missing,
// stale, forged or expired secret returns core.ErrNotFound (the page signs
// out); a store failure, ErrSignInUnavailable's code.
func (s *Service) Principal(ctx context.Context, secret, address string) (*access.Principal, *core.Session, error) {
	hash := hashSecret(secret)
	if hash == nil {
		return nil, nil, core.ErrNotFound
	}
	sess, err := s.d.Store.Session(ctx, hash, s.cfg.SessionIdle)
	if errors.Is(err, core.ErrNotFound) {
		return nil, nil, core.ErrNotFound
	}
	if err != nil {
		return nil, nil, unavailable(err)
	}
	person, err := s.d.Store.GetPerson(ctx, sess.PersonID)
	if err != nil {
		return nil, nil, unavailable(err)
	}
	p := &access.Principal{Kind: core.PrincipalSession, Person: person, Address: address}
	ms, err := s.d.Store.Memberships(ctx, person.ID)
	if err != nil {
		return nil, nil, unavailable(err)
	}
	if len(ms) == 0 {
		return p, sess, nil
	}
	i := slices.IndexFunc(ms, func(m *core.Membership) bool { return m.OrgID == sess.OrgID })
	if i < 0 {
		i = 0
		if err := s.d.Store.SetSessionOrg(ctx, hash, ms[0].OrgID); err != nil && !errors.Is(err, core.ErrNotFound) {
			return nil, nil, unavailable(err)
		}
		sess.OrgID = ms[0].OrgID
	}
	if p.Org, err = s.d.Orgs.GetOrg(ctx, ms[i].OrgID); err != nil {
		return nil, nil, unavailable(err)
	}
	p.Role = ms[i].Role
	return p, sess, nil
}

// startSession signs person in: a new session (the cookie's secret is
// returned once), in their first organisation.
func (s *Service) startSession(ctx context.Context, person *core.Person, address string) (*SignedIn, error) {
	orgID := ""
	ms, err := s.d.Store.Memberships(ctx, person.ID)
	if err != nil {
		return nil, unavailable(err)
	}
	if len(ms) > 0 {
		orgID = ms[0].OrgID
	}
	secret, hash := newSecret()
	sess, err := s.d.Store.CreateSession(ctx, &core.CreateSessionParams{Hash: hash, PersonID: person.ID, OrgID: orgID,
		Address: address, ExpiresAt: time.Now().Add(s.cfg.SessionMaxAge)})
	if err != nil {
		return nil, unavailable(err)
	}
	return &SignedIn{Secret: secret, Session: sess, Person: person}, nil
}

// sessionParams are the parameters of a session made in the transaction of
// a link's use; the secret is returned with them.
func (s *Service) sessionParams(address string) (string, *core.CreateSessionParams) {
	secret, hash := newSecret()
	return secret, &core.CreateSessionParams{Hash: hash, Address: address, ExpiresAt: time.Now().Add(s.cfg.SessionMaxAge)}
}

// SignOut ends the session of secret (nothing when it has none).
func (s *Service) SignOut(ctx context.Context, secret string) error {
	hash := hashSecret(secret)
	if hash == nil {
		return nil
	}
	return s.d.Store.DeleteSession(ctx, hash)
}

// SignOutEverywhere ends every session of p's person.
func (s *Service) SignOutEverywhere(ctx context.Context, p *access.Principal) error {
	_, err := s.d.Store.EndSessions(ctx, p.Person.ID, "", nil)
	return err
}

// ChooseOrg makes orgID the session's current organisation; one the person
// does not belong to returns core.ErrNotFound.
func (s *Service) ChooseOrg(ctx context.Context, secret string, p *access.Principal, orgID string) error {
	if err := knownID(orgID); err != nil {
		return err
	}
	if _, err := s.d.Store.Membership(ctx, p.Person.ID, orgID); err != nil {
		return err
	}
	hash := hashSecret(secret)
	if hash == nil {
		return core.ErrNotFound
	}
	return s.d.Store.SetSessionOrg(ctx, hash, orgID)
}

// Memberships lists p's person's organisations.
func (s *Service) Memberships(ctx context.Context, p *access.Principal) ([]*core.Membership, error) {
	return s.d.Store.Memberships(ctx, p.Person.ID)
}

// SignInPassword signs in with an email and a password. The attempt is
// counted against the account and the address before any hashing; past
// either budget it returns rate_limit_exceeded (with RetryAfter). A wrong
// password and an unknown email answer the same *FieldError after the same
// work, so the answer never says whether the email exists.
func (s *Service) SignInPassword(ctx context.Context, email, password, address string) (*SignedIn, error) {
	email = core.NormalEmail(email)
	wrong := &FieldError{Field: "password", Message: "The email or the password is not right."}
	if email == "" || password == "" {
		return nil, wrong
	}
	// Too long, or text no query could carry (a NUL): the same answer,
	// without an attempt or a hash — it names no account either way.
	if len(password) > MaxPasswordBytes || len(email) > 320 || !carrier.Text(email) || !carrier.Text(password) {
		return nil, wrong
	}
	if err := s.spendAttempt(ctx, email, address); err != nil {
		return nil, err
	}
	person, err := s.d.Store.PersonByEmail(ctx, email)
	personID := "person_unknown"
	switch {
	case err == nil:
		personID = person.ID
	case !errors.Is(err, core.ErrNotFound):
		return nil, unavailable(err)
	}
	// The hash lookup runs for an unknown email too, so that both cost
	// the same trips to the store.
	stored, err := s.d.Store.PasswordHash(ctx, personID)
	if err != nil && !errors.Is(err, core.ErrNotFound) {
		return nil, unavailable(err)
	}
	ok, err := s.checkPassword(ctx, stored, password)
	if err != nil {
		return nil, unavailable(err)
	}
	if !ok || person == nil {
		return nil, wrong
	}
	return s.startSession(ctx, person, address)
}

// spendAttempt spends one sign-in attempt of the account (email; "" for a
// passkey, which names none) and of the address.
func (s *Service) spendAttempt(ctx context.Context, email, address string) error {
	budgets := []core.AttemptBudget{{Subject: "address:" + address, Limit: s.cfg.AddressAttempts, Window: s.cfg.AttemptWindow}}
	if email != "" {
		budgets = append(budgets, core.AttemptBudget{Subject: "account:" + email, Limit: s.cfg.AccountAttempts, Window: s.cfg.AttemptWindow})
	}
	wait, err := s.d.Store.SpendAttempt(ctx, &core.AttemptParams{Subjects: budgets})
	if err != nil {
		return unavailable(err)
	}
	if wait > 0 {
		e := core.Errorf(core.CodeRateLimitExceeded, "Too many sign-in attempts. Try again in %s.", spellWait(wait))
		e.RetryAfter = wait
		return e
	}
	return nil
}

// spellWait rounds a wait up to whole seconds or minutes, in words.
func spellWait(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%d seconds", int((d+time.Second-1)/time.Second))
	}
	return core.Spell((d + time.Minute - 1) / time.Minute * time.Minute)
}
