package main

import (
	"context"
	"encoding/json"
	"net/http"
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

// fastSimulator makes the simulated providers answer in a tenth of their
// usual time: a deliberation of a few seconds.
func fastSimulator(c *config.Config) { c.Simulator.TimeScale = 0.1 }

// The owner asks a mode a question from the playground in Chromium: a
// refusal shows beside its field; the call is followed step by step to its
// answer, bill and timeline, beside what the mode's latest test run found
// on questions of the same depth; it is billed as a call of the owner's
// own (payer_kind session), once, to the organisation's balance.
func TestPlaygroundAsksAModeInChromium(t *testing.T) {
	t.Parallel()
	og := startPages(t, fastSimulator)
	// A finished test run of the mode, on medium questions: the depth the
	// question below is classified at.
	tested := og.testRun(t, og.apiKey(t), `{"model":"conclave-standard","buckets":{"medium":3}}`)
	require.Equal(t, "complete", tested["status"], "%v", tested)
	ctx := og.ownerBrowser(t)
	store := og.g.db.store
	before, err := store.MoneyState(context.Background(), og.org.ID)
	require.NoError(t, err)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/playground")))
	browsertest.WaitText(t, ctx, "Ask one of your modes a question")
	browsertest.Shoot(t, ctx, "playground")
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS(`#mode`), "conclave-standard"),
		chromedp.Click(chromedp.CSS(`form[action="/playground"] button`))))
	browsertest.WaitText(t, ctx, "Write the question to ask.")
	browsertest.Shoot(t, ctx, "playground-refused")

	require.NoError(t, chromedp.Do(ctx, chromedp.SendKeys(chromedp.CSS(`#question`),
		"Should a small team shard its PostgreSQL database by tenant now, or wait? Weigh the trade-offs."),
		chromedp.Click(chromedp.CSS(`form[action="/playground"] button`))))
	browsertest.WaitText(t, ctx, "Playground call")
	loc, err := chromedp.Run(ctx, chromedp.Location())
	require.NoError(t, err)
	id := loc[strings.LastIndex(loc, "/")+1:]
	require.True(t, strings.HasPrefix(id, "req_"), "the call's page is at its request id: %s", loc)
	// The page follows the call on its own and shows the answer once done.
	browsertest.WaitText(t, ctx, "The bill")
	page := browsertest.Text(t, ctx)
	require.Contains(t, page, "The answer")
	require.Contains(t, page, "How the deliberation ran")
	require.Contains(t, page, "What the panel tends to add")
	require.Contains(t, page, "This question was classified medium.")
	require.Contains(t, page, "On medium questions, the mode's latest test run")
	link, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("aside a[href^='/runs/test/']").getAttribute("href")`))
	require.NoError(t, err)
	require.Equal(t, "/runs/test/"+tested["id"].(string), link)
	svg, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll(".play-main figure.chart svg").length`))
	require.NoError(t, err)
	require.Equal(t, 1, svg, "the timeline is drawn")
	browsertest.Shoot(t, ctx, "playground-answered")

	rc, err := store.GetReceipt(context.Background(), og.org.ID, id)
	require.NoError(t, err)
	require.Equal(t, "session", rc.PayerKind)
	require.NotEmpty(t, rc.PersonID)
	require.Empty(t, rc.KeyID)
	require.Positive(t, int64(rc.Billed))
	require.Contains(t, page, "$"+strings.TrimRight(strings.TrimRight(rc.Billed.String(), "0"), "."), "the page shows the bill")
	after, err := store.MoneyState(context.Background(), og.org.ID)
	require.NoError(t, err)
	require.Equal(t, before.Balance.Balance-rc.Billed, after.Balance.Balance, "billed once, to the organisation")
	require.Zero(t, after.Balance.Held)
}

// A playground call goes on when its page is left at once, and its answer
// is on its page afterwards; the same form sent again replays it, billing
// nothing more; another person cannot open it.
func TestPlaygroundCallOutlivesItsPage(t *testing.T) {
	t.Parallel()
	og := startPages(t, fastSimulator)
	c := og.ownerClient(t)
	store := og.g.db.store
	form := url.Values{"mode": {"conclave-standard"}, "tier": {"plus"}, "key": {"play-outlives-1"},
		"question": {"Compare optimistic and pessimistic locking for a booking system; when does each fail?"}}
	res, err := c.PostForm(og.origin+"/playground", form)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	where := res.Header.Get("Location")
	require.True(t, strings.HasPrefix(where, "/playground/req_"), where)
	id := strings.TrimPrefix(where, "/playground/")
	// The form waited for the call's first step: its status has it.
	status, body := pageOf(t, c, og.origin+where+"/status?after=0")
	require.Equal(t, http.StatusOK, status)
	var st struct {
		Done  bool     `json:"done"`
		Steps []string `json:"steps"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	require.NotEmpty(t, st.Steps, "%s", body)
	require.Contains(t, st.Steps[0], "Classified as a")

	// Nobody polls: the call still finishes and keeps a receipt.
	var billed core.Micros
	require.Eventually(t, func() bool {
		rc, err := store.GetReceipt(context.Background(), og.org.ID, id)
		if err != nil {
			return false
		}
		billed = rc.Billed
		return true
	}, 60*time.Second, 100*time.Millisecond)
	status, body = pageOf(t, c, og.origin+where)
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, body, "The answer")
	require.Contains(t, body, "/receipts/"+id)
	before, err := store.MoneyState(context.Background(), og.org.ID)
	require.NoError(t, err)

	// The same form again (a double click, a resent POST): its first call,
	// nothing run or billed again.
	res, err = c.PostForm(og.origin+"/playground", form)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	again := res.Header.Get("Location")
	require.NotEqual(t, where, again)
	require.Eventually(t, func() bool {
		_, b := pageOf(t, c, og.origin+again)
		return strings.Contains(b, "nothing was run or billed again")
	}, 30*time.Second, 100*time.Millisecond)
	_, b := pageOf(t, c, og.origin+again)
	require.Contains(t, b, "/receipts/"+id, "the replay shows the first call's receipt")
	after, err := store.MoneyState(context.Background(), og.org.ID)
	require.NoError(t, err)
	require.Equal(t, before.Balance.Balance, after.Balance.Balance, "the replay billed nothing")
	require.Positive(t, int64(billed))

	// The status of a call this person does not have says done (read the
	// receipt), and its page is not found.
	status, _ = pageOf(t, c, og.origin+"/playground/req_unknown")
	require.Equal(t, http.StatusNotFound, status)
	status, _ = pageOf(t, c, og.origin+"/playground/req_unknown/status")
	require.Equal(t, http.StatusOK, status)
}
