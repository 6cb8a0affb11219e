package people

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
)

// ceremonyTTL is how long a begun WebAuthn ceremony may be finished.
const ceremonyTTL = 5 * time.Minute

// Ceremony kinds.
const (
	ceremonySignIn = "sign-in"
	ceremonyLink   = "link"
	ceremonyAdd    = "add"
)

// ceremonyState is what the server keeps of a begun ceremony.
type ceremonyState struct {
	Kind     string               `json:"kind"`
	Session  webauthn.SessionData `json:"session"`
	PersonID string               `json:"person_id,omitempty"`
	LinkHash []byte               `json:"link_hash,omitempty"`
	Name     string               `json:"name,omitempty"`
}

// user is a person as the WebAuthn library sees them.
type user struct {
	id, email, name string
	creds           []webauthn.Credential
}

func (u *user) WebAuthnID() []byte                         { return []byte(u.id) }
func (u *user) WebAuthnName() string                       { return u.email }
func (u *user) WebAuthnDisplayName() string                { return u.name }
func (u *user) WebAuthnCredentials() []webauthn.Credential { return u.creds }

var _ webauthn.User = (*user)(nil)

// userOf builds the WebAuthn user of a person with their passkeys.
func (s *Service) userOf(ctx context.Context, id, email, name string) (*user, error) {
	u := &user{id: id, email: email, name: name}
	pks, err := s.d.Store.Passkeys(ctx, id)
	if err != nil {
		return nil, err
	}
	for _, pk := range pks {
		var c webauthn.Credential
		if err := json.Unmarshal(pk.Credential, &c); err == nil {
			u.creds = append(u.creds, c)
		}
	}
	return u, nil
}

// begin keeps a ceremony's state and returns what the page needs.
func (s *Service) begin(ctx context.Context, options any, st *ceremonyState) (*Ceremony, error) {
	opts, err := json.Marshal(options)
	if err != nil {
		return nil, err
	}
	state, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	secret, hash := newSecret()
	if err := s.d.Store.PutCeremony(ctx, hash, state, time.Now().Add(ceremonyTTL)); err != nil {
		return nil, unavailable(err)
	}
	return &Ceremony{Options: opts, Secret: secret}, nil
}

// take returns a ceremony's state, once; a missing, used or expired one
// is a *FieldError on field "passkey".
func (s *Service) take(ctx context.Context, secret, kind string) (*ceremonyState, error) {
	expired := &FieldError{Field: "passkey", Message: "The passkey request expired or was already used. Try again."}
	hash := hashSecret(secret)
	if hash == nil {
		return nil, expired
	}
	raw, err := s.d.Store.TakeCeremony(ctx, hash)
	if errors.Is(err, core.ErrNotFound) {
		return nil, expired
	}
	if err != nil {
		return nil, unavailable(err)
	}
	var st ceremonyState
	if err := json.Unmarshal(raw, &st); err != nil || st.Kind != kind {
		return nil, expired
	}
	return &st, nil
}

// registration is how every passkey is registered: a discoverable
// credential (so that sign-in asks for no email), user verification
// preferred, none of the person's existing passkeys again.
func registration(u *user) []webauthn.RegistrationOption {
	exclude := make([]protocol.CredentialDescriptor, len(u.creds))
	for i := range u.creds {
		exclude[i] = u.creds[i].Descriptor()
	}
	return []webauthn.RegistrationOption{
		webauthn.WithAuthenticatorSelection(protocol.AuthenticatorSelection{
			ResidentKey: protocol.ResidentKeyRequirementRequired, RequireResidentKey: protocol.ResidentKeyRequired(),
			UserVerification: protocol.VerificationPreferred,
		}),
		webauthn.WithExclusions(exclude),
	}
}

// finishRegistration checks the browser's attestation against the
// ceremony and returns the passkey to store.
func (s *Service) finishRegistration(u *user, st *ceremonyState, response []byte, name string) (*core.Passkey, error) {
	refused := &FieldError{Field: "passkey", Message: "The passkey could not be registered. Try again."}
	parsed, err := protocol.ParseCredentialCreationResponseBytes(response)
	if err != nil {
		return nil, refused
	}
	cred, err := s.wa.CreateCredential(u, st.Session, parsed)
	if err != nil {
		return nil, refused
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	if name == "" {
		name = "Passkey"
	}
	return &core.Passkey{PersonID: u.id, CredentialID: cred.ID, Name: name, Credential: raw}, nil
}

// BeginPasskeySignIn starts a discoverable-credential sign-in (no email
// asked).
func (s *Service) BeginPasskeySignIn(ctx context.Context, address string) (*Ceremony, error) {
	opts, sess, err := s.wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationPreferred))
	if err != nil {
		return nil, err
	}
	return s.begin(ctx, opts, &ceremonyState{Kind: ceremonySignIn, Session: *sess})
}

// FinishPasskeySignIn checks the browser's assertion (the JSON of the
// PublicKeyCredential) against the ceremony and signs in. A failed check is
// a *FieldError (field "passkey"); attempts are counted per address.
func (s *Service) FinishPasskeySignIn(ctx context.Context, ceremonySecret string, response []byte, address string) (*SignedIn, error) {
	if err := s.spendAttempt(ctx, "", address); err != nil {
		return nil, err
	}
	st, err := s.take(ctx, ceremonySecret, ceremonySignIn)
	if err != nil {
		return nil, err
	}
	refused := &FieldError{Field: "passkey", Message: "That passkey is not registered here, or it could not be checked."}
	parsed, err := protocol.ParseCredentialRequestResponseBytes(response)
	if err != nil {
		return nil, refused
	}
	var (
		pk     *core.Passkey
		person *core.Person
	)
	handler := func(rawID, userHandle []byte) (webauthn.User, error) {
		var err error
		if pk, err = s.d.Store.PasskeyByCredentialID(ctx, rawID); err != nil {
			return nil, err
		}
		if pk.PersonID != string(userHandle) {
			return nil, errors.New("the passkey's user handle names another person")
		}
		if person, err = s.d.Store.GetPerson(ctx, pk.PersonID); err != nil {
			return nil, err
		}
		return s.userOf(ctx, person.ID, person.Email, person.Name)
	}
	cred, err := s.wa.ValidateDiscoverableLogin(handler, st.Session, parsed)
	if err != nil || pk == nil || person == nil {
		return nil, refused
	}
	raw, err := json.Marshal(cred)
	if err != nil {
		return nil, err
	}
	if err := s.d.Store.UsePasskey(ctx, pk.ID, raw); err != nil {
		return nil, unavailable(err)
	}
	return s.startSession(ctx, person, address)
}

// Passkeys lists p's person's passkeys.
func (s *Service) Passkeys(ctx context.Context, p *access.Principal) ([]*core.Passkey, error) {
	return s.d.Store.Passkeys(ctx, p.Person.ID)
}

// BeginAddPasskey starts registering another passkey for p's person.
func (s *Service) BeginAddPasskey(ctx context.Context, p *access.Principal) (*Ceremony, error) {
	u, err := s.userOf(ctx, p.Person.ID, p.Person.Email, p.Person.Name)
	if err != nil {
		return nil, err
	}
	opts, sess, err := s.wa.BeginRegistration(u, registration(u)...)
	if err != nil {
		return nil, err
	}
	return s.begin(ctx, opts, &ceremonyState{Kind: ceremonyAdd, Session: *sess, PersonID: p.Person.ID})
}

// FinishAddPasskey stores it, named name.
func (s *Service) FinishAddPasskey(ctx context.Context, p *access.Principal, ceremonySecret string, response []byte, name string) (*core.Passkey, error) {
	st, err := s.take(ctx, ceremonySecret, ceremonyAdd)
	if err != nil {
		return nil, err
	}
	if st.PersonID != p.Person.ID {
		return nil, &FieldError{Field: "passkey", Message: "The passkey request was made by someone else. Try again."}
	}
	if err := checkName(name, "name", true); err != nil {
		return nil, err
	}
	u, err := s.userOf(ctx, p.Person.ID, p.Person.Email, p.Person.Name)
	if err != nil {
		return nil, err
	}
	pk, err := s.finishRegistration(u, st, response, name)
	if err != nil {
		return nil, err
	}
	return s.d.Store.AddPasskey(act(ctx, p), pk)
}

// RemovePasskey removes one of p's person's passkeys; removing the last
// way to sign in (no password, no other passkey) is a *FieldError.
func (s *Service) RemovePasskey(ctx context.Context, p *access.Principal, passkeyID string) error {
	if err := knownID(passkeyID); err != nil {
		return err
	}
	pks, err := s.d.Store.Passkeys(ctx, p.Person.ID)
	if err != nil {
		return err
	}
	has, err := s.HasPassword(ctx, p)
	if err != nil {
		return err
	}
	if len(pks) == 1 && pks[0].ID == passkeyID && !has {
		return &FieldError{Field: "passkey", Message: "This is your only way to sign in: add another passkey or set a password first."}
	}
	return s.d.Store.RemovePasskey(act(ctx, p), p.Person.ID, passkeyID)
}
