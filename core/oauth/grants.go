package oauth

import (
	"context"
	"time"
)

// Claims of a connected app's access token besides the registered ones
// (iss, sub = the person's id, aud = {public_url}/mcp, exp, iat, jti).
const (
	ClaimOrg      = "org_id"    // the organisation the app acts in
	ClaimGrant    = "grant_id"  // the grant the token was issued under
	ClaimClientID = "client_id" // the app (RFC 9068)
	ClaimScope    = "scope"     // space-separated (RFC 9068)
)

// ScopeOffline is the scope a client asks for to get a refresh token. It
// is never a scope of /mcp: the protected-resource document leaves it out.
const ScopeOffline = "offline_access"

// AccessTokenTTL is how long an access token lives.
const AccessTokenTTL = 10 * time.Minute

// Token is a connected app's access token that verified: signed by the
// issuer, for /mcp, unexpired. Whether its grant still stands is asked of
// the GrantStore.
type Token struct {
	// PersonID is the token's subject.
	PersonID string
	OrgID    string
	GrantID  string
	ClientID string
	// Scopes are the scopes granted, offline_access left out.
	Scopes  []string
	Expires time.Time
	// Issuer is the authorization server that signed the token.
	Issuer string
	// External is true for a token of another authorization server
	// (auth.authorization_servers): it has no grant here (GrantID ""), its
	// PersonID is its sub, Email its email claim when verified, and OrgID
	// its org_id claim, "" when it has none.
	External bool
	Email    string
}

// Grant is a person's consent to a connected app: the app may act for the
// person in one organisation, with these scopes, until the grant is
// revoked. Every access and refresh token is issued under one grant;
// revoking it ends them all.
type Grant struct {
	ID       string
	ClientID string
	// ClientName is the app's name as it declared it.
	ClientName string
	// Verified is true when the app's identity is its metadata document's
	// host (CIMD), false when it registered itself (DCR).
	Verified  bool
	PersonID  string
	OrgID     string
	Scopes    []string
	Resource  string
	CreatedAt time.Time
	// LastUsedAt is when a token was last issued under the grant.
	LastUsedAt time.Time
	// RevokedAt is zero while the grant stands.
	RevokedAt time.Time
}

// Revoked reports whether g was revoked.
func (g *Grant) Revoked() bool { return !g.RevokedAt.IsZero() }

// GrantStore keeps grants. Its methods are safe for concurrent use.
type GrantStore interface {
	// Grant finds a grant by id; core.ErrNotFound when none.
	Grant(ctx context.Context, id string) (*Grant, error)
	// ListGrants lists an organisation's grants, newest first: every
	// person's when personID is "", else that person's. Revoked grants are
	// listed too.
	ListGrants(ctx context.Context, orgID, personID string) ([]*Grant, error)
	// RevokeGrant revokes a grant of the organisation and every refresh
	// token issued under it; core.ErrNotFound when the organisation has no
	// such grant. Revoking a revoked grant changes nothing and returns it.
	// A revocation writes its core.AuditAppRevoked row, by the actor of ctx
	// (core.ActorOf), in the same transaction; creating a grant writes
	// core.AuditAppGranted the same way.
	RevokeGrant(ctx context.Context, orgID, id string) (*Grant, error)
}
