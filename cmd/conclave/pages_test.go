package main

import (
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/browsertest"
	"github.com/conclavehq/conclave/internal/config"
)

// The pages of the gateway built as serve builds it (startOAuthGateway):
// every service a page reaches — modes, runs and their executor on the
// background jobs, the call service — is the real one.

// startPages starts a gateway for the pages' tests; tune changes its
// configuration first.
func startPages(t *testing.T, tune ...func(*config.Config)) *oauthGateway {
	t.Helper()
	return startOAuthGateway(t, tune...)
}

// ownerBrowser is a Chromium tab signed in as the organisation's owner, on
// the overview.
func (og *oauthGateway) ownerBrowser(t *testing.T) context.Context {
	t.Helper()
	ctx := browsertest.New(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/sign-in"), chromedp.WaitVisible(chromedp.CSS(`#password`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), og.email), chromedp.SendKeys(chromedp.CSS(`#password`), og.password),
		chromedp.Submit(chromedp.CSS(`#password`))))
	browsertest.WaitText(t, ctx, "Hello, Olive Owner")
	return ctx
}

// memberPassword is the password of every member tests add.
const memberPassword = "a long member passphrase"

// member adds a member of the organisation, email, with memberPassword,
// and returns an HTTP client signed in as them.
func (og *oauthGateway) member(t *testing.T, email, name string) *http.Client {
	t.Helper()
	ctx := core.WithActor(context.Background(), core.Actor{Kind: core.ActorSystem})
	_, link, err := og.g.people.CreatePerson(core.WithActor(ctx, core.Operator), og.org.ID, email, name, core.RoleMember)
	require.NoError(t, err)
	_, err = og.g.people.AcceptWithPassword(ctx, link[strings.LastIndex(link, "/")+1:], "", memberPassword, "127.0.0.1")
	require.NoError(t, err)
	return signedInClient(t, og.origin, email, memberPassword)
}

// ownerClient is an HTTP client signed in as the organisation's owner.
func (og *oauthGateway) ownerClient(t *testing.T) *http.Client {
	t.Helper()
	return signedInClient(t, og.origin, og.email, og.password)
}

// signedInClient is a cookie jar signed in as email, following no
// redirect.
func signedInClient(t *testing.T, origin, email, password string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar, Timeout: 30 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}
	res, err := c.PostForm(origin+"/sign-in", url.Values{"email": {email}, "password": {password}})
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode, "signed in")
	return c
}

// following is c following redirects, as a browser does.
func following(c *http.Client) *http.Client {
	f := *c
	f.CheckRedirect = nil
	return &f
}

// pageOf is a GET of u with c: its status and body.
func pageOf(t *testing.T, c *http.Client, u string) (int, string) {
	t.Helper()
	res, err := c.Get(u)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, string(b)
}
