package main

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/browsertest"
	"github.com/conclavehq/conclave/mcp"
)

// The whole sign-in in Chromium, against the gateway as serve builds it: an
// app that registered itself sends the browser to /authorize; the person
// signs in with their password, is brought back to the consent page, and
// allows the app; the browser is redirected (through the authorization
// server's callback) to the app's loopback address with the code, the
// state and the issuer — the consent page's Content-Security-Policy lets
// its form lead there — and the code buys a token that /mcp takes. A
// second request, denied, comes back as access_denied.
func TestOAuthConsentInChromium(t *testing.T) {
	t.Parallel()
	og := startOAuthGateway(t)
	ctx := browsertest.New(t)

	var mu sync.Mutex
	var got []url.Values
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r) // the browser's /favicon.ico
			return
		}
		mu.Lock()
		got = append(got, r.URL.Query())
		mu.Unlock()
		_, _ = w.Write([]byte("<!doctype html><title>App</title><main><p>Connected: you may close this window.</p></main>"))
	}))
	t.Cleanup(app.Close)
	redirect := app.URL + "/callback"
	reg := postJSON(t, og.origin+"/register", map[string]any{"client_name": "Browser Test App", "redirect_uris": []string{redirect},
		"token_endpoint_auth_method": "none"})
	clientID := reg["client_id"].(string)
	authorize := func(state, challenge string) string {
		return og.origin + "/authorize?" + url.Values{"response_type": {"code"}, "client_id": {clientID}, "redirect_uri": {redirect},
			"scope": {"models:read deliberate"}, "state": {state}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}.Encode()
	}
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(authorize("s-allow", base64.RawURLEncoding.EncodeToString(sum[:])))))
	require.NoError(t, chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(`#password`)),
		chromedp.SendKeys(chromedp.CSS(`#email`), og.email), chromedp.SendKeys(chromedp.CSS(`#password`), og.password),
		chromedp.Submit(chromedp.CSS(`#password`))))
	pageShows(t, ctx, "Connect Browser Test App?")
	require.Contains(t, pageShows(t, ctx, "Self-declared"), "127.0.0.1")
	browsertest.Click(t, ctx, `button[value="approve"]`)
	pageShows(t, ctx, "Connected: you may close this window.")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(loc, redirect+"?"), loc)
	mu.Lock()
	q := got[len(got)-1]
	mu.Unlock()
	require.Equal(t, "s-allow", q.Get("state"))
	require.Equal(t, og.origin, q.Get("iss"))
	status, body := og.tokenRequest(t, url.Values{"grant_type": {"authorization_code"}, "code": {q.Get("code")},
		"redirect_uri": {redirect}, "client_id": {clientID}, "code_verifier": {verifier}})
	require.Equal(t, http.StatusOK, status, "%s", body)
	var tok appTokens
	require.NoError(t, json.Unmarshal(body, &tok))
	require.Equal(t, []any{og.origin + mcp.Path}, accessClaims(t, tok.Access)["aud"])
	require.Empty(t, toolError(t, og.call(t, tok.Access, "list_modes", map[string]any{})))

	// Denied: back to the app with access_denied, signed in already.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(authorize("s-deny", base64.RawURLEncoding.EncodeToString(sum[:]))),
		chromedp.WaitVisible(chromedp.CSS(`button[value="deny"]`)), chromedp.Click(chromedp.CSS(`button[value="deny"]`))))
	deadline := time.Now().Add(5 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		q = got[n-1]
		mu.Unlock()
		if n == 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	require.Equal(t, "access_denied", q.Get("error"))
	require.Equal(t, "s-deny", q.Get("state"))
	require.Equal(t, og.origin, q.Get("iss"))
	require.Empty(t, q.Get("code"))
}

// pageShows waits until the page's main element shows want, and returns
// its text.
func pageShows(t *testing.T, ctx context.Context, want string) string {
	t.Helper()
	return browsertest.WaitText(t, ctx, want)
}
