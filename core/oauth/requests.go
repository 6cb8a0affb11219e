package oauth

import (
	"errors"
	"time"
)

// AuthRequestTTL is how long an authorization request waits for the
// person's consent and then for its code's exchange.
const AuthRequestTTL = 10 * time.Minute

// RefreshTokenTTL is how long an unused refresh token lives. Each use
// rotates it, so an app in use stays connected; one left unused this long
// signs the person in again.
const RefreshTokenTTL = 30 * 24 * time.Hour

// ErrRefreshReused is a refresh token presented after it was rotated: its
// grant is revoked, since either the app or a thief holds a stale copy.
var ErrRefreshReused = errors.New("refresh token already used")

// AuthRequest is an authorization request (RFC 6749 §4.1.1) between the
// app's redirect to /authorize and the exchange of its code: what the app
// asked for, checked, and once the person consented, whom and which grant
// it is for.
type AuthRequest struct {
	ID          string
	ClientID    string
	RedirectURI string
	State       string
	Nonce       string
	// Scopes are those asked for that Conclave serves (offline_access
	// included when asked).
	Scopes []string
	// CodeChallenge is the PKCE challenge; its method is always S256.
	CodeChallenge string
	// Resource is the RFC 8707 resource the token is for: {issuer}/mcp.
	Resource string
	// Done is set once the person consented; PersonID, OrgID and GrantID
	// with it.
	Done     bool
	PersonID string
	OrgID    string
	GrantID  string
	// CodeIssued is set once its code was handed out: a request yields one
	// code.
	CodeIssued bool
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// RefreshToken is a stored refresh token: only its SHA-256 is kept.
type RefreshToken struct {
	GrantID string
	// UsedAt is when it was rotated; zero while it is the grant's live one.
	UsedAt    time.Time
	ExpiresAt time.Time
}

// SigningKey is the issuer's key that signs access tokens, shared by every
// replica through the database.
type SigningKey struct {
	// ID is the JWS key id (kid).
	ID string
	// Algorithm is the JWS algorithm ("RS256").
	Algorithm string
	// PrivateKey is the key in PKCS #8 DER.
	PrivateKey []byte
	CreatedAt  time.Time
}

// ConsentRequest is what the consent page shows of an authorization
// request awaiting a person's answer.
type ConsentRequest struct {
	ID string
	// ClientName is the app's name as it declared it ("" when it gave
	// none).
	ClientName string
	ClientID   string
	// Verified is true when the app is known by its metadata document's
	// URL (CIMD): VerifiedHost is that URL's host. False when it
	// registered itself (DCR): its name is only its own word.
	Verified     bool
	VerifiedHost string
	// RedirectURI is where the browser goes back to; RedirectHost its host
	// (the scheme for a private-use URI such as cursor://…).
	RedirectURI  string
	RedirectHost string
	// LoopbackOnly is true when every redirect URI the app registered is
	// on this computer (loopback or a private-use scheme): anyone can
	// claim to be such an app.
	LoopbackOnly bool
	// Scopes are the scopes asked for, offline_access included when asked
	// (Offline).
	Scopes  []string
	Offline bool
}
