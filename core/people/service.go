// Package people is Conclave's service for the people of an organisation:
// sign-in with passkeys (WebAuthn) and passwords (argon2id), server-side
// sessions, invitations and set-up links, owner and member roles, and the
// changes only a person of the right role may make (people and roles,
// keys, bring-your-own-key credentials). What each role may do is the
// entitlement policy's to decide (access.Service, with the person and the
// role in its input); this package asks it, counts attempts, hashes, and
// writes through core.People, whose every change writes its audit row.
// The pages (api/web) and the operator's CLI are thin carriers over it.
package people

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/oauth"
)

// Config configures a Service. Every duration and count has a default.
type Config struct {
	// PublicURL is the one origin of the pages ("http://localhost:8080"):
	// the passkey relying party's id is its host and its origin is it.
	// Required.
	PublicURL string
	// SessionIdle ends a session not used for this long. Defaults to 12h.
	SessionIdle time.Duration
	// SessionMaxAge ends a session this long after sign-in, used or not.
	// Defaults to 7 days.
	SessionMaxAge time.Duration
	// LinkTTL is how long an invitation or a set-up link stays usable.
	// Defaults to 7 days.
	LinkTTL time.Duration
	// MaxConcurrentHashes bounds the password hashes computed at once, so
	// sign-in attempts cannot exhaust memory or cores; an attempt that
	// finds none free waits for one (bounded by its context). Defaults to 2.
	MaxConcurrentHashes int
	// AccountAttempts is how many sign-in attempts one account (by email,
	// known or not) may take in AttemptWindow; AddressAttempts, one client
	// address. Defaults to 10 and 50.
	AccountAttempts int
	AddressAttempts int
	// AttemptWindow defaults to 15 minutes.
	AttemptWindow time.Duration
	// Argon2 are the parameters of new password hashes; a stored hash keeps
	// its own, so they can be raised. Defaults to DefaultArgon2.
	Argon2 Argon2Params
}

// Argon2Params are argon2id's cost parameters.
type Argon2Params struct {
	Time      uint32 // passes. Defaults to 2.
	MemoryKiB uint32 // Defaults to 19456 (19 MiB), OWASP's minimum for argon2id.
	Threads   uint8  // Defaults to 1.
}

// CredentialMaker makes the stored form of a bring-your-own-key credential: it
// checks the key (or role) and seals it, as plugins/byok does for the
// operator's CLI — one rule, one place.
type CredentialMaker interface {
	NewKeyCredential(orgID, provider, apiKey string) (*core.ProviderCredential, error)
	NewRoleCredential(orgID, roleARN, externalID string) (*core.ProviderCredential, error)
}

// Deps are what a Service works with.
type Deps struct {
	// Store holds people, sessions, links and the audit trail. Required.
	Store core.People
	// Orgs reads organisations and changes their settings. Required.
	Orgs interface {
		GetOrg(ctx context.Context, id string) (*core.Org, error)
		SetOrgTranscripts(ctx context.Context, orgID string, keep bool) (*core.Org, error)
	}
	// Keys creates, lists and revokes API keys. Required.
	Keys core.Keys
	// Credentials holds BYOK credentials; Maker checks and seals new ones
	// (cmd wires plugins/byok's). Optional: without them the BYOK methods
	// answer service_unavailable (bring-your-own-key is off).
	Credentials core.ProviderCredentials
	Maker       CredentialMaker
	// Access asks the policy. Required.
	Access *access.Service
	// Grants holds connected apps' grants. Optional: without it the apps
	// methods answer service_unavailable (the embedded authorization
	// server is off).
	Grants oauth.GrantStore
}

// SignedIn is the result of a sign-in: the cookie's secret (set it, never
// log it), the session and the person.
type SignedIn struct {
	Secret  string
	Session *core.Session
	Person  *core.Person
}

// FieldError refuses one field of a form, with the message to show beside
// it. Pages show it there and keep what was typed (secrets aside).
type FieldError struct {
	Field   string
	Message string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// LinkView is what the page of an invitation or set-up link shows before it
// is used.
type LinkView struct {
	Kind    string // core.InvitationInvite or core.InvitationSetup
	OrgName string
	Email   string
	Role    core.Role
	// Existing is true when a person with Email already exists: they
	// accept an invitation by signing in, not by registering.
	Existing  bool
	ExpiresAt time.Time
}

// Ceremony is a WebAuthn ceremony begun: Options is the JSON the page
// passes to navigator.credentials.create or .get (as the WebAuthn JSON
// serialisation: base64url fields), and Secret names its server-side state
// (a cookie or a hidden field carries it back; it is single-use and expires
// in five minutes).
type Ceremony struct {
	Options []byte
	Secret  string
}

// NewKey is a key to create for a person; the secret is returned once.
type NewKey struct {
	Name   string
	Test   bool
	Scopes []string // nil: every scope the creator's role may grant (asked of the policy)
	Modes  []string
}

// ErrSignInUnavailable is returned when sign-in cannot be checked (the
// database is down): the page answers 503, and nobody is signed in.
var ErrSignInUnavailable = core.Errorf(core.CodeServiceUnavailable, "Sign-in is unavailable right now. Try again shortly.")

// DefaultArgon2 are the argon2id parameters of new password hashes: OWASP's
// minimum for argon2id (19 MiB, two passes, one lane).
var DefaultArgon2 = Argon2Params{Time: 2, MemoryKiB: 19456, Threads: 1}

// WithDefaults returns c with zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&c.SessionIdle, 12*time.Hour)
	def(&c.SessionMaxAge, 7*24*time.Hour)
	def(&c.LinkTTL, 7*24*time.Hour)
	def(&c.AttemptWindow, 15*time.Minute)
	if c.MaxConcurrentHashes == 0 {
		c.MaxConcurrentHashes = 2
	}
	if c.AccountAttempts == 0 {
		c.AccountAttempts = 10
	}
	if c.AddressAttempts == 0 {
		c.AddressAttempts = 50
	}
	if c.Argon2 == (Argon2Params{}) {
		c.Argon2 = DefaultArgon2
	}
	return c
}

func (c Config) validate() error {
	u, err := url.Parse(c.PublicURL)
	switch {
	case c.PublicURL == "":
		return errors.New("people: PublicURL is required")
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "":
		return fmt.Errorf("people: PublicURL %q is not an http(s) origin", c.PublicURL)
	case c.SessionIdle < 0 || c.SessionMaxAge < c.SessionIdle:
		return errors.New("people: SessionMaxAge must be at least SessionIdle")
	case c.LinkTTL < 0 || c.AttemptWindow < 0:
		return errors.New("people: LinkTTL and AttemptWindow cannot be negative")
	case c.MaxConcurrentHashes < 1 || c.AccountAttempts < 1 || c.AddressAttempts < 1:
		return errors.New("people: MaxConcurrentHashes, AccountAttempts and AddressAttempts must be at least 1")
	case c.Argon2.Time < 1 || c.Argon2.MemoryKiB < 8 || c.Argon2.Threads < 1:
		return errors.New("people: Argon2 needs a time, memory and threads of at least 1, 8 KiB and 1")
	}
	return nil
}

// Service is the people service. It is safe for concurrent use.
type Service struct {
	cfg    Config
	d      Deps
	origin string // scheme://host[:port], no path
	wa     *webauthn.WebAuthn

	// hashes bounds the password hashes computed at once; dummy is a hash
	// an unknown email is checked against, so that it costs what a wrong
	// password does.
	hashes chan struct{}
	dummy  string
	// hashing counts hashes in progress, its peak, and every hash
	// computed (HashStats).
	hashingNow, hashPeak, hashed atomic.Int64
}

// New returns a Service.
func New(cfg Config, d Deps) (*Service, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if d.Store == nil || d.Orgs == nil || d.Keys == nil || d.Access == nil {
		return nil, errors.New("people: Store, Orgs, Keys and Access are required")
	}
	u, _ := url.Parse(cfg.PublicURL)
	origin := u.Scheme + "://" + u.Host
	wa, err := webauthn.New(&webauthn.Config{
		RPID: u.Hostname(), RPDisplayName: "Conclave", RPOrigins: []string{origin},
	})
	if err != nil {
		return nil, fmt.Errorf("people: the passkey relying party of %s: %w", origin, err)
	}
	s := &Service{cfg: cfg, d: d, origin: origin, wa: wa, hashes: make(chan struct{}, cfg.MaxConcurrentHashes)}
	s.dummy = hashPassword(randomBytes(24), cfg.Argon2)
	return s, nil
}

// Config returns the service's configuration with its defaults.
func (s *Service) Config() Config { return s.cfg }

// Origin is the one origin of the pages (scheme://host[:port]).
func (s *Service) Origin() string { return s.origin }

// HashStats reports the password hashes computed so far and the most ever
// computed at once (never more than MaxConcurrentHashes).
func (s *Service) HashStats() (total, peak int64) { return s.hashed.Load(), s.hashPeak.Load() }

// newSecret returns a fresh secret (32 random bytes, base64url) and its
// stored form, its SHA-256.
func newSecret() (string, []byte) {
	secret := base64.RawURLEncoding.EncodeToString(randomBytes(32))
	return secret, hashSecret(secret)
}

// hashSecret is the stored form of a session, link or ceremony secret; nil
// for one that is not 32 bytes of base64url (forged or mangled: it cannot
// match, and costs no lookup).
func hashSecret(secret string) []byte {
	b, err := base64.RawURLEncoding.DecodeString(secret)
	if err != nil || len(b) != 32 {
		return nil
	}
	return core.HashKey(secret) // the SHA-256 every stored secret is kept as
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic("crypto/rand failed: " + err.Error())
	}
	return b
}

// unavailable is the answer when the store fails on the way to signing in.
func unavailable(err error) error {
	return ErrSignInUnavailable.WithCause(err)
}

// act returns ctx carrying p as the actor of the changes made with it.
func act(ctx context.Context, p *access.Principal) context.Context {
	return core.WithActor(ctx, p.Actor())
}
