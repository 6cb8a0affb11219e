package main

import (
	"context"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

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
