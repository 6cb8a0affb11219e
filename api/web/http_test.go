package web_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api/web"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/policies"
)

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func fetch(t testing.TB, req *http.Request) (*http.Response, string) {
	t.Helper()
	res, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func newRequest(t testing.TB, method, u string, form url.Values) *http.Request {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	return req
}

// Every page carries the security headers; a page asked for on another
// host name is redirected to the one origin.
func TestHeadersAndOneOrigin(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	res, body := fetch(t, newRequest(t, "GET", b.origin+"/sign-in", nil))
	require.Equal(t, 200, res.StatusCode)
	csp := res.Header.Get("Content-Security-Policy")
	require.Contains(t, csp, "script-src 'self'")
	require.Contains(t, csp, "frame-ancestors 'none'")
	require.NotContains(t, csp, "unsafe-inline")
	require.Equal(t, "same-origin", res.Header.Get("Referrer-Policy"))
	require.Equal(t, "nosniff", res.Header.Get("X-Content-Type-Options"))
	require.Empty(t, res.Header.Get("Strict-Transport-Security"), "no HSTS over http")
	require.NotContains(t, body, "<script>", "no inline script")

	res, _ = fetch(t, newRequest(t, "GET", b.ipURL+"/sign-in?next=/account", nil))
	require.Equal(t, http.StatusFound, res.StatusCode)
	require.Equal(t, b.origin+"/sign-in?next=/account", res.Header.Get("Location"))

	res, _ = fetch(t, newRequest(t, "GET", b.origin+"/account", nil))
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "signed out: to the sign-in page")
	require.True(t, strings.HasPrefix(res.Header.Get("Location"), "/sign-in?next="))
}

// A stale or forged cookie is a signed-out visitor, never an error; bad
// links get a clear page and change nothing; a wrong password keeps the
// email typed.
func TestSignedOutAnswers(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	req := newRequest(t, "GET", b.origin+"/account", nil)
	req.AddCookie(&http.Cookie{Name: web.CookieName, Value: "forged"})
	res, _ := fetch(t, req)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	cleared := false
	for _, c := range res.Cookies() {
		if c.Name == web.CookieName && c.MaxAge < 0 {
			cleared = true
		}
	}
	require.True(t, cleared, "the forged cookie is cleared")

	res, body := fetch(t, newRequest(t, "GET", b.origin+"/link/not-a-link", nil))
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	require.Contains(t, body, "not valid")

	req = newRequest(t, "POST", b.origin+"/sign-in", url.Values{"email": {"olive@acme.example"}, "password": {"not the password"}})
	req.Header.Set("Origin", b.origin)
	res, body = fetch(t, req)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, body, `value="olive@acme.example"`, "the email stays typed")
	require.Contains(t, body, "not right")
	require.NotContains(t, body, "not the password", "a secret is never echoed")

	// A cross-site POST is refused before it reaches the form.
	req = newRequest(t, "POST", b.origin+"/sign-in", url.Values{"email": {"olive@acme.example"}, "password": {"x"}})
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	res, _ = fetch(t, req)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
}

// With PostgreSQL gone the sign-in page says sign-in is unavailable (503),
// and nobody is signed in.
func TestSignInUnavailableWithoutTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, pgtest.NewDatabase(t))
	require.NoError(t, err)
	store := pgstore.New(pool)
	authz, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)
	acc, err := access.New(access.Config{}, store, authz, store)
	require.NoError(t, err)
	ln := listenLoopback(t)
	origin := "http://localhost:" + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
	svc, err := people.New(people.Config{PublicURL: origin}, people.Deps{Store: store, Orgs: store, Keys: store, Access: acc})
	require.NoError(t, err)
	h, err := web.New(web.Config{PublicURL: origin}, web.Deps{People: svc, Health: store})
	require.NoError(t, err)
	srv := &http.Server{Handler: h}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	pool.Close() // the database is gone

	req := newRequest(t, "POST", origin+"/sign-in", url.Values{"email": {"olive@acme.example"}, "password": {"a long enough password"}})
	req.Header.Set("Origin", origin)
	res, body := fetch(t, req)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Contains(t, body, "Sign-in is unavailable")
	require.Empty(t, res.Cookies(), "no session")

	res, body = fetch(t, newRequest(t, "GET", origin+"/sign-in", nil))
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode, "the page says so before anyone types")
	require.Contains(t, body, "Sign-in is unavailable")

	req = newRequest(t, "GET", origin+"/sign-in", nil)
	req.AddCookie(&http.Cookie{Name: web.CookieName, Value: "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"})
	res, body = fetch(t, req)
	require.Equal(t, http.StatusServiceUnavailable, res.StatusCode)
	require.Contains(t, body, "Sign-in is unavailable")
}

// Under an https public URL the pages send HSTS and the session cookie is
// Secure.
func TestHTTPSPublicURL(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	h, err := web.New(web.Config{PublicURL: "https://conclave.example"}, web.Deps{People: b.people})
	require.NoError(t, err)
	req := httptest.NewRequest("GET", "https://conclave.example/sign-in", nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	require.Equal(t, 200, rec.Code)
	require.Contains(t, rec.Header().Get("Strict-Transport-Security"), "max-age=")

	req = httptest.NewRequest("POST", "https://conclave.example/sign-out", nil)
	req.Header.Set("Origin", "https://conclave.example")
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	cookies := rec.Result().Cookies()
	require.NotEmpty(t, cookies)
	require.True(t, cookies[0].Secure)
	require.True(t, cookies[0].HttpOnly)
	require.Equal(t, http.SameSiteLaxMode, cookies[0].SameSite)
}

// signIn posts the sign-in form as a browser of the one origin would and
// returns the session cookie it sets, and the cookie it was sent with
// (nil for none).
func signIn(t testing.TB, b *bundle, email, password string, with *http.Cookie) *http.Cookie {
	t.Helper()
	req := newRequest(t, "POST", b.origin+"/sign-in", url.Values{"email": {email}, "password": {password}})
	req.Header.Set("Origin", b.origin)
	if with != nil {
		req.AddCookie(with)
	}
	res, body := fetch(t, req)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	c := sessionCookie(res)
	require.NotNil(t, c, "a session cookie is set")
	return c
}

func sessionCookie(res *http.Response) *http.Cookie {
	for _, c := range res.Cookies() {
		if c.Name == web.CookieName {
			return c
		}
	}
	return nil
}

// get fetches a page with a session cookie.
func get(t testing.TB, b *bundle, path string, c *http.Cookie) (*http.Response, string) {
	t.Helper()
	req := newRequest(t, "GET", b.origin+path, nil)
	req.AddCookie(c)
	return fetch(t, req)
}

// The session cookie is host-only, HttpOnly and SameSite=Lax; signing in
// again rotates it (the old session ends); signing out clears it and ends
// the session.
func TestSessionCookieRotatesAndSignsOut(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)

	first := signIn(t, b, "olive@acme.example", ownerPassword, nil)
	require.True(t, first.HttpOnly)
	require.False(t, first.Secure, "not Secure over http")
	require.Equal(t, http.SameSiteLaxMode, first.SameSite)
	require.Equal(t, "/", first.Path)
	require.Empty(t, first.Domain, "host-only")
	res, body := get(t, b, "/", first)
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, body, "owner</strong> of <strong>Acme Research")

	second := signIn(t, b, "olive@acme.example", ownerPassword, first)
	require.NotEqual(t, first.Value, second.Value, "a new session at sign-in")
	res, _ = get(t, b, "/account", first)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "the old session ended")
	res, _ = get(t, b, "/account", second)
	require.Equal(t, 200, res.StatusCode)

	req := newRequest(t, "POST", b.origin+"/sign-out", url.Values{})
	req.Header.Set("Origin", b.origin)
	req.AddCookie(second)
	res, _ = fetch(t, req)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/sign-in", res.Header.Get("Location"))
	cleared := sessionCookie(res)
	require.NotNil(t, cleared)
	require.Negative(t, cleared.MaxAge, "the cookie is cleared")
	res, _ = get(t, b, "/account", second)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "the session ended")
}

// A signed-in owner's browser posting from another site — by Origin or by
// Sec-Fetch-Site — is refused with 403 and nothing changes; the same post
// from the one origin works.
func TestCrossSitePostIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)
	c := signIn(t, b, "olive@acme.example", ownerPassword, nil)
	form := url.Values{"email": {"mallory@evil.example"}, "role": {"owner"}}

	for _, forged := range []map[string]string{
		{"Origin": "http://evil.example"},
		{"Origin": "null"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site", "Origin": "http://sub.localhost"},
	} {
		req := newRequest(t, "POST", b.origin+"/people/invite", form)
		req.AddCookie(c)
		for k, v := range forged {
			req.Header.Set(k, v)
		}
		res, body := fetch(t, req)
		require.Equal(t, http.StatusForbidden, res.StatusCode, "%v", forged)
		require.Contains(t, body, "came from another site")
		require.Contains(t, res.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	}
	require.Zero(t, b.audit(t)[core.AuditPersonInvited], "no invitation was made")

	req := newRequest(t, "POST", b.origin+"/people/invite", form)
	req.AddCookie(c)
	req.Header.Set("Origin", b.origin)
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	res, body := fetch(t, req)
	require.Equal(t, http.StatusCreated, res.StatusCode, body)
	require.Contains(t, body, b.origin+"/link/", "the new link is shown once")
	require.Equal(t, 1, b.audit(t)[core.AuditPersonInvited])

	res, body = get(t, b, "/people", c)
	require.Equal(t, 200, res.StatusCode)
	require.NotContains(t, body, b.origin+"/link/", "and never again")
}

// Too many sign-in attempts: the page says how long to wait (and
// Retry-After does), the email stays typed, and the right password does
// not get in until then.
func TestRateLimitedSignInShowsTheWait(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{AccountAttempts: 2})
	b.setOwnerPassword(t)
	var (
		res  *http.Response
		body string
	)
	for _, password := range []string{"wrong one", "wrong two", ownerPassword} {
		req := newRequest(t, "POST", b.origin+"/sign-in", url.Values{"email": {"olive@acme.example"}, "password": {password}})
		req.Header.Set("Origin", b.origin)
		res, body = fetch(t, req)
	}
	require.Equal(t, http.StatusTooManyRequests, res.StatusCode)
	require.Contains(t, body, "Too many sign-in attempts. Try again in")
	require.Contains(t, body, `value="olive@acme.example"`)
	wait, err := strconv.Atoi(res.Header.Get("Retry-After"))
	require.NoError(t, err)
	require.Positive(t, wait)
	require.Nil(t, sessionCookie(res), "nobody is signed in")
}

// After signing in, the browser goes back to the page it came for, but
// never to another site, however the address is dressed up.
func TestSignInGoesBackOnlyToThisSite(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)
	for next, want := range map[string]string{
		"/account?done=x":      "/account?done=x",
		"//evil.example/":      "/",
		"/\\evil.example":      "/",
		"/\t/evil.example":     "/",
		"https://evil.example": "/",
		"/%0a/evil.example":    "/%0a/evil.example",
	} {
		req := newRequest(t, "POST", b.origin+"/sign-in",
			url.Values{"email": {"olive@acme.example"}, "password": {ownerPassword}, "next": {next}})
		req.Header.Set("Origin", b.origin)
		res, _ := fetch(t, req)
		require.Equal(t, http.StatusSeeOther, res.StatusCode, next)
		loc, err := url.Parse(res.Header.Get("Location"))
		require.NoError(t, err)
		require.Empty(t, loc.Host, "%q went to %q", next, loc)
		require.Equal(t, want, res.Header.Get("Location"), next)
	}
}

// A used, an expired or a forged link gets a clear page (410 or 404), and
// using it changes nothing.
func TestBadLinksChangeNothing(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	ctx := context.Background()
	owner := b.principal(t, b.owner)
	used, _, err := b.people.Invite(ctx, owner, "used@acme.example", core.RoleMember)
	require.NoError(t, err)
	_, err = b.people.AcceptWithPassword(ctx, linkSecret(used), "Una Used", "una's long passphrase", "127.0.0.1")
	require.NoError(t, err)
	expired, _, err := b.people.Invite(ctx, owner, "late@acme.example", core.RoleMember)
	require.NoError(t, err)
	_, err = b.store.Pool().Exec(ctx, `UPDATE invitations SET expires_at = now() - interval '1 minute' WHERE email = 'late@acme.example'`)
	require.NoError(t, err)
	before := b.audit(t)

	for link, want := range map[string]int{
		used:    http.StatusGone,
		expired: http.StatusGone,
		b.origin + "/link/" + strings.Repeat("A", 43): http.StatusNotFound,
		b.origin + "/link/forged":                     http.StatusNotFound,
	} {
		res, body := fetch(t, newRequest(t, "GET", link, nil))
		require.Equal(t, want, res.StatusCode, link)
		require.Contains(t, body, "Nothing was changed")
		require.NotContains(t, body, "Set a password", "no form to fill in")

		req := newRequest(t, "POST", link+"/password", url.Values{"name": {"Late Comer"}, "password": {"a long enough passphrase"}})
		req.Header.Set("Origin", b.origin)
		res, _ = fetch(t, req)
		require.Equal(t, want, res.StatusCode, link)
		require.Nil(t, sessionCookie(res), "nobody is signed in")

		req = newRequest(t, "POST", link+"/passkey/begin", url.Values{"name": {"Late Comer"}})
		req.Header.Set("Origin", b.origin)
		res, _ = fetch(t, req)
		require.Equal(t, want, res.StatusCode, link)
	}
	_, err = b.store.PersonByEmail(ctx, "late@acme.example")
	require.ErrorIs(t, err, core.ErrNotFound, "the expired invitation made nobody")
	require.Equal(t, before, b.audit(t), "no change was recorded")
}

// Forms refuse bad input beside the field and keep what was typed, never
// a secret.
func TestFormErrorsKeepWhatWasTyped(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	ctx := context.Background()
	invite, _, err := b.people.Invite(ctx, b.principal(t, b.owner), "nia@acme.example", core.RoleMember)
	require.NoError(t, err)

	req := newRequest(t, "POST", invite+"/password", url.Values{"name": {"Nia New"}, "password": {"password1234"}})
	req.Header.Set("Origin", b.origin)
	res, body := fetch(t, req)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, body, `value="Nia New"`, "the name stays")
	require.Contains(t, body, `aria-describedby="password-error"`, "the message is beside the password field")
	require.NotContains(t, body, "password1234", "the password is not echoed")
	_, err = b.store.PersonByEmail(ctx, "nia@acme.example")
	require.ErrorIs(t, err, core.ErrNotFound, "nothing half-written")

	req = newRequest(t, "POST", invite+"/password", url.Values{"name": {""}, "password": {"a long enough passphrase"}})
	req.Header.Set("Origin", b.origin)
	res, body = fetch(t, req)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, body, `id="name-error"`)

	// The link still works once the input is right.
	req = newRequest(t, "POST", invite+"/password", url.Values{"name": {"Nia New"}, "password": {"a long enough passphrase"}})
	req.Header.Set("Origin", b.origin)
	res, _ = fetch(t, req)
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.NotNil(t, sessionCookie(res))
}

// A member is refused the people page with a clear 403 page, and is not
// offered it.
func TestMemberIsRefusedThePeoplePage(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	invite, _, err := b.people.Invite(context.Background(), b.principal(t, b.owner), "mia@acme.example", core.RoleMember)
	require.NoError(t, err)
	s, err := b.people.AcceptWithPassword(context.Background(), linkSecret(invite), "Mia Member", "mia's own long passphrase", "127.0.0.1")
	require.NoError(t, err)
	c := &http.Cookie{Name: web.CookieName, Value: s.Secret}

	res, body := get(t, b, "/", c)
	require.Equal(t, 200, res.StatusCode)
	require.NotContains(t, body, `href="/people"`)
	res, body = get(t, b, "/people", c)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Contains(t, body, "you are a member of Acme Research")

	req := newRequest(t, "POST", b.origin+"/people/invite", url.Values{"email": {"x@acme.example"}, "role": {"owner"}})
	req.Header.Set("Origin", b.origin)
	req.AddCookie(c)
	res, _ = fetch(t, req)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	require.Equal(t, 1, b.audit(t)[core.AuditPersonInvited], "only the owner's invitation")
}

// The assets are served with their types and no folder listing.
func TestAssets(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	res, body := fetch(t, newRequest(t, "GET", b.origin+"/assets/passkey.js", nil))
	require.Equal(t, 200, res.StatusCode)
	require.Contains(t, res.Header.Get("Content-Type"), "javascript")
	require.Contains(t, body, "navigator.credentials")
	res, _ = fetch(t, newRequest(t, "GET", b.origin+"/assets/", nil))
	require.Equal(t, http.StatusNotFound, res.StatusCode)
	res, _ = fetch(t, newRequest(t, "GET", b.origin+"/no-such-page", nil))
	require.Equal(t, http.StatusNotFound, res.StatusCode)
}

// The client address the audit trail records is the request's peer, unless
// the peer is a trusted proxy: then the client its X-Forwarded-For names.
func TestClientAddressBehindATrustedProxy(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	for _, tc := range []struct {
		trusted []netip.Prefix
		want    string
	}{
		{nil, "192.0.2.1"}, // httptest's peer; the header is not believed
		{[]netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}, "198.51.100.9"},
	} {
		h, err := web.New(web.Config{PublicURL: b.origin, TrustedProxies: tc.trusted}, web.Deps{People: b.people})
		require.NoError(t, err)
		_, link, err := b.people.CreatePerson(core.WithActor(context.Background(), core.Operator), b.org.ID,
			"proxied-"+strconv.Itoa(len(tc.trusted))+"@acme.example", "Proxied", core.RoleMember)
		require.NoError(t, err)
		req := httptest.NewRequest("POST", link+"/password", strings.NewReader(url.Values{"password": {"a long proxied passphrase"}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", b.origin)
		req.Header.Set("X-Forwarded-For", "198.51.100.9")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		require.Equal(t, http.StatusSeeOther, rec.Code, rec.Body.String())

		rows, err := b.store.Audit(context.Background(), &core.AuditQuery{OrgID: b.org.ID})
		require.NoError(t, err)
		last := rows[len(rows)-1]
		require.Equal(t, core.AuditPasswordSet, last.Action)
		require.Equal(t, tc.want, last.Actor.Address)
	}
}
