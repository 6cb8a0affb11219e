package pgstore_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/oauth"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// oauthBundle is a store with an organisation and a member in it, and a
// person who is not.
type oauthBundle struct {
	store    *pgstore.Store
	org      *core.Org
	member   *core.Person
	stranger *core.Person
}

func oauthSetup(t *testing.T) *oauthBundle {
	t.Helper()
	ctx := context.Background()
	store := pgstore.New(pgtest.NewPool(t))
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	member, err := store.CreatePerson(ctx, &core.CreatePersonParams{Email: "mia@acme.example", Name: "Mia", OrgID: org.ID, Role: core.RoleMember})
	require.NoError(t, err)
	stranger, err := store.CreatePerson(ctx, &core.CreatePersonParams{Email: "sam@else.example", Name: "Sam"})
	require.NoError(t, err)
	return &oauthBundle{store: store, org: org, member: member, stranger: stranger}
}

// newRequest stores a waiting authorization request.
func (b *oauthBundle) newRequest(t *testing.T, expires time.Time) *oauth.AuthRequest {
	t.Helper()
	r := &oauth.AuthRequest{ID: core.NewID("authreq"), ClientID: "https://app.example/client.json",
		RedirectURI: "http://127.0.0.1:5555/cb", State: "st", Scopes: []string{"deliberate", oauth.ScopeOffline},
		CodeChallenge: "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM", Resource: "http://localhost:8080/mcp", ExpiresAt: expires}
	require.NoError(t, b.store.CreateAuthRequest(context.Background(), r))
	return r
}

// approve grants the request to the member.
func (b *oauthBundle) approve(t *testing.T, r *oauth.AuthRequest) *oauth.Grant {
	t.Helper()
	ctx := core.WithActor(context.Background(), core.Actor{Kind: core.ActorPerson, ID: b.member.ID, Address: "192.0.2.7"})
	g, err := b.store.ApproveAuthRequest(ctx, r.ID, &oauth.Grant{ID: core.NewID("grant"), ClientName: "Example App", Verified: true,
		PersonID: b.member.ID, OrgID: b.org.ID})
	require.NoError(t, err)
	return g
}

func (b *oauthBundle) audit(t *testing.T, action string) []*core.AuditEntry {
	t.Helper()
	rows, err := b.store.Audit(context.Background(), &core.AuditQuery{OrgID: b.org.ID})
	require.NoError(t, err)
	var out []*core.AuditEntry
	for _, r := range rows {
		if r.Action == action {
			out = append(out, r)
		}
	}
	return out
}

// Two replicas creating the issuer's key together agree on one.
func TestOAuthSigningKeyIsOneAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	var wg sync.WaitGroup
	got := make([]*oauth.SigningKey, 8)
	for i := range got {
		pool, err := pgxpool.New(context.Background(), url)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		store := pgstore.New(pool)
		wg.Go(func() {
			k, err := store.EnsureSigningKey(context.Background(), &oauth.SigningKey{ID: core.NewID("key"), Algorithm: "RS256",
				PrivateKey: []byte{byte(i)}})
			require.NoError(t, err)
			got[i] = k
		})
	}
	wg.Wait()
	for _, k := range got {
		require.Equal(t, got[0].ID, k.ID)
		require.Equal(t, got[0].PrivateKey, k.PrivateKey)
	}
}

// A request waits for consent, is approved once (the grant written and
// audited), yields one code, and that code is exchanged once.
func TestOAuthAuthRequestConsentAndCode(t *testing.T) {
	t.Parallel()
	b := oauthSetup(t)
	ctx := context.Background()
	r := b.newRequest(t, time.Now().Add(oauth.AuthRequestTTL))

	got, err := b.store.AuthRequest(ctx, r.ID)
	require.NoError(t, err)
	require.False(t, got.Done)
	require.Equal(t, r.Scopes, got.Scopes)
	require.ErrorIs(t, b.store.SetAuthCode(ctx, r.ID, hashOf("early")), core.ErrNotFound, "no code before consent")

	// A person outside the organisation cannot approve in its name.
	_, err = b.store.ApproveAuthRequest(ctx, r.ID, &oauth.Grant{ID: core.NewID("grant"), PersonID: b.stranger.ID, OrgID: b.org.ID})
	require.ErrorIs(t, err, core.ErrNotFound)

	g := b.approve(t, r)
	require.Equal(t, r.ClientID, g.ClientID)
	require.Equal(t, r.Scopes, g.Scopes)
	require.Equal(t, r.Resource, g.Resource)
	require.False(t, g.Revoked())
	_, err = b.store.ApproveAuthRequest(ctx, r.ID, &oauth.Grant{ID: core.NewID("grant"), PersonID: b.member.ID, OrgID: b.org.ID})
	require.ErrorIs(t, err, core.ErrNotFound, "a request is answered once")

	granted := b.audit(t, core.AuditAppGranted)
	require.Len(t, granted, 1)
	require.Equal(t, g.ID, granted[0].Object)
	require.Equal(t, b.member.ID, granted[0].Actor.ID)
	require.Contains(t, granted[0].Detail, "Example App (verified, https://app.example/client.json): deliberate offline_access")

	got, err = b.store.AuthRequest(ctx, r.ID)
	require.NoError(t, err)
	require.True(t, got.Done)
	require.Equal(t, g.ID, got.GrantID)

	require.NoError(t, b.store.SetAuthCode(ctx, r.ID, hashOf("code")))
	require.ErrorIs(t, b.store.SetAuthCode(ctx, r.ID, hashOf("code2")), core.ErrNotFound, "one code per request")
	_, err = b.store.TakeAuthCode(ctx, hashOf("wrong"))
	require.ErrorIs(t, err, core.ErrNotFound)
	taken, err := b.store.TakeAuthCode(ctx, hashOf("code"))
	require.NoError(t, err)
	require.Equal(t, b.member.ID, taken.PersonID)
	require.Equal(t, b.org.ID, taken.OrgID)
	_, err = b.store.TakeAuthCode(ctx, hashOf("code"))
	require.ErrorIs(t, err, core.ErrNotFound, "a code is exchanged once")

	// An expired request is gone; the sweep deletes it.
	old := b.newRequest(t, time.Now().Add(-time.Second))
	_, err = b.store.AuthRequest(ctx, old.ID)
	require.ErrorIs(t, err, core.ErrNotFound)
	n, err := b.store.DeleteExpiredAuthRequests(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, n)

	// A code whose grant was revoked before its exchange is refused.
	r2 := b.newRequest(t, time.Now().Add(oauth.AuthRequestTTL))
	g2 := b.approve(t, r2)
	require.NoError(t, b.store.SetAuthCode(ctx, r2.ID, hashOf("code-3")))
	_, err = b.store.RevokeGrant(ctx, b.org.ID, g2.ID)
	require.NoError(t, err)
	_, err = b.store.TakeAuthCode(ctx, hashOf("code-3"))
	require.ErrorIs(t, err, core.ErrNotFound)
}

// A refresh token rotates once; its reuse is recognised and the grant
// revoked, which ends every refresh token of it.
func TestOAuthRefreshTokenRotation(t *testing.T) {
	t.Parallel()
	b := oauthSetup(t)
	ctx := context.Background()
	g := b.approve(t, b.newRequest(t, time.Now().Add(oauth.AuthRequestTTL)))
	exp := time.Now().Add(oauth.RefreshTokenTTL)
	require.NoError(t, b.store.IssueRefreshToken(ctx, g.ID, hashOf("rt1"), exp))

	rt, rg, err := b.store.RefreshToken(ctx, hashOf("rt1"))
	require.NoError(t, err)
	require.Equal(t, g.ID, rt.GrantID)
	require.True(t, rt.UsedAt.IsZero())
	require.Equal(t, b.member.ID, rg.PersonID)

	require.NoError(t, b.store.RotateRefreshToken(ctx, hashOf("rt1"), hashOf("rt2"), exp))
	rt, _, err = b.store.RefreshToken(ctx, hashOf("rt1"))
	require.NoError(t, err)
	require.False(t, rt.UsedAt.IsZero(), "the old token is kept, marked used")
	require.ErrorIs(t, b.store.RotateRefreshToken(ctx, hashOf("rt1"), hashOf("rt3"), exp), oauth.ErrRefreshReused)

	// Concurrent rotations of one token: exactly one wins.
	var wg sync.WaitGroup
	wins := make([]bool, 8)
	for i := range wins {
		wg.Go(func() {
			wins[i] = b.store.RotateRefreshToken(ctx, hashOf("rt2"), hashOf("rt2-"+string(rune('a'+i))), exp) == nil
		})
	}
	wg.Wait()
	n := 0
	for _, w := range wins {
		if w {
			n++
		}
	}
	require.Equal(t, 1, n)

	revoked, err := b.store.RevokeReusedGrant(ctx, b.org.ID, g.ID)
	require.NoError(t, err)
	require.True(t, revoked.Revoked())
	_, _, err = b.store.RefreshToken(ctx, hashOf("rt2"))
	require.ErrorIs(t, err, core.ErrNotFound, "a revoked grant's refresh tokens are deleted")
	require.ErrorIs(t, b.store.IssueRefreshToken(ctx, g.ID, hashOf("rt9"), exp), core.ErrNotFound, "none is issued under it")
	rows := b.audit(t, core.AuditAppRevoked)
	require.Len(t, rows, 1)
	require.Equal(t, "Example App: a refresh token was used twice", rows[0].Detail)
	require.Equal(t, core.ActorSystem, rows[0].Actor.Kind)

	// Expired tokens are swept.
	g2 := b.approve(t, b.newRequest(t, time.Now().Add(oauth.AuthRequestTTL)))
	require.NoError(t, b.store.IssueRefreshToken(ctx, g2.ID, hashOf("old"), time.Now().Add(-time.Minute)))
	require.ErrorIs(t, b.store.RotateRefreshToken(ctx, hashOf("old"), hashOf("new"), exp), oauth.ErrRefreshReused, "expired")
	swept, err := b.store.DeleteExpiredRefreshTokens(ctx, time.Now())
	require.NoError(t, err)
	require.Equal(t, 1, swept)
}

// Grants are listed per organisation and per person, newest first; a
// revocation is audited once and is the organisation's only.
func TestOAuthGrantsListAndRevoke(t *testing.T) {
	t.Parallel()
	b := oauthSetup(t)
	ctx := context.Background()
	g1 := b.approve(t, b.newRequest(t, time.Now().Add(oauth.AuthRequestTTL)))
	g2 := b.approve(t, b.newRequest(t, time.Now().Add(oauth.AuthRequestTTL)))

	all, err := b.store.ListGrants(ctx, b.org.ID, "")
	require.NoError(t, err)
	require.Len(t, all, 2)
	require.Equal(t, g2.ID, all[0].ID, "newest first")
	mine, err := b.store.ListGrants(ctx, b.org.ID, b.member.ID)
	require.NoError(t, err)
	require.Len(t, mine, 2)
	none, err := b.store.ListGrants(ctx, b.org.ID, b.stranger.ID)
	require.NoError(t, err)
	require.Empty(t, none)

	other, _, err := b.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other", Ticker: "OTHR"})
	require.NoError(t, err)
	_, err = b.store.RevokeGrant(ctx, other.ID, g1.ID)
	require.ErrorIs(t, err, core.ErrNotFound, "another organisation's grant")

	actor := core.WithActor(ctx, core.Actor{Kind: core.ActorPerson, ID: b.member.ID})
	r1, err := b.store.RevokeGrant(actor, b.org.ID, g1.ID)
	require.NoError(t, err)
	require.True(t, r1.Revoked())
	r2, err := b.store.RevokeGrant(actor, b.org.ID, g1.ID)
	require.NoError(t, err)
	require.Equal(t, r1.RevokedAt, r2.RevokedAt, "a second revocation changes nothing")
	rows := b.audit(t, core.AuditAppRevoked)
	require.Len(t, rows, 1)
	require.Equal(t, "Example App", rows[0].Detail)

	got, err := b.store.Grant(ctx, g1.ID)
	require.NoError(t, err)
	require.True(t, got.Revoked())
	_, err = b.store.Grant(ctx, "grant_nope")
	require.ErrorIs(t, err, core.ErrNotFound)
}

// Registered clients: stored, found, touched when used, and deleted once
// unused past the retention.
func TestOAuthRegisteredClients(t *testing.T) {
	t.Parallel()
	store := pgstore.New(pgtest.NewPool(t))
	ctx := context.Background()
	c := &oauth.RegisteredClient{ID: core.NewID("client"), Address: "192.0.2.1", Client: oauth.Client{Native: true,
		ClientMetadata: oauth.ClientMetadata{ClientName: "Cursor", RedirectURIs: []string{"http://localhost:8787/callback"}}}}
	require.NoError(t, store.RegisterClient(ctx, c))
	got, err := store.RegisteredClient(ctx, c.ID)
	require.NoError(t, err)
	require.Equal(t, "Cursor", got.ClientName)
	require.True(t, got.Native)
	_, err = store.RegisteredClient(ctx, "client_nope")
	require.ErrorIs(t, err, core.ErrNotFound)

	_, err = store.Pool().Exec(ctx, `UPDATE oauth_clients SET last_used_at = now() - interval '40 days' WHERE id = $1`, c.ID)
	require.NoError(t, err)
	require.NoError(t, store.TouchClient(ctx, c.ID))
	n, err := store.DeleteUnusedClients(ctx, time.Now().Add(-30*24*time.Hour))
	require.NoError(t, err)
	require.Zero(t, n, "a client used now is kept")

	_, err = store.Pool().Exec(ctx, `UPDATE oauth_clients SET last_used_at = now() - interval '40 days' WHERE id = $1`, c.ID)
	require.NoError(t, err)
	n, err = store.DeleteUnusedClients(ctx, time.Now().Add(-30*24*time.Hour))
	require.NoError(t, err)
	require.Equal(t, 1, n)
}
