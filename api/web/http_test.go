package web_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api/web"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/policies"
)

// noRedirects is a client that shows redirects instead of following them.
var noRedirects = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func fetch(t *testing.T, req *http.Request) (*http.Response, string) {
	t.Helper()
	res, err := noRedirects.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res, string(b)
}

func newRequest(t *testing.T, method, u string, form url.Values) *http.Request {
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
	h, err := web.New(web.Config{PublicURL: origin}, web.Deps{People: svc})
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
