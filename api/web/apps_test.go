package web_test

import (
	"context"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
)

// grantApp has the bundle's owner approve an app in ACME, as the consent
// page does through the authorization server, and returns the grant.
func (b *consentBundle) grantApp(t *testing.T, clientID, name string, verified bool) *coreoauth.Grant {
	t.Helper()
	ctx := core.WithActor(context.Background(), core.Actor{Kind: core.ActorPerson, ID: b.owner.ID, Address: "127.0.0.1"})
	req := &coreoauth.AuthRequest{ID: core.NewID("authreq"), ClientID: clientID, RedirectURI: "http://127.0.0.1:9/callback",
		Scopes: []string{"models:read", "deliberate"}, CodeChallenge: "x", Resource: b.origin + "/mcp",
		ExpiresAt: time.Now().Add(time.Minute)}
	require.NoError(t, b.store.CreateAuthRequest(ctx, req))
	g, err := b.store.ApproveAuthRequest(ctx, req.ID, &coreoauth.Grant{ID: core.NewID("grant"), ClientName: name, Verified: verified,
		PersonID: b.owner.ID, OrgID: b.org.ID})
	require.NoError(t, err)
	return g
}

// The connected apps page: the owner sees the organisation's apps — which
// is verified and which registered itself, whose each is, its scopes —
// and disconnects one after confirming; the list then says so and the
// audit trail has it.
func TestBrowserAppsPage(t *testing.T) {
	t.Parallel()
	b := setupConsent(t)
	b.grantApp(t, "https://claude.ai/oauth/mcp-oauth-client-metadata", "Claude", true)
	cli := b.grantApp(t, "client_cli", "Some CLI", false)
	ctx := browser(t)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/apps")))
	waitText(t, ctx, "With a password")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#email"), "olive@acme.example"),
		chromedp.SendKeys(chromedp.CSS("#password"), ownerPassword),
		chromedp.Click(chromedp.CSS(`form[action="/sign-in"] button`))))
	waitText(t, ctx, "Connected apps of Acme")
	page := text(t, ctx)
	for _, want := range []string{"Claude", "verified: https://claude.ai/oauth/mcp-oauth-client-metadata", "Some CLI",
		"self-declared (registered itself)", "olive@acme.example", "models:read, deliberate"} {
		require.Contains(t, page, want)
	}
	shoot(t, ctx, "apps")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/apps/"+cli.ID+"/revoke")))
	waitText(t, ctx, "Disconnect Some CLI?")
	require.NoError(t, chromedp.Do(ctx, chromedp.Submit(chromedp.CSS(`form[action="/apps/`+cli.ID+`/revoke"]`))))
	waitText(t, ctx, "App disconnected")
	require.Contains(t, text(t, ctx), "disconnected")
	g, err := b.store.Grant(context.Background(), cli.ID)
	require.NoError(t, err)
	require.True(t, g.Revoked())
	require.Equal(t, 1, b.audit(t)[core.AuditAppRevoked])

	// A disconnected app has no disconnect page; another's id is unknown.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/apps/"+cli.ID+"/revoke")))
	waitText(t, ctx, "There is no page at this address")
}
