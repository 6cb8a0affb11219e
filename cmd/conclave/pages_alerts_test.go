package main

import (
	"context"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/alerts"
	"github.com/conclavehq/conclave/internal/browsertest"
	"github.com/conclavehq/conclave/internal/config"
)

// hookReceiver is a webhook receiver on loopback that refuses its first
// post (503), to see it retried, and keeps every post.
type hookReceiver struct {
	srv   *httptest.Server
	mu    sync.Mutex
	posts []hookPost
}

type hookPost struct {
	id, signature string
	body          []byte
	status        int
}

func newHookReceiver(t *testing.T) *hookReceiver {
	h := &hookReceiver{}
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		h.mu.Lock()
		status := http.StatusNoContent
		if len(h.posts) == 0 {
			status = http.StatusServiceUnavailable
		}
		h.posts = append(h.posts, hookPost{id: r.Header.Get(alerts.EventIDHeader), signature: r.Header.Get(alerts.SignatureHeader), body: b, status: status})
		h.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hookReceiver) all() []hookPost {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]hookPost(nil), h.posts...)
}

func (h *hookReceiver) accepted() (out []hookPost) {
	for _, p := range h.all() {
		if p.status < 300 {
			out = append(out, p)
		}
	}
	return out
}

// The owner sets a webhook and a monthly budget with 80, 90 and 100% in
// Chromium, and copies the secret shown once; the month's spend passes
// the budget; the alert job posts one signed webhook per threshold (the
// receiver's refusal of the first is retried, with the same event id),
// never again on later runs; the overview says what was crossed.
func TestSpendAlertsPostSignedWebhooksInChromium(t *testing.T) {
	t.Parallel()
	hooks := newHookReceiver(t)
	og := startPages(t, fastSimulator, func(c *config.Config) {
		c.Alerts.AllowLoopbackWebhooks, c.Alerts.Interval = true, time.Second
		c.Jobs.SpendInterval, c.Jobs.SpendGrace = time.Second, time.Second
	})
	secret, hash := core.NewKeySecret(false)
	_, err := og.g.db.store.CreateKey(context.Background(), &core.CreateKeyParams{OrgID: og.org.ID, Hash: hash, Hint: core.KeyHint(secret)})
	require.NoError(t, err)
	billed := chatOn(t, og.origin, secret, "conclave-standard")["billed_usd"].(float64)
	require.Positive(t, billed)

	// Refusals, over plain HTTP: a private host; http to a public one.
	c := og.ownerClient(t)
	for raw, want := range map[string]string{
		"https://10.0.0.7/hook":          "not a public address",
		"http://hooks.example.com/hook":  "must start with https://",
		"ftp://hooks.example.com/upload": "Enter an absolute URL",
	} {
		res, err := c.PostForm(og.origin+"/settings/alerts/webhook", url.Values{"webhook_url": {raw}})
		require.NoError(t, err)
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode, raw)
		require.Contains(t, string(b), want, raw)
	}
	res, err := c.PostForm(og.origin+"/settings/alerts", url.Values{"budget": {"ten"}, "percents": {"80"}})
	require.NoError(t, err)
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, string(b), "Enter an amount in dollars")

	// A member may neither change alerts nor see the crossings.
	member := following(og.member(t, "mo@acme.example", "Mo Member"))
	for path, form := range map[string]url.Values{
		"/settings/alerts":                {"budget": {"1"}, "percents": {"50"}},
		"/settings/alerts/webhook":        {"webhook_url": {hooks.srv.URL}},
		"/settings/alerts/webhook/remove": {},
	} {
		res, err := member.PostForm(og.origin+path, form)
		require.NoError(t, err)
		res.Body.Close()
		require.Equal(t, http.StatusForbidden, res.StatusCode, path)
	}

	ctx := og.ownerBrowser(t)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/settings"), chromedp.WaitVisible(chromedp.CSS(`#webhook_url`)),
		chromedp.SetValue(chromedp.CSS(`#webhook_url`), hooks.srv.URL+"/conclave"),
		chromedp.Submit(chromedp.CSS(`#webhook_url`))))
	browsertest.WaitText(t, ctx, "shown only once")
	shown, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("webhook-secret").value`))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(shown, "whsec_"), shown)
	browsertest.Shoot(t, ctx, "alerts-secret")

	// The budget is what one call cost, in whole cents down: the month's
	// spend has reached every threshold.
	want := billed
	if billed >= 0.01 {
		want = math.Floor(billed*100) / 100
	}
	budget := strconv.FormatFloat(want, 'f', -1, 64)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/settings"), chromedp.WaitVisible(chromedp.CSS(`#budget`)),
		chromedp.SetValue(chromedp.CSS(`#budget`), budget), chromedp.SetValue(chromedp.CSS(`#percents`), "80, 90, 100"),
		chromedp.Submit(chromedp.CSS(`#budget`))))
	browsertest.WaitText(t, ctx, "Alert thresholds saved")
	text := browsertest.Text(t, ctx)
	require.NotContains(t, text, shown, "the secret is not shown again")
	require.Contains(t, text, hooks.srv.URL+"/conclave")
	browsertest.Shoot(t, ctx, "alerts-settings")

	var audited int
	require.NoError(t, og.g.db.pool.QueryRow(t.Context(), `SELECT count(*) FROM audit_log WHERE org_id = $1 AND action = $2 AND detail LIKE 'spend alerts:%'`,
		og.org.ID, core.AuditOrgSettings).Scan(&audited))
	require.Equal(t, 2, audited, "the webhook and the thresholds, audited")

	require.Eventually(t, func() bool { return len(hooks.accepted()) >= 3 }, 90*time.Second, 100*time.Millisecond,
		"three webhooks, the refused one retried")
	time.Sleep(2500 * time.Millisecond) // more runs of the alert check post nothing more
	all, ok := hooks.all(), hooks.accepted()
	require.Len(t, ok, 3, "one post per threshold")
	require.Len(t, all, 4, "and one refused, retried")
	require.Equal(t, all[0].id, func() string {
		for _, p := range ok {
			if p.id == all[0].id {
				return p.id
			}
		}
		return ""
	}(), "the retry carries the same event id")
	percents := map[int]string{}
	for _, p := range ok {
		require.NoError(t, alerts.Verify(shown, p.signature, p.body, time.Now(), 5*time.Minute), "signed with the secret shown")
		var e alerts.Event
		require.NoError(t, json.Unmarshal(p.body, &e))
		require.Equal(t, p.id, e.ID)
		require.Equal(t, "alert.monthly_spend", e.Type)
		require.Equal(t, og.org.ID, e.Organization)
		require.Equal(t, time.Now().UTC().Format("2006-01"), e.Period)
		require.Equal(t, want, float64(core.Micros(*e.BudgetUSD))/float64(core.MicrosPerUSD))
		percents[e.ThresholdPercent] = e.ID
	}
	require.Len(t, percents, 3)
	require.Contains(t, percents, 80)
	require.Contains(t, percents, 90)
	require.Contains(t, percents, 100)

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(og.origin+"/")))
	browsertest.WaitText(t, ctx, "Monthly spend passed 100% of the "+usdText(want)+" budget on "+time.Now().UTC().Format("2 Jan"))
	browsertest.Shoot(t, ctx, "alerts-overview")
	status, page := pageOf(t, member, og.origin+"/")
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, page, "Monthly spend passed", "a member's overview has no alerts")
}

// usdText is a dollar amount as the pages write it, at least two decimals.
func usdText(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if i := strings.IndexByte(s, '.'); i < 0 {
		s += ".00"
	} else if len(s)-i == 2 {
		s += "0"
	}
	return "$" + s
}
