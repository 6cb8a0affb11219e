package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/browsertest"
)

// panelForm is the builder's fields of the corpus's valid spec
// (modestest.ValidSpec), with its one price set to price.
func panelForm(price string) url.Values {
	return url.Values{
		"name":             {"Acme Review Panel"},
		"ticker":           {"PANL"},
		"description":      {"Three seats from three provider families."},
		"use_when":         {"Trade-offs where a second and a third opinion are worth a few cents."},
		"seats_experience": {"sim/swift sim/gemini-flash\nsim/gemini-flash sim/swift\nsim/sonnet sim/swift"},
		"seats_plus":       {"sim/atlas sim/gemini-flash\nsim/sonnet sim/atlas\nsim/gemini-flash sim/sonnet"},
		"staff_classifier": {"sim/swift"},
		"staff_judge":      {"sim/sonnet sim/atlas"},
		"staff_synthesis":  {"sim/atlas sim/sonnet"},
		"critique":         {"deep"},
		"max_rounds":       {"2"},
		"quorum":           {"2"},
		"cost_ceiling_usd": {"1.5"},
		"surcharge_usd":    {price},
	}
}

const belowFloor = "is under this mode's floor"

// The owner builds a mode in Chromium: a price under the floor is refused
// beside the price as it is typed, and the refusal goes once it is fixed;
// the draft is saved and released, edited and released again; the list
// shows it released, and the diff of its two versions the changed field.
func TestModeBuilderInChromium(t *testing.T) {
	t.Parallel()
	og := startPages(t)
	ctx := og.ownerBrowser(t)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/modes/new")))
	browsertest.WaitText(t, ctx, "Seats by tier")
	fill, err := json.Marshal(panelForm("0.01"))
	require.NoError(t, err)
	_, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`(() => {
		const form = document.getElementById("builder");
		for (const [name, [value]] of Object.entries(`+string(fill)+`)) form.elements[name].value = value;
		form.elements.name.dispatchEvent(new Event("input", {bubbles: true}));
		return true;
	})()`))
	require.NoError(t, err)
	browsertest.WaitText(t, ctx, belowFloor)
	state := func() (string, string) {
		t.Helper()
		s, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[document.getElementById("surcharge_usd-error").hidden ? "" : document.getElementById("surcharge_usd-error").textContent,
			document.getElementById("f-surcharge_usd").getAttribute("aria-invalid") || ""]`))
		require.NoError(t, err)
		return s[0], s[1]
	}
	msg, invalid := state()
	require.Contains(t, msg, belowFloor, "the refusal is beside the price")
	require.Equal(t, "true", invalid)
	require.Contains(t, browsertest.Text(t, ctx), "Price floor $0.", "the floor is beside the prices")
	browsertest.Shoot(t, ctx, "mode-builder-refused")

	_, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("f-surcharge_usd").value = ""`))
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#f-surcharge_usd`), "0.30")))
	require.Eventually(t, func() bool { msg, invalid := state(); return msg == "" && invalid == "" }, 10*time.Second, 100*time.Millisecond,
		"the refusal goes once the price is over the floor")
	browsertest.WaitText(t, ctx, "The spec passes every rule.")

	browsertest.Click(t, ctx, `button[value="save"]`)
	browsertest.WaitText(t, ctx, "Draft saved.")
	browsertest.Click(t, ctx, `form[action$="/release"] button`)
	browsertest.WaitText(t, ctx, "Released as the mode's next version.")

	// A second version: three rounds.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/modes/acme-panl/edit")))
	browsertest.WaitText(t, ctx, "Edit ACME:PANL")
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#f-max_rounds`), "3"),
		chromedp.Click(chromedp.CSS(`button[value="save"]`))))
	browsertest.WaitText(t, ctx, "Draft saved.")
	browsertest.Click(t, ctx, `form[action$="/release"] button`)
	browsertest.WaitText(t, ctx, "Released as the mode's next version.")
	browsertest.Shoot(t, ctx, "mode")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/modes")))
	text := browsertest.WaitText(t, ctx, "released v2")
	require.Contains(t, text, "ACME:PANL")
	browsertest.Shoot(t, ctx, "modes")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/modes/acme-panl"),
		chromedp.Click(chromedp.CSS(`.diff-form button`))))
	text = browsertest.WaitText(t, ctx, "1 field changed")
	require.Contains(t, text, "max_rounds")
	cells, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll("table.diff tbody td")].map((td) => td.textContent.trim())`))
	require.NoError(t, err)
	require.Equal(t, []string{"2", "3"}, cells, "v1 had two rounds, v2 three")
	browsertest.Shoot(t, ctx, "mode-diff")
}

// post posts form to path with c: the status, the Location and the body.
func post(t *testing.T, c *http.Client, u string, form url.Values) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, res.Header.Get("Location"), string(b)
}

// Without JavaScript the builder's Check shows each refusal beside its
// field and says when the spec passes; its JSON check names the field. A
// member sees no Release button, and a forged release is refused by the
// service. A lab invitation answers the same for a ticker an organisation
// has and one none has; a ticker of the wrong form is refused beside the
// field.
func TestModePagesHTTP(t *testing.T) {
	t.Parallel()
	og := startPages(t)
	owner := signedInClient(t, og.origin, og.email, og.password)

	form := panelForm("0.01")
	form.Set("action", "check")
	status, _, page := post(t, owner, og.origin+"/modes/new", form)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, `<p class="field-error" id="surcharge_usd-error">The price 0.01 is under this mode&#39;s floor`, "the refusal is beside the price")
	require.Regexp(t, `id="f-surcharge_usd" name="surcharge_usd" value="0.01"[^>]* aria-invalid="true" aria-describedby="surcharge_usd-error`, page)
	require.Equal(t, 1, strings.Count(page, `aria-invalid="true"`), "no other field is marked")
	require.Contains(t, page, "Price floor $0.")

	status, _, body := post(t, owner, og.origin+"/modes/validate", form)
	require.Equal(t, http.StatusOK, status)
	var checked struct {
		Refusals []struct{ Field, Path, Message string }
		Floor    string
	}
	require.NoError(t, json.Unmarshal([]byte(body), &checked))
	require.Len(t, checked.Refusals, 1)
	require.Equal(t, "surcharge_usd", checked.Refusals[0].Field)
	require.Equal(t, "api_commercial.q_surcharge_usd", checked.Refusals[0].Path)
	require.NotEmpty(t, checked.Floor)

	form.Set("surcharge_usd", "0.30")
	status, _, page = post(t, owner, og.origin+"/modes/new", form)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "The spec passes every rule.")
	require.NotContains(t, page, "is under this mode")

	form.Set("action", "save")
	status, loc, _ := post(t, owner, og.origin+"/modes/new", form)
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/modes/acme-panl?done=saved", loc)
	_, page = pageOf(t, owner, og.origin+"/modes/acme-panl")
	require.Contains(t, page, "Release as v1", "the owner may release")

	// A member.
	ctx := core.WithActor(context.Background(), core.Actor{Kind: core.ActorSystem})
	member := og.member(t, "max@acme.example", "Max Member")
	status, page = pageOf(t, member, og.origin+"/modes/acme-panl")
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, page, "Acme Review Panel")
	require.NotContains(t, page, "Release as", "a member sees no Release button")
	require.NotContains(t, page, `action="/modes/acme-panl/release"`)
	status, _, page = post(t, member, og.origin+"/modes/acme-panl/release", url.Values{"revision": {"1"}})
	require.Equal(t, http.StatusForbidden, status, "a forged release is refused")
	require.Contains(t, page, `<p class="error" role="alert">`)
	am, err := og.g.db.store.AuthoredMode(ctx, og.org.ID, "acme-panl")
	require.NoError(t, err)
	require.Zero(t, am.LatestVersion, "nothing was released")

	// Lab invitations: BETA exists, ZZZZ does not.
	_, _, err = og.g.db.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Beta Labs", Ticker: "BETA"})
	require.NoError(t, err)
	s1, l1, b1 := post(t, owner, og.origin+"/modes/acme-panl/invites", url.Values{"org": {"beta"}})
	s2, l2, b2 := post(t, owner, og.origin+"/modes/acme-panl/invites", url.Values{"org": {"ZZZZ"}})
	require.Equal(t, http.StatusSeeOther, s1)
	require.Equal(t, []any{s1, l1, b1}, []any{s2, l2, b2}, "a known and an unknown ticker answer alike")
	require.Equal(t, "/modes/acme-panl?done=invited", l1)
	_, page = pageOf(t, owner, og.origin+l1)
	require.Contains(t, page, "The invitation is recorded if that organisation exists.")
	invites, err := og.g.db.store.LabInvites(ctx, "acme-panl")
	require.NoError(t, err)
	require.Equal(t, []string{"BETA"}, invites, "only the organisation that exists is invited")
	status, _, page = post(t, owner, og.origin+"/modes/acme-panl/invites", url.Values{"org": {"B1"}})
	require.Equal(t, http.StatusBadRequest, status)
	require.Contains(t, page, `<p class="field-error" id="org-error" role="alert">Name the organisation by its four-letter ticker.</p>`)
	status, _, _ = post(t, member, og.origin+"/modes/acme-panl/invites", url.Values{"org": {"BETA"}})
	require.Equal(t, http.StatusForbidden, status, "a member may not invite")

	// The owner releases and requests the listing.
	status, loc, _ = post(t, owner, og.origin+"/modes/acme-panl/release", url.Values{"revision": {"1"}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/modes/acme-panl?done=released", loc)
	status, loc, _ = post(t, owner, og.origin+"/modes/acme-panl/listing", url.Values{"listing_revision": {"0"}})
	require.Equal(t, http.StatusSeeOther, status)
	require.Equal(t, "/modes/acme-panl?done=listing", loc)
	_, page = pageOf(t, owner, og.origin+"/modes")
	require.Contains(t, page, "listing in review")
	require.Contains(t, page, "released v1")
	status, page = pageOf(t, owner, og.origin+"/modes/acme-panl/diff?from=1&to=9")
	require.Equal(t, http.StatusBadRequest, status, "no version 9")
	require.Contains(t, page, "Choose two of the mode&#39;s versions to compare")
}
