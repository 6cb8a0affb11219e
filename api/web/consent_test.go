package web_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api/web"
	"github.com/conclavehq/conclave/core"
	coreoauth "github.com/conclavehq/conclave/core/oauth"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/deptest"
)

// The pages never import the OAuth library: the consent page reaches the
// authorization server through the web.Consent interface.
func TestConsentPageImportRule(t *testing.T) {
	t.Parallel()
	deptest.Check(t, deptest.Rule{Packages: "api/web", Forbidden: []string{"github.com/zitadel", "github.com/go-jose"}})
}

// fakeConsent is the authorization server's side of the page: requests
// by id, and the answers given.
type fakeConsent struct {
	mu       sync.Mutex
	requests map[string]*coreoauth.ConsentRequest
	approved map[string][2]string // id → person, org
	denied   []string
	origin   string
}

func (f *fakeConsent) Pending(_ context.Context, id string) (*coreoauth.ConsentRequest, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.approved[id]; ok {
		return nil, core.ErrGone
	}
	r, ok := f.requests[id]
	if !ok {
		return nil, core.ErrNotFound
	}
	return r, nil
}

func (f *fakeConsent) Approve(ctx context.Context, id, personID, orgID string) (string, error) {
	if _, err := f.Pending(ctx, id); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approved[id] = [2]string{personID, orgID}
	return f.origin + "/approved?id=" + id, nil
}

func (f *fakeConsent) Deny(ctx context.Context, id string) (string, error) {
	if _, err := f.Pending(ctx, id); err != nil {
		return "", err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.denied = append(f.denied, id)
	return f.origin + "/denied?error=access_denied", nil
}

// consentBundle is the bundle's people behind a second server of the pages
// with the consent page on.
type consentBundle struct {
	*bundle
	consent *fakeConsent
	origin  string
	beta    *core.Org
}

func setupConsent(t *testing.T) *consentBundle {
	t.Helper()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)
	ln := listenLoopback(t)
	origin := "http://localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	fc := &fakeConsent{origin: origin, approved: map[string][2]string{}, requests: map[string]*coreoauth.ConsentRequest{
		"req_claude": {ID: "req_claude", ClientName: "Claude", ClientID: "https://claude.ai/oauth/mcp-oauth-client-metadata",
			Verified: true, VerifiedHost: "claude.ai", RedirectURI: "https://claude.ai/api/mcp/auth_callback",
			RedirectHost: "claude.ai", Scopes: []string{"deliberate", "models:read", "estimate", "offline_access"}, Offline: true},
		"req_cli": {ID: "req_cli", ClientName: "Some CLI", ClientID: "client_x", RedirectURI: "http://127.0.0.1:53682/callback",
			RedirectHost: "127.0.0.1:53682", LoopbackOnly: true, Scopes: core.AllScopes},
	}}
	pages, err := web.New(web.Config{PublicURL: origin}, web.Deps{People: b.people, Health: b.store, Consent: fc})
	require.NoError(t, err)
	srv := &http.Server{Handler: pages, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	// The owner is in a second organisation too: the page lets them pick.
	beta, _, err := b.store.CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Beta Labs", Ticker: "BETA"})
	require.NoError(t, err)
	require.NoError(t, b.store.AddMember(context.Background(), beta.ID, b.owner.ID, core.RoleMember))
	return &consentBundle{bundle: b, consent: fc, origin: origin, beta: beta}
}

// A signed-out person sent to the consent page signs in first and comes
// back to it; it names the app, how it is known, where the browser goes
// back to and what it may do, in an organisation they pick; Allow grants
// it there, Deny refuses. A loopback-only app is flagged.
func TestBrowserConsentPage(t *testing.T) {
	t.Parallel()
	b := setupConsent(t)
	ctx := browser(t)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+web.ConsentPath+"?id=req_claude")))
	waitText(t, ctx, "With a password")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#email"), "olive@acme.example"),
		chromedp.SendKeys(chromedp.CSS("#password"), ownerPassword),
		chromedp.Click(chromedp.CSS(`form[action="/sign-in"] button`))))
	waitText(t, ctx, "Connect Claude?")
	page := text(t, ctx)
	for _, want := range []string{"Verified: claude.ai", "you go back to claude.ai", "Acme Research", "Beta Labs",
		"Run deliberations, billed to the organisation", "Stay connected without asking you again"} {
		require.Contains(t, page, want)
	}
	require.NotContains(t, page, "any program can say")
	shoot(t, ctx, "consent")

	// Allow, in Beta Labs.
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`input[name="org"][value="`+b.beta.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`button[value="approve"]`))))
	waitText(t, ctx, "There is no page at this address")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.Equal(t, b.origin+"/approved?id=req_claude", loc)
	b.consent.mu.Lock()
	require.Equal(t, [2]string{b.owner.ID, b.beta.ID}, b.consent.approved["req_claude"])
	b.consent.mu.Unlock()

	// Answered already.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+web.ConsentPath+"?id=req_claude")))
	waitText(t, ctx, "already answered")

	// A loopback-only app that registered itself.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+web.ConsentPath+"?id=req_cli")))
	waitText(t, ctx, "Connect Some CLI?")
	page = text(t, ctx)
	require.Contains(t, page, "Self-declared")
	require.Contains(t, page, "any program can say it is Some CLI")
	require.Contains(t, page, "127.0.0.1:53682")
	shoot(t, ctx, "consent-loopback")
	click(t, ctx, `button[value="deny"]`)
	waitText(t, ctx, "There is no page at this address")
	b.consent.mu.Lock()
	require.Equal(t, []string{"req_cli"}, b.consent.denied)
	b.consent.mu.Unlock()
}

// Without a browser: the page allows the answer's redirect to the app in
// its form-action, refuses an organisation the person is not in, and an
// unknown request is a clear page.
func TestConsentPageHTTP(t *testing.T) {
	t.Parallel()
	b := setupConsent(t)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.PostForm(b.origin+"/sign-in", url.Values{"email": {"olive@acme.example"}, "password": {ownerPassword}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)

	res, err = c.Get(b.origin + web.ConsentPath + "?id=req_cli")
	require.NoError(t, err)
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Security-Policy"), "form-action 'self' http://127.0.0.1:53682;")
	require.Contains(t, string(body), `name="decision" value="approve"`)

	res, err = c.PostForm(b.origin+web.ConsentPath, url.Values{"id": {"req_cli"}, "decision": {"approve"}, "org": {"org_notmine"}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusBadRequest, res.StatusCode)
	b.consent.mu.Lock()
	require.Empty(t, b.consent.approved)
	b.consent.mu.Unlock()

	res, err = c.Get(b.origin + web.ConsentPath + "?id=req_nope")
	require.NoError(t, err)
	body, _ = io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.True(t, strings.Contains(string(body), "expired or is not valid"))

	res, err = c.PostForm(b.origin+web.ConsentPath, url.Values{"id": {"req_cli"}, "decision": {"approve"}, "org": {b.org.ID}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, b.origin+"/approved?id=req_cli", res.Header.Get("Location"))
}
