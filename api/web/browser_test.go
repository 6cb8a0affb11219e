package web_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/browsertest"
)

// The pages in a real browser: Debian's headless Chromium, driven through
// the DevTools protocol. One browser serves the whole package; each test
// has its own browser context (its own cookies) and tabs.

// browser returns a fresh browser context (cookies of its own) on the
// package's one browser (internal/browsertest).
func browser(t *testing.T) context.Context { return browsertest.New(t) }

// virtualAuthenticator gives the tab of ctx Chrome's virtual authenticator:
// a platform authenticator that keeps discoverable credentials and verifies
// its user, answering every request at once.
func virtualAuthenticator(t *testing.T, ctx context.Context) {
	t.Helper()
	off := false
	_, err := chromedp.Call(ctx, webauthn.Enable, webauthn.EnableParams{EnableUI: &off})
	require.NoError(t, err)
	_, err = chromedp.Call(ctx, webauthn.AddVirtualAuthenticator, webauthn.AddVirtualAuthenticatorParams{
		Options: &webauthn.VirtualAuthenticatorOptions{
			Protocol: webauthn.AuthenticatorProtocolCtap2, Ctap2version: webauthn.Ctap2versionCtap21,
			Transport: webauthn.AuthenticatorTransportInternal, HasResidentKey: true, HasUserVerification: true,
			IsUserVerified: true, AutomaticPresenceSimulation: true,
		}})
	require.NoError(t, err)
}

// shoot, text, waitText and click are internal/browsertest's Shoot, Text,
// WaitText and Click under the names these tests use.
func shoot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	browsertest.Shoot(t, ctx, name)
}

func text(t *testing.T, ctx context.Context) string { t.Helper(); return browsertest.Text(t, ctx) }

func waitText(t *testing.T, ctx context.Context, want string) {
	t.Helper()
	browsertest.WaitText(t, ctx, want)
}

func click(t *testing.T, ctx context.Context, sel string) {
	t.Helper()
	browsertest.Click(t, ctx, sel)
}

// A demo owner opens their set-up link, registers a passkey through
// Chrome's virtual authenticator, signs out, and signs in with it.
func TestBrowserOwnerRegistersAPasskeyAndSignsInWithIt(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	ctx := browser(t)
	virtualAuthenticator(t, ctx)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.ownerLink),
		chromedp.WaitVisible(chromedp.CSS(`button[data-passkey="create"]`))))
	require.Contains(t, text(t, ctx), "olive@acme.example")
	shoot(t, ctx, "setup-link")

	click(t, ctx, `button[data-passkey="create"]`)
	waitText(t, ctx, "Hello, Olive Owner")
	require.Contains(t, text(t, ctx), "owner of Acme Research")
	shoot(t, ctx, "home")

	pks, err := b.store.Passkeys(context.Background(), b.owner.ID)
	require.NoError(t, err)
	require.Len(t, pks, 1, "the passkey is stored")

	// The link worked once.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.ownerLink)))
	waitText(t, ctx, "already used or has expired")
	shoot(t, ctx, "link-used")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/account")))
	waitText(t, ctx, "Passkeys")
	shoot(t, ctx, "account")

	click(t, ctx, `form[action="/sign-out"] button`)
	waitText(t, ctx, "With a passkey")
	shoot(t, ctx, "sign-in")

	click(t, ctx, `button[data-passkey="get"]`)
	waitText(t, ctx, "Hello, Olive Owner")

	pks, err = b.store.Passkeys(context.Background(), b.owner.ID)
	require.NoError(t, err)
	require.NotNil(t, pks[0].LastUsedAt, "the sign-in used the passkey")
	audit := b.audit(t)
	require.Equal(t, 1, audit[core.AuditPasskeyAdded])
	require.Equal(t, 1, audit[core.AuditPersonJoined])
}

// An owner invites a member from the people page; the member sets a
// password, signs in, and is refused the owner-only actions: the people
// page in the browser, BYOK at the core service.
func TestBrowserOwnerInvitesAMemberWhoIsRefusedOwnersActions(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	owner := browser(t)

	// The owner sets a password through their link.
	require.NoError(t, chromedp.Do(owner, chromedp.Navigate(b.ownerLink),
		chromedp.SendKeys(chromedp.CSS("#password"), "a long owner passphrase"),
		chromedp.Click(chromedp.CSS(`#link-form button[type="submit"]`))))
	waitText(t, owner, "Hello, Olive Owner")

	require.NoError(t, chromedp.Do(owner, chromedp.Navigate(b.origin+"/people")))
	waitText(t, owner, "Invite someone")
	// A bad email is refused beside its field, and what was typed stays.
	require.NoError(t, chromedp.Do(owner, chromedp.SendKeys(chromedp.CSS("#email"), "not an email"),
		chromedp.Click(chromedp.CSS(`form[action="/people/invite"] button`))))
	waitText(t, owner, "Enter one email address")
	typed, err := chromedp.Run(owner, chromedp.Value(chromedp.CSS("#email")))
	require.NoError(t, err)
	require.Equal(t, "not an email", typed)

	require.NoError(t, chromedp.Do(owner, chromedp.SetValue(chromedp.CSS("#email"), "mia@acme.example"),
		chromedp.Click(chromedp.CSS(`form[action="/people/invite"] button`))))
	waitText(t, owner, "Invitation link")
	link, err := chromedp.Run(owner, chromedp.Value(chromedp.CSS("#new-link")))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(link, b.origin+"/link/"), link)
	shoot(t, owner, "people-invited")

	// The member, in a browser of their own.
	member := browser(t)
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#name"))))
	require.Contains(t, text(t, member), "member of Acme Research")
	shoot(t, member, "invitation")
	// Too short a password: refused beside the field; the name stays.
	require.NoError(t, chromedp.Do(member, chromedp.SendKeys(chromedp.CSS("#name"), "Mia Member"),
		chromedp.SendKeys(chromedp.CSS("#password"), "short"),
		chromedp.Click(chromedp.CSS(`#link-form button[type="submit"]`))))
	waitText(t, member, "Use at least 12 characters")
	name, err := chromedp.Run(member, chromedp.Value(chromedp.CSS("#name")))
	require.NoError(t, err)
	require.Equal(t, "Mia Member", name)
	shoot(t, member, "invitation-error")

	require.NoError(t, chromedp.Do(member, chromedp.SendKeys(chromedp.CSS("#password"), "mia's own long passphrase"),
		chromedp.Click(chromedp.CSS(`#link-form button[type="submit"]`))))
	waitText(t, member, "Hello, Mia Member")
	require.Contains(t, text(t, member), "member of Acme Research")

	// Signing in again with the password.
	require.NoError(t, chromedp.Do(member, chromedp.Click(chromedp.CSS(`form[action="/sign-out"] button`))))
	waitText(t, member, "With a password")
	require.NoError(t, chromedp.Do(member, chromedp.SendKeys(chromedp.CSS("#email"), "mia@acme.example"),
		chromedp.SendKeys(chromedp.CSS("#password"), "mia's own long passphrase"),
		chromedp.Click(chromedp.CSS(`form[action="/sign-in"] button`))))
	waitText(t, member, "Hello, Mia Member")

	// The people page is an owner's.
	require.NoError(t, chromedp.Do(member, chromedp.Navigate(b.origin+"/people")))
	waitText(t, member, "Not allowed")
	require.Contains(t, text(t, member), "you are a member of Acme Research")
	shoot(t, member, "people-refused")

	// BYOK at the core service: the member is refused, the owner may.
	mia, err := b.store.PersonByEmail(context.Background(), "mia@acme.example")
	require.NoError(t, err)
	_, err = b.people.SetBYOK(context.Background(), b.principal(t, mia), core.ProviderOpenAI, "sk-test-0123456789abcdef0123", "", "")
	var ce *core.Error
	require.True(t, errors.As(err, &ce), "%v", err)
	require.Equal(t, core.CodeForbidden, ce.Code)
	_, err = b.people.SetBYOK(context.Background(), b.principal(t, b.owner), core.ProviderOpenAI, "sk-test-0123456789abcdef0123", "", "")
	require.NoError(t, err)

	audit := b.audit(t)
	require.Equal(t, 1, audit[core.AuditPersonInvited])
	require.Equal(t, 2, audit[core.AuditPersonJoined], "the owner, then the member")
	require.Equal(t, 1, audit[core.AuditBYOKSet], "only the owner's")
}

// A form posted to the pages from another site is refused, and changes
// nothing; a session idle past its timeout is signed out.
func TestBrowserForgedCrossSitePostAndIdleSession(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	ctx := browser(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.ownerLink),
		chromedp.SendKeys(chromedp.CSS("#password"), "a long owner passphrase"),
		chromedp.Click(chromedp.CSS(`#link-form button[type="submit"]`))))
	waitText(t, ctx, "Hello, Olive Owner")

	// Another site's page posts an invitation form to the pages.
	evil := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = io.WriteString(w, fmt.Sprintf(`<!doctype html><main><form method="post" action="%s/people/invite">
<input name="email" value="mallory@evil.example"><input name="role" value="owner">
<button id="go" type="submit">Win a prize</button></form></main>`, b.origin))
	}), ReadHeaderTimeout: 10 * time.Second}
	ln := listenLoopback(t)
	go func() { _ = evil.Serve(ln) }()
	t.Cleanup(func() { _ = evil.Close() })
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate("http://"+ln.Addr().String()+"/"),
		chromedp.Click(chromedp.CSS("#go"))))
	waitText(t, ctx, "came from another site")
	shoot(t, ctx, "cross-site-refused")
	require.Zero(t, b.audit(t)[core.AuditPersonInvited], "no invitation was made")

	// The session is idle past its timeout: signed out.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/")))
	waitText(t, ctx, "Hello, Olive Owner")
	_, err := b.store.Pool().Exec(context.Background(),
		`UPDATE sessions SET last_seen_at = now() - interval '13 hours' WHERE person_id = $1`, b.owner.ID)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/account")))
	waitText(t, ctx, "Sign in")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(loc, b.origin+"/sign-in"), loc)
}

// A person of one organisation is invited into another. Signed out, the
// link sends them to sign in and back; they join, and choose between their
// organisations. On the account page they add a passkey and remove it.
func TestBrowserExistingPersonJoinsAnotherOrganisation(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)
	ctx := context.Background()
	beta, _, err := b.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Beta Labs", Ticker: "BETA"})
	require.NoError(t, err)
	bob, _, err := b.people.CreatePerson(core.WithActor(ctx, core.Operator), beta.ID, "bob@beta.example", "Bob Beta", core.RoleOwner)
	require.NoError(t, err)
	bobP := &access.Principal{Kind: core.PrincipalSession, Person: bob, Role: core.RoleOwner, Org: beta, Address: "127.0.0.1"}
	invite, _, err := b.people.Invite(ctx, bobP, "olive@acme.example", core.RoleMember)
	require.NoError(t, err)

	tab := browser(t)
	virtualAuthenticator(t, tab)
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(invite)))
	waitText(t, tab, "You already have an account")
	require.Contains(t, text(t, tab), "member of Beta Labs, as olive@acme.example")
	shoot(t, tab, "invitation-existing")

	// Signing in comes back to the link, which now offers to join.
	click(t, tab, `main a[href^="/sign-in"]`)
	waitText(t, tab, "With a password")
	// Just after the navigation: Fill and click try again while Chrome
	// renumbers the page's nodes.
	browsertest.Fill(t, tab, "#email", "olive@acme.example")
	browsertest.Fill(t, tab, "#password", ownerPassword)
	click(t, tab, `form[action="/sign-in"] button`)
	require.NoError(t, chromedp.Do(tab, chromedp.WaitVisible(chromedp.CSS(`form[action$="/accept"] button`))))
	shoot(t, tab, "invitation-join")
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`form[action$="/accept"] button`))))
	waitText(t, tab, "Hello, Olive Owner")
	require.Contains(t, text(t, tab), "member of Beta Labs", "the organisation joined is the current one")
	joined, err := b.store.Audit(ctx, &core.AuditQuery{OrgID: beta.ID})
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(joined, func(e *core.AuditEntry) bool { return e.Action == core.AuditPersonJoined }),
		"the join is in Beta's audit trail")

	// Choosing the organisation to act in.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(b.origin+"/orgs")))
	waitText(t, tab, "Act in")
	shoot(t, tab, "orgs")
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`input[name="org"][value="`+b.org.ID+`"]`)),
		chromedp.Click(chromedp.CSS(`form[action="/orgs"] button`))))
	waitText(t, tab, "Switched organisation.")
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(b.origin+"/")))
	waitText(t, tab, "owner of Acme Research")

	// A passkey added from the account page, then removed.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(b.origin+"/account"),
		chromedp.SendKeys(chromedp.CSS("#pkname"), "Work laptop"),
		chromedp.Click(chromedp.CSS(`button[data-passkey="create"]`))))
	waitText(t, tab, "Passkey added.")
	require.Contains(t, text(t, tab), "Work laptop")
	shoot(t, tab, "account-passkey-added")
	require.NoError(t, chromedp.Do(tab, chromedp.Click(chromedp.CSS(`form[action$="/remove"] button`))))
	waitText(t, tab, "Passkey removed.")
	pks, err := b.store.Passkeys(ctx, b.owner.ID)
	require.NoError(t, err)
	require.Empty(t, pks)

	// A forged link: a clear page.
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate(b.origin+"/link/forged")))
	waitText(t, tab, "Link not valid")
	shoot(t, tab, "link-not-valid")
}

// A member creates a key on the keys page (shown once, with the curl line
// to try it), calls the API with it, revokes it after a confirmation, and
// the call is refused; the owner sees every key with its creator, the
// member only their own.
func TestBrowserKeysCreateUseRevoke(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	ctx := browser(t)
	link, _, err := b.people.Invite(context.Background(), b.principal(t, b.owner), "kim@acme.example", core.RoleMember)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(link),
		chromedp.SendKeys(chromedp.CSS("#name"), "Kim Member"),
		chromedp.SendKeys(chromedp.CSS("#password"), "kim's long passphrase"),
		chromedp.Click(chromedp.CSS(`#link-form button[type="submit"]`))))
	waitText(t, ctx, "Hello, Kim Member")
	_, _, err = b.people.CreateKey(context.Background(), b.principal(t, b.owner), &people.NewKey{Name: "owner's ci"})
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/keys")))
	waitText(t, ctx, "No keys yet of yours")
	require.NotContains(t, text(t, ctx), "owner's ci", "a member sees only their own keys")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#name"), "kim's laptop"),
		chromedp.Click(chromedp.CSS(`form[action="/keys"] button`))))
	waitText(t, ctx, "Your new key")
	secret, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#new-key")))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(secret, "ccl_live_"), secret)
	require.Contains(t, text(t, ctx), "curl -s -H \"Authorization: Bearer "+secret+"\" "+b.origin+"/v1/models")
	shoot(t, ctx, "keys-created")

	kp, err := b.acc.Authenticate(context.Background(), secret)
	require.NoError(t, err, "the key works")
	require.Equal(t, "kim's laptop", kp.Key.Name)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/keys")))
	waitText(t, ctx, "kim's laptop")
	click(t, ctx, `a[href$="/revoke"]`)
	waitText(t, ctx, "cannot be restored")
	shoot(t, ctx, "keys-revoke-confirm")
	click(t, ctx, `form[action$="/revoke"] button`)
	waitText(t, ctx, "Key revoked")
	shoot(t, ctx, "keys")
	_, err = b.acc.Authenticate(context.Background(), secret)
	require.Equal(t, core.CodeRevokedAPIKey, core.AsError(err).Code, "the revoked key is refused")

	// The owner sees both keys, each with its creator.
	all, err := b.people.Keys(context.Background(), b.principal(t, b.owner))
	require.NoError(t, err)
	require.Len(t, all, 2)
	audit := b.audit(t)
	require.Equal(t, 2, audit[core.AuditKeyCreated])
	require.Equal(t, 1, audit[core.AuditKeyRevoked])
}
