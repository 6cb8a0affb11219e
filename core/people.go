package core

import (
	"context"
	"net/netip"
	"strings"
	"time"
)

// Role is what a person is in one organisation. What each role may do is
// the entitlement policy's to decide (policies/authz.rego, its role table);
// Go only carries the role to it.
type Role string

// The roles.
const (
	RoleOwner  Role = "owner"
	RoleMember Role = "member"
)

// Roles is every role, in a stable order.
var Roles = []Role{RoleOwner, RoleMember}

// Valid reports whether r is one of Roles.
func (r Role) Valid() bool { return r == RoleOwner || r == RoleMember }

// Principal kinds, as the entitlement policy sees them (input.principal.kind).
const (
	// PrincipalAPIKey is an API key on /v1 or /mcp.
	PrincipalAPIKey = "api_key"
	// PrincipalSession is a signed-in person on the pages.
	PrincipalSession = "session"
	// PrincipalOAuthApp is a connected app's access token on /mcp.
	PrincipalOAuthApp = "oauth_app"
)

// Person is someone who signs in. A person belongs to organisations through
// memberships, one role in each.
type Person struct {
	ID string
	// Email is stored lower-cased and trimmed (NormalEmail); it is unique.
	// Conclave sends no email, so it is an identifier, never verified.
	Email     string
	Name      string
	CreatedAt time.Time
}

// NormalEmail is the form in which emails are stored and compared.
func NormalEmail(email string) string { return strings.ToLower(strings.TrimSpace(email)) }

// Membership is a person's place in one organisation.
type Membership struct {
	OrgID     string
	OrgName   string
	OrgTicker string
	PersonID  string
	Role      Role
	CreatedAt time.Time
}

// Member is a person as an organisation's list of people shows them.
type Member struct {
	Person
	Role     Role
	JoinedAt time.Time
}

// Passkey is one WebAuthn credential of a person. Credential is the
// relying party's record of it (the public key, sign count, flags) as the
// WebAuthn library serialises it; it holds nothing secret.
type Passkey struct {
	ID           string
	PersonID     string
	CredentialID []byte
	Name         string
	Credential   []byte
	CreatedAt    time.Time
	LastUsedAt   *time.Time
}

// Invitation kinds.
const (
	// InvitationInvite asks someone into an organisation with a role; an
	// owner makes it.
	InvitationInvite = "invite"
	// InvitationSetup lets an existing person register a passkey or set a
	// password; the operator's CLI makes it (and the demo).
	InvitationSetup = "setup"
)

// Invitation is an invitation or a set-up link. Its secret is shown once to
// whoever made it and stored only as a hash; it is single-use and expires.
type Invitation struct {
	ID    string
	Kind  string // InvitationInvite or InvitationSetup
	OrgID string
	// Email is who an invitation is for; PersonID whom a set-up link is
	// for (and, for an invitation, the id the person will have if they are
	// new, so that a passkey can name its user before the person exists).
	Email     string
	PersonID  string
	Role      Role
	CreatedBy Actor
	CreatedAt time.Time
	ExpiresAt time.Time
	UsedAt    *time.Time
}

// Session is a signed-in person's server-side session. Its id is the hash of
// the cookie's secret; the secret is never stored.
type Session struct {
	ID       string // a display id, safe to show (not the cookie's secret)
	PersonID string
	// OrgID is the organisation the person chose to act in; "" until they
	// belong to one.
	OrgID      string
	Address    string
	CreatedAt  time.Time
	LastSeenAt time.Time
	// ExpiresAt is the absolute end of the session; the idle end is
	// LastSeenAt plus the idle timeout.
	ExpiresAt time.Time
}

// Actor kinds: who made a change, as the audit trail records it.
const (
	ActorPerson   = "person"
	ActorKey      = "api_key"
	ActorOperator = "operator"
	// ActorSystem is a change no caller asked for (a job of Conclave's own).
	ActorSystem = "system"
)

// Actor is who made a change, for the audit trail.
type Actor struct {
	Kind string // ActorPerson, ActorKey, ActorOperator or ActorSystem
	// ID is the person's or the key's id; "" for the operator and the
	// system.
	ID string
	// Address is the client address (server.trusted_proxies decides which
	// one); "" for the operator's CLI and the system.
	Address string
}

// Operator is the actor of the operator's CLI.
var Operator = Actor{Kind: ActorOperator}

type actorKey struct{}

// WithActor returns ctx carrying who is making the changes made with it:
// the store writes it into the audit row of each change, in the change's
// own transaction. The carrier (a page, the REST or MCP handler, the CLI)
// sets it once per request.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorOf is the actor ctx carries; ActorSystem when it carries none.
func ActorOf(ctx context.Context) Actor {
	if a, ok := ctx.Value(actorKey{}).(Actor); ok {
		return a
	}
	return Actor{Kind: ActorSystem}
}

// ClientAddress returns the address a request came from, given its
// transport peer (RemoteAddr's host) and its X-Forwarded-For header: the
// peer itself unless it is one of trusted, in which case the right-most
// address of the header that is not itself trusted (the first hop the
// trusted proxies did not add). An unparseable value yields the peer.
func ClientAddress(peer string, forwardedFor []string, trusted []netip.Prefix) string {
	addr, err := netip.ParseAddr(peer)
	if err != nil {
		return peer
	}
	addr = addr.Unmap()
	if !inPrefixes(addr, trusted) {
		return addr.String()
	}
	var hops []string
	for _, h := range forwardedFor {
		for _, part := range strings.Split(h, ",") {
			if part = strings.TrimSpace(part); part != "" {
				hops = append(hops, part)
			}
		}
	}
	for i := len(hops) - 1; i >= 0; i-- {
		a, err := netip.ParseAddr(hops[i])
		if err != nil {
			return addr.String()
		}
		a = a.Unmap()
		if !inPrefixes(a, trusted) {
			return a.String()
		}
		addr = a
	}
	return addr.String()
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// Audit actions: what a row of the audit trail says was done.
const (
	AuditKeyCreated       = "key.created"
	AuditKeyRevoked       = "key.revoked"
	AuditKeyChanged       = "key.changed"
	AuditPersonInvited    = "person.invited"
	AuditPersonJoined     = "person.joined"
	AuditPersonRole       = "person.role_changed"
	AuditPersonRemoved    = "person.removed"
	AuditSetupLinkCreated = "person.setup_link_created"
	AuditPasskeyAdded     = "passkey.added"
	AuditPasskeyRemoved   = "passkey.removed"
	AuditPasswordSet      = "password.set"
	AuditBYOKSet          = "byok.set"
	AuditBYOKRemoved      = "byok.removed"
	AuditModeDrafted      = "mode.drafted"
	AuditModeReleased     = "mode.released"
	AuditModeListing      = "mode.listing_changed"
	AuditTestLaunched     = "test.launched"
	AuditTestCancelled    = "test.cancelled"
	AuditCertifyLaunched  = "certify.launched"
	AuditCertifyCancelled = "certify.cancelled"
	AuditSessionsEnded    = "session.ended_by_owner"
	AuditOrgSettings      = "org.settings_changed"
	AuditAppGranted       = "app.granted"
	AuditAppRevoked       = "app.revoked"
)

// AuditActions lists every audit action, in the order above: the audit
// page's filter offers them.
var AuditActions = []string{
	AuditKeyCreated, AuditKeyRevoked, AuditKeyChanged, AuditPersonInvited, AuditPersonJoined, AuditPersonRole,
	AuditPersonRemoved, AuditSetupLinkCreated, AuditPasskeyAdded, AuditPasskeyRemoved, AuditPasswordSet,
	AuditBYOKSet, AuditBYOKRemoved, AuditModeDrafted, AuditModeReleased, AuditModeListing, AuditTestLaunched,
	AuditTestCancelled, AuditCertifyLaunched, AuditCertifyCancelled, AuditSessionsEnded, AuditOrgSettings,
	AuditAppGranted, AuditAppRevoked,
}

// AuditEntry is one row of an organisation's append-only audit trail. It
// never holds a secret: no key, password, passkey material or provider
// credential.
type AuditEntry struct {
	ID     int64
	OrgID  string
	Actor  Actor
	Action string // one of the Audit… constants
	// Object names what was changed ("key_…", "person_…", a mode id, a
	// batch id, a provider name).
	Object string
	// Detail says more, in a few words a reader needs ("role owner →
	// member", "scopes deliberate,estimate"); never a secret.
	Detail string
	At     time.Time
}

// AuditQuery selects audit rows.
type AuditQuery struct {
	OrgID string
	Since time.Time // zero: from the start
	Limit int       // 0: every row
}

// AttemptParams are the inputs of People.SpendAttempt: one attempt spent
// against each subject's budget, all or nothing.
type AttemptParams struct {
	// Subjects are what the attempt counts against ("account:<email>",
	// "address:<ip>"), each with its own budget.
	Subjects []AttemptBudget
}

// AttemptBudget is one subject's budget: at most Limit attempts in any
// Window.
type AttemptBudget struct {
	Subject string
	Limit   int
	Window  time.Duration
}

// CreatePersonParams are the inputs of People.CreatePerson. With OrgID set
// the person joins that organisation with Role in the same transaction.
type CreatePersonParams struct {
	ID    string // optional; a new id when empty
	Email string
	Name  string
	OrgID string
	Role  Role
}

// SetRoleParams are the inputs of People.SetRole.
type SetRoleParams struct {
	OrgID    string
	PersonID string
	Role     Role
}

// CreateInvitationParams are the inputs of People.CreateInvitation.
type CreateInvitationParams struct {
	Hash      []byte
	Kind      string
	OrgID     string
	Email     string
	PersonID  string
	Role      Role
	ExpiresAt time.Time
}

// AcceptInvitationParams are the inputs of People.AcceptInvitation: the
// link is used, and what it grants is written, in one transaction — or
// nothing is.
type AcceptInvitationParams struct {
	Hash []byte
	// PersonID is the signed-in person accepting an invitation made for
	// their email ("" for someone new, who gets the invitation's PersonID).
	PersonID string
	// Name is a new person's display name.
	Name string
	// One credential, for a new person and for a set-up link: a password
	// hash or a passkey (nil for an existing person joining).
	PasswordHash string
	Passkey      *Passkey
	// Session, when set, is created for the person in the same transaction.
	Session *CreateSessionParams
}

// CreateSessionParams are the inputs of People.CreateSession.
type CreateSessionParams struct {
	Hash      []byte // SHA-256 of the cookie's secret
	PersonID  string
	OrgID     string
	Address   string
	ExpiresAt time.Time // the absolute end
}

// People holds people, their memberships, credentials, invitations and
// sessions, the sign-in attempt budgets and the audit trail. Every change
// it makes to an organisation writes its audit row, with ActorOf(ctx), in
// the change's own transaction. Its methods are safe for concurrent use.
type People interface {
	// CreatePerson creates a person (and a membership when OrgID is set).
	// An email already in use returns ErrConflict.
	CreatePerson(ctx context.Context, p *CreatePersonParams) (*Person, error)
	GetPerson(ctx context.Context, id string) (*Person, error)
	PersonByEmail(ctx context.Context, email string) (*Person, error)
	SetPersonName(ctx context.Context, id, name string) (*Person, error)

	// Memberships are the person's organisations, by name.
	Memberships(ctx context.Context, personID string) ([]*Membership, error)
	// Membership is the person's place in one organisation; ErrNotFound
	// when they are not in it.
	Membership(ctx context.Context, personID, orgID string) (*Membership, error)
	// Members are the organisation's people, by email.
	Members(ctx context.Context, orgID string) ([]*Member, error)
	// AddMember adds an existing person to an organisation with role;
	// nothing changes when they are in it already.
	AddMember(ctx context.Context, orgID, personID string, role Role) error
	// SetRole changes a member's role. Demoting the organisation's last
	// owner returns ErrLastOwner, also when two owners demote each other
	// at once.
	SetRole(ctx context.Context, p *SetRoleParams) (*Membership, error)
	// RemoveMember takes the person out of the organisation and ends their
	// sessions in it; removing the last owner returns ErrLastOwner.
	RemoveMember(ctx context.Context, orgID, personID string) error

	// SetPassword stores a password hash (PHC string, parameters
	// included) and ends the person's sessions other than keep (nil: all).
	SetPassword(ctx context.Context, personID, hash string, keep []byte) error
	// PasswordHash is the stored hash; ErrNotFound when the person has
	// none (or does not exist).
	PasswordHash(ctx context.Context, personID string) (string, error)
	AddPasskey(ctx context.Context, pk *Passkey) (*Passkey, error)
	Passkeys(ctx context.Context, personID string) ([]*Passkey, error)
	PasskeyByCredentialID(ctx context.Context, credentialID []byte) (*Passkey, error)
	// UsePasskey records a sign-in with the passkey: its updated record
	// (sign count) and when.
	UsePasskey(ctx context.Context, id string, credential []byte) error
	RemovePasskey(ctx context.Context, personID, id string) error

	CreateInvitation(ctx context.Context, p *CreateInvitationParams) (*Invitation, error)
	// Invitation finds a link by its hash, used or not; ErrNotFound for
	// none.
	Invitation(ctx context.Context, hash []byte) (*Invitation, error)
	// AcceptInvitation uses the link, once: ErrNotFound for an unknown
	// link, ErrGone for a used or expired one.
	AcceptInvitation(ctx context.Context, p *AcceptInvitationParams) (*Person, *Session, error)

	CreateSession(ctx context.Context, p *CreateSessionParams) (*Session, error)
	// Session finds a live session by its hash: ErrNotFound when there is
	// none, or it is past its absolute end or idle for longer than idle.
	// It records the use (at most once a minute, so a busy page costs no
	// write per request).
	Session(ctx context.Context, hash []byte, idle time.Duration) (*Session, error)
	SetSessionOrg(ctx context.Context, hash []byte, orgID string) error
	DeleteSession(ctx context.Context, hash []byte) error
	// EndSessions ends the person's sessions but keep (nil: all), and
	// returns how many ended. With orgID set it is an owner ending a
	// member's sessions, and writes that organisation's audit row.
	EndSessions(ctx context.Context, personID, orgID string, keep []byte) (int, error)

	// PutCeremony keeps a WebAuthn ceremony's state until expires;
	// TakeCeremony returns and deletes it (ErrNotFound when it is gone or
	// expired).
	PutCeremony(ctx context.Context, hash, state []byte, expires time.Time) error
	TakeCeremony(ctx context.Context, hash []byte) ([]byte, error)

	// SpendAttempt spends one sign-in attempt against every subject's
	// budget, in one statement, across replicas: it returns 0 when every
	// budget had room, and otherwise how long until the fullest one has
	// (and then spends nothing).
	SpendAttempt(ctx context.Context, p *AttemptParams) (time.Duration, error)

	// Audit reads an organisation's audit trail, oldest first.
	Audit(ctx context.Context, q *AuditQuery) ([]*AuditEntry, error)
}
