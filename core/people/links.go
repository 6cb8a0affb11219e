package people

import (
	"context"
	"errors"
	"net/mail"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// linkURL is where a link's secret is opened.
func (s *Service) linkURL(secret string) string { return s.origin + "/link/" + secret }

// checkEmail refuses what is not one plain email address.
func checkEmail(email string) error {
	e := core.NormalEmail(email)
	a, err := mail.ParseAddress(e)
	if err != nil || a.Address != e || a.Name != "" || len(e) > 254 {
		return &FieldError{Field: "email", Message: "Enter one email address, like ada@example.com."}
	}
	return nil
}

// checkName refuses a display name that is empty (unless optional), longer
// than 100 characters, or holds control characters.
func checkName(name, field string, optional bool) error {
	n := strings.TrimSpace(name)
	switch {
	case n == "" && !optional:
		return &FieldError{Field: field, Message: "Enter a name."}
	case !utf8.ValidString(n) || utf8.RuneCountInString(n) > 100:
		return &FieldError{Field: field, Message: "Use at most 100 characters."}
	case strings.IndexFunc(n, unicode.IsControl) >= 0:
		return &FieldError{Field: field, Message: "Use printable characters only."}
	}
	return nil
}

// newLink stores a link and returns its URL.
func (s *Service) newLink(ctx context.Context, p *core.CreateInvitationParams) (string, *core.Invitation, error) {
	secret, hash := newSecret()
	p.Hash = hash
	p.ExpiresAt = time.Now().Add(s.cfg.LinkTTL)
	inv, err := s.d.Store.CreateInvitation(ctx, p)
	if err != nil {
		return "", nil, err
	}
	return s.linkURL(secret), inv, nil
}

// CreatePerson is the operator's: it creates a person in orgID with role (or
// adds an existing person with that email to it) and returns a set-up link
// (the full URL, shown once).
func (s *Service) CreatePerson(ctx context.Context, orgID, email, name string, role core.Role) (*core.Person, string, error) {
	if err := checkEmail(email); err != nil {
		return nil, "", err
	}
	if err := checkName(name, "name", false); err != nil {
		return nil, "", err
	}
	if !role.Valid() {
		return nil, "", &FieldError{Field: "role", Message: "Choose owner or member."}
	}
	p, err := s.d.Store.PersonByEmail(ctx, email)
	switch {
	case errors.Is(err, core.ErrNotFound):
		p, err = s.d.Store.CreatePerson(ctx, &core.CreatePersonParams{Email: email, Name: strings.TrimSpace(name), OrgID: orgID, Role: role})
	case err == nil:
		err = s.d.Store.AddMember(ctx, orgID, p.ID, role)
	}
	if err != nil {
		return nil, "", err
	}
	link, _, err := s.newLink(ctx, &core.CreateInvitationParams{Kind: core.InvitationSetup, OrgID: orgID, Email: p.Email, PersonID: p.ID})
	if err != nil {
		return nil, "", err
	}
	return p, link, nil
}

// SetupLink is the operator's: a new set-up link for an existing person.
func (s *Service) SetupLink(ctx context.Context, personID string) (string, error) {
	p, err := s.d.Store.GetPerson(ctx, personID)
	if err != nil {
		return "", err
	}
	ms, err := s.d.Store.Memberships(ctx, personID)
	if err != nil {
		return "", err
	}
	orgID := ""
	if len(ms) > 0 {
		orgID = ms[0].OrgID // the audit row's organisation
	}
	link, _, err := s.newLink(ctx, &core.CreateInvitationParams{Kind: core.InvitationSetup, OrgID: orgID, Email: p.Email, PersonID: p.ID})
	return link, err
}

// Invite asks email into p's organisation with role (people.manage): the
// link (full URL, shown once) and the invitation. A bad email or role is a
// *FieldError.
func (s *Service) Invite(ctx context.Context, p *access.Principal, email string, role core.Role) (string, *core.Invitation, error) {
	if err := s.authorize(ctx, p, core.ActionPeopleManage, ""); err != nil {
		return "", nil, err
	}
	if err := checkEmail(email); err != nil {
		return "", nil, err
	}
	if !role.Valid() {
		return "", nil, &FieldError{Field: "role", Message: "Choose owner or member."}
	}
	personID := core.NewID("person")
	existing, err := s.d.Store.PersonByEmail(ctx, email)
	switch {
	case err == nil:
		if _, err := s.d.Store.Membership(ctx, existing.ID, p.Org.ID); err == nil {
			return "", nil, &FieldError{Field: "email", Message: "This person is already in the organisation."}
		}
		personID = existing.ID
	case !errors.Is(err, core.ErrNotFound):
		return "", nil, err
	}
	return s.newLink(act(ctx, p), &core.CreateInvitationParams{Kind: core.InvitationInvite, OrgID: p.Org.ID, Email: email,
		PersonID: personID, Role: role})
}

// usable finds a link that can still be used: core.ErrNotFound for an
// unknown or forged one, core.ErrGone for a used or expired one.
func (s *Service) usable(ctx context.Context, secret string) (*core.Invitation, []byte, error) {
	hash := hashSecret(secret)
	if hash == nil {
		return nil, nil, core.ErrNotFound
	}
	inv, err := s.d.Store.Invitation(ctx, hash)
	if err != nil {
		return nil, nil, err
	}
	if inv.UsedAt != nil || !time.Now().Before(inv.ExpiresAt) {
		return nil, nil, core.ErrGone
	}
	return inv, hash, nil
}

// Link describes a link by its secret: core.ErrNotFound for an unknown or
// forged one, core.ErrGone for a used or expired one.
func (s *Service) Link(ctx context.Context, secret string) (*LinkView, error) {
	inv, _, err := s.usable(ctx, secret)
	if err != nil {
		return nil, err
	}
	v := &LinkView{Kind: inv.Kind, Email: inv.Email, Role: inv.Role, ExpiresAt: inv.ExpiresAt}
	if inv.OrgID != "" {
		if o, err := s.d.Orgs.GetOrg(ctx, inv.OrgID); err == nil {
			v.OrgName = o.Name
		}
	}
	if inv.Kind == core.InvitationInvite {
		if _, err := s.d.Store.GetPerson(ctx, inv.PersonID); err == nil {
			v.Existing = true
		}
	}
	return v, nil
}

// newcomer reports whether the link creates its person (an invitation of
// someone without an account), and refuses one for an existing person, who
// accepts it signed in.
func (s *Service) newcomer(ctx context.Context, inv *core.Invitation) (bool, error) {
	if inv.Kind == core.InvitationSetup {
		return false, nil
	}
	if _, err := s.d.Store.GetPerson(ctx, inv.PersonID); err == nil {
		return false, &FieldError{Field: "link", Message: "You already have an account: sign in, then open this link again to join."}
	}
	return true, nil
}

// AcceptWithPassword uses a link to set a password (and, for a new person,
// create them with name): the link is used, the person created or joined,
// the password stored and a session made in one transaction. Bad input is a
// *FieldError (name, password) and uses nothing.
func (s *Service) AcceptWithPassword(ctx context.Context, linkSecret, name, password, address string) (*SignedIn, error) {
	inv, hash, err := s.usable(ctx, linkSecret)
	if err != nil {
		return nil, err
	}
	isNew, err := s.newcomer(ctx, inv)
	if err != nil {
		return nil, err
	}
	if isNew {
		if err := checkName(name, "name", false); err != nil {
			return nil, err
		}
	}
	if err := CheckPassword(password, inv.Email); err != nil {
		return nil, err
	}
	phc, err := s.newHash(ctx, password)
	if err != nil {
		return nil, err
	}
	secret, sp := s.sessionParams(address)
	person, sess, err := s.d.Store.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: hash, Name: strings.TrimSpace(name),
		PasswordHash: phc, Session: sp})
	if err != nil {
		return nil, err
	}
	return &SignedIn{Secret: secret, Session: sess, Person: person}, nil
}

// BeginLinkPasskey starts registering a passkey through a link; name is a
// new person's display name.
func (s *Service) BeginLinkPasskey(ctx context.Context, linkSecret, name string) (*Ceremony, error) {
	inv, hash, err := s.usable(ctx, linkSecret)
	if err != nil {
		return nil, err
	}
	isNew, err := s.newcomer(ctx, inv)
	if err != nil {
		return nil, err
	}
	display := strings.TrimSpace(name)
	if isNew {
		if err := checkName(name, "name", false); err != nil {
			return nil, err
		}
	} else if p, err := s.d.Store.GetPerson(ctx, inv.PersonID); err == nil {
		display = p.Name
	}
	u, err := s.userOf(ctx, inv.PersonID, inv.Email, display)
	if err != nil {
		return nil, err
	}
	opts, sess, err := s.wa.BeginRegistration(u, registration(u)...)
	if err != nil {
		return nil, err
	}
	return s.begin(ctx, opts, &ceremonyState{Kind: ceremonyLink, Session: *sess, PersonID: inv.PersonID, LinkHash: hash, Name: display})
}

// FinishLinkPasskey registers the passkey and uses the link, in one
// transaction, and signs in.
func (s *Service) FinishLinkPasskey(ctx context.Context, linkSecret, ceremonySecret string, response []byte, address string) (*SignedIn, error) {
	inv, hash, err := s.usable(ctx, linkSecret)
	if err != nil {
		return nil, err
	}
	st, err := s.take(ctx, ceremonySecret, ceremonyLink)
	if err != nil {
		return nil, err
	}
	if string(st.LinkHash) != string(hash) || st.PersonID != inv.PersonID {
		return nil, &FieldError{Field: "passkey", Message: "The passkey request was for another link. Try again."}
	}
	u, err := s.userOf(ctx, inv.PersonID, inv.Email, st.Name)
	if err != nil {
		return nil, err
	}
	pk, err := s.finishRegistration(u, st, response, "")
	if err != nil {
		return nil, err
	}
	secret, sp := s.sessionParams(address)
	person, sess, err := s.d.Store.AcceptInvitation(ctx, &core.AcceptInvitationParams{Hash: hash, Name: st.Name, Passkey: pk, Session: sp})
	if err != nil {
		return nil, err
	}
	return &SignedIn{Secret: secret, Session: sess, Person: person}, nil
}

// AcceptSignedIn uses an invitation for p's person, who is signed in and
// whose email it names: they join its organisation. Another person's
// invitation is core.ErrNotFound.
func (s *Service) AcceptSignedIn(ctx context.Context, linkSecret string, p *access.Principal) (*core.Membership, error) {
	inv, hash, err := s.usable(ctx, linkSecret)
	if err != nil {
		return nil, err
	}
	if inv.Kind != core.InvitationInvite || inv.Email != p.Person.Email {
		return nil, core.ErrNotFound
	}
	if _, _, err := s.d.Store.AcceptInvitation(act(ctx, p), &core.AcceptInvitationParams{Hash: hash, PersonID: p.Person.ID}); err != nil {
		return nil, err
	}
	return s.d.Store.Membership(ctx, p.Person.ID, inv.OrgID)
}
