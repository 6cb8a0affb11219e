package web_test

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/people"
)

// Accessibility checks with axe-core (Deque's rules engine), vendored in
// testdata/axe: see testdata/axe/VERSION for its version and checksums.
// axe-core is a test tool only: the product never serves it.

//go:embed testdata/axe/axe.min.js
var axeSource string

// axeViolation is one rule axe-core found broken, with the elements that
// break it.
type axeViolation struct {
	ID      string `json:"id"`
	Impact  string `json:"impact"`
	Help    string `json:"help"`
	HelpURL string `json:"helpUrl"`
	Nodes   []struct {
		// Target is the element's selector: a list of strings, nested
		// further for shadow DOM and frames.
		Target         []json.RawMessage `json:"target"`
		FailureSummary string            `json:"failureSummary"`
	} `json:"nodes"`
}

// severe reports whether the violation is rated serious or critical.
func (v axeViolation) severe() bool { return v.Impact == "serious" || v.Impact == "critical" }

func (v axeViolation) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%s): %s — %s", v.ID, v.Impact, v.Help, v.HelpURL)
	for _, n := range v.Nodes {
		sel := make([]string, 0, len(n.Target))
		for _, t := range n.Target {
			sel = append(sel, strings.Trim(string(t), `"`))
		}
		fmt.Fprintf(&b, "\n    %s", strings.Join(sel, " >> "))
		if n.FailureSummary != "" {
			fmt.Fprintf(&b, "\n      %s", strings.ReplaceAll(n.FailureSummary, "\n", "\n      "))
		}
	}
	return b.String()
}

// axeRun injects axe-core into the page open in ctx (once per document)
// and returns every violation it finds. The script goes in through the
// DevTools protocol's Runtime.evaluate, which the page's
// Content-Security-Policy (script-src 'self') does not govern.
func axeRun(ctx context.Context) ([]axeViolation, error) {
	loaded, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`typeof window.axe === "object"`))
	if err != nil {
		return nil, fmt.Errorf("looking for axe-core: %w", err)
	}
	if !loaded {
		if _, err := chromedp.Run(ctx, chromedp.Evaluate[chromedp.Void](axeSource)); err != nil {
			return nil, fmt.Errorf("injecting axe-core: %w", err)
		}
	}
	out, err := chromedp.Run(ctx, chromedp.Evaluate[[]axeViolation](
		`axe.run(document, {resultTypes: ['violations']}).then(r => r.violations)`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("running axe-core: %w", err)
	}
	return out, nil
}

// axe runs axe-core on the page open in ctx and fails the test on any
// violation rated serious or critical, listing each rule, its help text
// and the offending elements' selectors. Milder ones are logged.
func axe(t *testing.T, ctx context.Context, page string) {
	t.Helper()
	vs, err := axeRun(ctx)
	require.NoError(t, err, "axe-core on %s", page)
	var severe, mild []string
	for _, v := range vs {
		if v.severe() {
			severe = append(severe, v.String())
		} else {
			mild = append(mild, v.String())
		}
	}
	if len(mild) > 0 {
		t.Logf("axe-core on %s: minor or moderate:\n  %s", page, strings.Join(mild, "\n  "))
	}
	if len(severe) > 0 {
		loc, _ := chromedp.Run(ctx, chromedp.Location())
		t.Errorf("axe-core on %s (%s): %d serious or critical violation(s):\n  %s", page, loc, len(severe), strings.Join(severe, "\n  "))
	}
}

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
			require.True(t, v.severe(), "%s", v)
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
		require.False(t, v.severe(), "the good page has no serious violation: %s", v)
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
