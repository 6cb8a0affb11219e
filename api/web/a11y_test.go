package web_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/people"
	"github.com/conclavehq/conclave/internal/browsertest"
)

// axeRun and axe are internal/browsertest's, under the names these tests
// use.
func axeRun(ctx context.Context) ([]browsertest.Violation, error) { return browsertest.AxeRun(ctx) }

func axe(t *testing.T, ctx context.Context, page string) { t.Helper(); browsertest.Axe(t, ctx, page) }

// The check itself: a page with an image without alternative text and a
// button without a name fails it, even behind the pages' own
// Content-Security-Policy; the same page put right passes.
func TestBrowserAxeFindsViolations(t *testing.T) {
	t.Parallel()
	const bad = `<!doctype html><html lang="en"><head><title>Bad</title></head><body><main>
<h1>Bad</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="20" height="20"><button type="button"></button>
</main></body></html>`
	const good = `<!doctype html><html lang="en"><head><title>Good</title></head><body><main>
<h1>Good</h1><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" width="20" height="20" alt="A dot"><button type="button">Go</button>
</main></body></html>`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:")
		if r.URL.Path == "/good" {
			_, _ = io.WriteString(w, good)
			return
		}
		_, _ = io.WriteString(w, bad)
	}))
	t.Cleanup(srv.Close)
	ctx := browser(t)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/bad"), chromedp.WaitVisible(chromedp.CSS("main"))))
	vs, err := axeRun(ctx)
	require.NoError(t, err)
	ids := make([]string, 0, len(vs))
	for _, v := range vs {
		ids = append(ids, v.ID)
		if v.ID == "image-alt" || v.ID == "button-name" {
			require.True(t, v.Severe(), "%s", v)
			require.NotEmpty(t, v.Nodes, "%s names its elements", v.ID)
			require.NotEmpty(t, v.Help)
		}
	}
	require.True(t, slices.Contains(ids, "image-alt"), "the image without alt is caught: %v", ids)
	require.True(t, slices.Contains(ids, "button-name"), "the button without a name is caught: %v", ids)
	// The script stays injected for a second run on the same document.
	again, err := axeRun(ctx)
	require.NoError(t, err)
	require.Len(t, again, len(vs))

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/good"), chromedp.WaitVisible(chromedp.CSS("main"))))
	vs, err = axeRun(ctx)
	require.NoError(t, err)
	for _, v := range vs {
		require.False(t, v.Severe(), "the good page has no serious violation: %s", v)
	}
	axe(t, ctx, "the good page")
}

// The states of the forms that the other browser tests do not stop at —
// refusals beside their fields, empty lists — pass axe-core in both colour
// schemes too.
func TestBrowserA11yFormStates(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)
	ctx := browser(t)

	// Sign-in refused: an empty form.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/sign-in"),
		chromedp.Click(chromedp.CSS(`form[action="/sign-in"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`main p.error, #email-error, #password-error`))))
	shoot(t, ctx, "sign-in-refused")

	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#email"), "olive@acme.example"),
		chromedp.SendKeys(chromedp.CSS("#password"), ownerPassword),
		chromedp.Click(chromedp.CSS(`form[action="/sign-in"] button`))))
	waitText(t, ctx, "Hello, Olive Owner")

	// An invitation refused beside its field.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/people")))
	waitText(t, ctx, "Invite someone")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#email"), "not an email"),
		chromedp.Click(chromedp.CSS(`form[action="/people/invite"] button`))))
	waitText(t, ctx, "Enter one email address")
	shoot(t, ctx, "people-refused-email")

	// No keys yet; a key name refused.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/keys")))
	waitText(t, ctx, "No keys yet")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`form[action="/keys"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`#name-error`))))
	shoot(t, ctx, "keys-refused-name")

	// A password change refused beside its fields.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/account")))
	waitText(t, ctx, "Change your password")
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS("#password"), "short"),
		chromedp.Click(chromedp.CSS(`form[action="/account/password"] button`)),
		chromedp.WaitVisible(chromedp.CSS(`main p.error, #current-error, #password-error`))))
	shoot(t, ctx, "account-refused-password")
}
