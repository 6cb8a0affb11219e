package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/oauth"
)

// The embedded authorization server's records (api/oauth): the issuer's
// signing key, authorization requests in flight, grants (oauth.GrantStore)
// and refresh tokens. Codes and refresh tokens are stored only as their
// SHA-256, computed by the caller. Every change a person or an app makes to
// a grant writes its audit row in the same statement.

//go:embed oauth_grants_queries.sql
var oauthQueriesSQL string

var oauthQueries = parseQueries(oauthQueriesSQL)

// oq returns the named query of oauth_grants_queries.sql.
func oq(name string) string {
	s, ok := oauthQueries[name]
	if !ok {
		panic(fmt.Sprintf("oauth_grants_queries.sql has no query %q", name))
	}
	return s
}

// nullTime scans a nullable timestamp into a time.Time (NULL → zero).
type nullTime time.Time

func (n *nullTime) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n = nullTime{}
	case time.Time:
		*n = nullTime(v)
	default:
		return fmt.Errorf("scanning %T into a time", src)
	}
	return nil
}

func grantCols(g *oauth.Grant) []any {
	return []any{&g.ID, &g.ClientID, &g.ClientName, &g.Verified, &g.PersonID, &g.OrgID, &g.Scopes, &g.Resource,
		&g.CreatedAt, &g.LastUsedAt, (*nullTime)(&g.RevokedAt)}
}

func authRequestCols(r *oauth.AuthRequest) []any {
	return []any{&r.ID, &r.ClientID, &r.RedirectURI, &r.State, &r.Nonce, &r.Scopes, &r.CodeChallenge, &r.Resource,
		&r.Done, &r.PersonID, &r.OrgID, &r.GrantID, &r.CodeIssued, &r.CreatedAt, &r.ExpiresAt}
}

// EnsureSigningKey returns the issuer's active signing key, storing
// candidate as it when there is none yet: of replicas calling it together,
// one candidate wins and every replica gets that one.
func (s *Store) EnsureSigningKey(ctx context.Context, candidate *oauth.SigningKey) (*oauth.SigningKey, error) {
	if _, err := s.pool.Exec(ctx, oq("InsertSigningKey"), candidate.ID, candidate.Algorithm, candidate.PrivateKey); err != nil {
		return nil, fmt.Errorf("storing a signing key: %w", translate(err))
	}
	keys, err := s.SigningKeys(ctx)
	if err != nil {
		return nil, err
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("reading the signing key back: %w", core.ErrNotFound)
	}
	return keys[0], nil
}

// SigningKeys returns the issuer's signing keys, the active one first,
// then retired ones still verifying the tokens they signed.
func (s *Store) SigningKeys(ctx context.Context) ([]*oauth.SigningKey, error) {
	keys, err := collect(ctx, s, oq("SigningKeys"), func(rows pgx.Rows) (*oauth.SigningKey, error) {
		var k oauth.SigningKey
		return &k, rows.Scan(&k.ID, &k.Algorithm, &k.PrivateKey, &k.CreatedAt)
	})
	if err != nil {
		return nil, fmt.Errorf("reading the signing keys: %w", err)
	}
	return keys, nil
}

// CreateAuthRequest stores an authorization request awaiting consent; its
// ID and ExpiresAt are set by the caller.
func (s *Store) CreateAuthRequest(ctx context.Context, r *oauth.AuthRequest) error {
	err := s.pool.QueryRow(ctx, oq("InsertAuthRequest"), r.ID, r.ClientID, r.RedirectURI, r.State, r.Nonce, r.Scopes,
		r.CodeChallenge, r.Resource, r.ExpiresAt).Scan(&r.CreatedAt)
	if err != nil {
		return fmt.Errorf("storing authorization request: %w", translate(err))
	}
	return nil
}

// AuthRequest finds an unexpired authorization request; core.ErrNotFound
// when there is none (unknown, expired, or its code exchanged).
func (s *Store) AuthRequest(ctx context.Context, id string) (*oauth.AuthRequest, error) {
	var r oauth.AuthRequest
	if err := s.pool.QueryRow(ctx, oq("AuthRequest"), id).Scan(authRequestCols(&r)...); err != nil {
		return nil, translate(err)
	}
	return &r, nil
}

// SetAuthCode records the code of a consented request; core.ErrNotFound
// when the request is not waiting for one (not consented, expired, or its
// code already handed out).
func (s *Store) SetAuthCode(ctx context.Context, id string, codeHash []byte) error {
	tag, err := s.pool.Exec(ctx, oq("SetAuthCode"), id, codeHash)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 0 {
		return core.ErrNotFound
	}
	return nil
}

// TakeAuthCode returns the consented request whose code hashes to
// codeHash and deletes it, so that a code is exchanged once;
// core.ErrNotFound when there is none, it expired, or its grant was
// revoked.
func (s *Store) TakeAuthCode(ctx context.Context, codeHash []byte) (*oauth.AuthRequest, error) {
	var r oauth.AuthRequest
	if err := s.pool.QueryRow(ctx, oq("TakeAuthCode"), codeHash).Scan(authRequestCols(&r)...); err != nil {
		return nil, translate(err)
	}
	return &r, nil
}

// DeleteAuthRequest deletes an authorization request (a denied one).
func (s *Store) DeleteAuthRequest(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, oq("DeleteAuthRequest"), id)
	return translate(err)
}

// DeleteExpiredAuthRequests deletes the authorization requests that
// expired before at and says how many.
func (s *Store) DeleteExpiredAuthRequests(ctx context.Context, at time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, oq("DeleteExpiredAuthRequests"), at)
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}

// ApproveAuthRequest records a person's consent to the waiting request id:
// it creates g (its ID, ClientName, Verified, PersonID and OrgID set by the
// caller; its client, scopes and resource the request's), marks the
// request done under it and writes the audit row, as core.ActorOf(ctx).
// core.ErrNotFound when the request no longer waits (unknown, expired,
// already answered) or the person is not a member of the organisation.
func (s *Store) ApproveAuthRequest(ctx context.Context, id string, g *oauth.Grant) (*oauth.Grant, error) {
	a := core.ActorOf(ctx)
	name := g.ClientName
	if name == "" {
		name = "an unnamed app"
	}
	var out oauth.Grant
	err := s.pool.QueryRow(ctx, oq("ApproveAuthRequest"), id, g.ID, g.PersonID, g.OrgID, g.ClientName, g.Verified,
		a.Kind, a.ID, a.Address, core.AuditAppGranted, name).Scan(grantCols(&out)...)
	if err != nil {
		return nil, fmt.Errorf("granting %s: %w", name, translateWrite(err))
	}
	return &out, nil
}

// Grant implements oauth.GrantStore.
func (s *Store) Grant(ctx context.Context, id string) (*oauth.Grant, error) {
	var g oauth.Grant
	if err := s.pool.QueryRow(ctx, oq("Grant"), id).Scan(grantCols(&g)...); err != nil {
		return nil, translate(err)
	}
	return &g, nil
}

// ListGrants implements oauth.GrantStore.
func (s *Store) ListGrants(ctx context.Context, orgID, personID string) ([]*oauth.Grant, error) {
	gs, err := collect(ctx, s, oq("ListGrants"), func(rows pgx.Rows) (*oauth.Grant, error) {
		var g oauth.Grant
		return &g, rows.Scan(grantCols(&g)...)
	}, orgID, personID)
	if err != nil {
		return nil, fmt.Errorf("listing the grants of %s: %w", orgID, err)
	}
	return gs, nil
}

// RevokeGrant implements oauth.GrantStore, as core.ActorOf(ctx).
func (s *Store) RevokeGrant(ctx context.Context, orgID, id string) (*oauth.Grant, error) {
	return s.revokeGrant(ctx, orgID, id, "")
}

// RevokeReusedGrant revokes a grant one of whose refresh tokens was
// presented after its rotation, saying so in the audit trail.
func (s *Store) RevokeReusedGrant(ctx context.Context, orgID, id string) (*oauth.Grant, error) {
	return s.revokeGrant(ctx, orgID, id, ": a refresh token was used twice")
}

func (s *Store) revokeGrant(ctx context.Context, orgID, id, why string) (*oauth.Grant, error) {
	a := core.ActorOf(ctx)
	var g oauth.Grant
	err := s.pool.QueryRow(ctx, oq("RevokeGrant"), orgID, id, a.Kind, a.ID, a.Address, core.AuditAppRevoked, why).
		Scan(grantCols(&g)...)
	if errors.Is(err, pgx.ErrNoRows) {
		// Not standing: revoked before (returned as it is), or not the
		// organisation's.
		old, err := s.Grant(ctx, id)
		if err != nil || old.OrgID != orgID {
			return nil, fmt.Errorf("revoking grant %s: %w", id, core.ErrNotFound)
		}
		return old, nil
	}
	if err != nil {
		return nil, fmt.Errorf("revoking grant %s: %w", id, translate(err))
	}
	return &g, nil
}

// TouchGrant records that a token was issued under the grant (at most once
// a minute).
func (s *Store) TouchGrant(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, oq("TouchGrant"), id)
	return translate(err)
}

// IssueRefreshToken stores a refresh token (its hash) under a standing
// grant; core.ErrNotFound when the grant is unknown or revoked.
func (s *Store) IssueRefreshToken(ctx context.Context, grantID string, hash []byte, expires time.Time) error {
	tag, err := s.pool.Exec(ctx, oq("InsertRefreshToken"), hash, grantID, expires)
	if err != nil {
		return fmt.Errorf("storing a refresh token: %w", translate(err))
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("storing a refresh token of grant %s: %w", grantID, core.ErrNotFound)
	}
	return nil
}

// RefreshToken finds a refresh token by its hash, with its grant (which
// may be revoked, and the token used or expired: the caller judges);
// core.ErrNotFound when there is none.
func (s *Store) RefreshToken(ctx context.Context, hash []byte) (*oauth.RefreshToken, *oauth.Grant, error) {
	var t oauth.RefreshToken
	var g oauth.Grant
	err := s.pool.QueryRow(ctx, oq("RefreshToken"), hash).Scan(append([]any{(*nullTime)(&t.UsedAt), &t.ExpiresAt},
		grantCols(&g)...)...)
	if err != nil {
		return nil, nil, translate(err)
	}
	t.GrantID = g.ID
	return &t, &g, nil
}

// RotateRefreshToken replaces the live refresh token oldHash by newHash,
// expiring at expires, and records the grant's use; oauth.ErrRefreshReused
// when oldHash is not live (used before — by a concurrent rotation too —,
// expired, or its grant revoked).
func (s *Store) RotateRefreshToken(ctx context.Context, oldHash, newHash []byte, expires time.Time) error {
	var id string
	err := s.pool.QueryRow(ctx, oq("RotateRefreshToken"), oldHash, newHash, expires).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return oauth.ErrRefreshReused
	}
	if err != nil {
		return fmt.Errorf("rotating a refresh token: %w", translate(err))
	}
	return nil
}

// DeleteExpiredRefreshTokens deletes the refresh tokens, used or not, that
// expired before at and says how many.
func (s *Store) DeleteExpiredRefreshTokens(ctx context.Context, at time.Time) (int, error) {
	tag, err := s.pool.Exec(ctx, oq("DeleteExpiredRefreshTokens"), at)
	if err != nil {
		return 0, translate(err)
	}
	return int(tag.RowsAffected()), nil
}

// TouchClient records that a registered client was used (at most once an
// hour), so that DeleteUnusedClients keeps it.
func (s *Store) TouchClient(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, oq("TouchClient"), id)
	return translate(err)
}

var _ oauth.GrantStore = (*Store)(nil)
