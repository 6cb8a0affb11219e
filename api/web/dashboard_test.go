package web_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
)

// The dashboard in a real browser: an owner's walk through every page and
// a member's view of their own usage.

// browserSignIn signs in on the sign-in page with a password.
func browserSignIn(t *testing.T, ctx context.Context, b *bundle, email, password string) {
	t.Helper()
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/sign-in"),
		chromedp.SendKeys(chromedp.CSS("#email"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS(`form[action="/sign-in"] button`))))
}

// apiCall makes an HTTP call to the REST API with a key: its status and
// body.
func apiCall(t testing.TB, b *bundle, secret, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, b.origin+path, strings.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return res.StatusCode, data
}

// panelCall makes a billed call that convenes the panel and returns its
// request id.
func panelCall(t testing.TB, b *bundle, secret string) string {
	t.Helper()
	status, body := apiCall(t, b, secret, "POST", "/v1/chat/completions",
		`{"model":"conclave-standard","messages":[{"role":"user","content":"Should we adopt trunk-based development? Compare the risks and argue both sides."}]}`)
	require.Equal(t, http.StatusOK, status, string(body))
	var out struct {
		Panel struct {
			RequestID string `json:"request_id"`
			Lane      string `json:"lane"`
		} `json:"panel"`
	}
	require.NoError(t, json.Unmarshal(body, &out))
	require.Equal(t, "panel", out.Panel.Lane, "the question convenes the panel")
	return out.Panel.RequestID
}

// hostile is a model answer that tries to run script in the page.
const hostile = "Here you go.\n\n<script>window.__xss = 1</script>\n\n<img src=x onerror=\"window.__xss = 2\">\n\n" +
	"[click me](javascript:window.__xss=3) and [fine](https://example.com/ok)\n"

// settleHostile writes a billed receipt whose seats answered hostile, as a
// settlement does.
func settleHostile(t *testing.T, b *bundle, keyID, personID string) string {
	t.Helper()
	ctx := context.Background()
	id := core.NewID("req")
	h, err := b.store.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: b.org.ID, RequestID: id, Amount: 10_000})
	require.NoError(t, err)
	now := time.Now().UTC()
	one, fb := 1, false
	comp, _ := json.Marshal(map[string]any{"answer": hostile})
	rc := &core.Receipt{RequestID: id, Mode: "conclave-standard", ModeKey: "standard", ModeConfigHash: "h", Status: "succeeded",
		Billed: 1000, TokenCharge: 1000, Rounds: &one, SeatCount: 1, Payer: b.org.ID, Lane: core.LanePanel,
		PayerKind: core.PrincipalAPIKey, KeyID: keyID, PersonID: personID, FinishReason: "stop", CreatedAt: now.Add(-time.Second),
		Response: comp,
		Seats: []core.ReceiptCall{{Role: "seat-1", Seat: "seat-1", ModelUsed: "sim/atlas", FallbackUsed: &fb, RoundNumber: &one,
			TokensIn: 10, TokensOut: 20, StartedAt: now.Add(-time.Second), EndedAt: now, Source: core.SourceService,
			RealCost: 1000, Content: hostile, Attempt: core.AttemptWon}},
	}
	_, err = b.store.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: b.org.ID, Billed: 1000, Receipt: rc})
	require.NoError(t, err)
	return id
}

// An owner walks the dashboard: the key they create answers an HTTP call
// and is refused once revoked; the overview draws the spend; the receipt of
// a panel call draws its deliberation; a hostile answer runs no script; the
// journal's export equals the journal; a provider key is set and tested;
// a key's limit is lowered; the audit trail shows what was done.
func TestBrowserDashboardOwnerWalk(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)
	ctx := browser(t)
	bg := context.Background()

	browserSignIn(t, ctx, b, "olive@acme.example", ownerPassword)
	waitText(t, ctx, "Overview of Acme Research")
	waitText(t, ctx, "No spend in the last 30 days")
	shoot(t, ctx, "overview-empty")

	// A key made on the keys page answers an HTTP call.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/keys"),
		chromedp.SendKeys(chromedp.CSS("#name"), "ci robot"),
		chromedp.Click(chromedp.CSS(`form[action="/keys"] button`))))
	waitText(t, ctx, "Your new key")
	secret, err := chromedp.Run(ctx, chromedp.Value(chromedp.CSS("#new-key")))
	require.NoError(t, err)
	status, body := apiCall(t, b, secret, "GET", "/v1/models", "")
	require.Equal(t, http.StatusOK, status, string(body))
	requestID := panelCall(t, b, secret)
	keys, err := b.store.ListKeys(bg, b.org.ID)
	require.NoError(t, err)
	key := keys[len(keys)-1]
	xss := settleHostile(t, b, key.ID, b.owner.ID)
	require.Nil(t, key.LastUsedAt, "a call writes no last use")
	require.NoError(t, b.acc.FlushLastUsed(bg, b.store), "the replica's flush does")
	keys, err = b.store.ListKeys(bg, b.org.ID)
	require.NoError(t, err)
	require.NotNil(t, keys[len(keys)-1].LastUsedAt)

	// The spend job runs, and the overview draws the spend.
	_, err = b.store.AggregateSpend(bg, time.Second, 1000)
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/")))
	waitText(t, ctx, "Spend by mode")
	require.Contains(t, text(t, ctx), "conclave-standard")
	require.Contains(t, text(t, ctx), "ci robot")
	bars, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('figure.chart svg rect').length`))
	require.NoError(t, err)
	require.Positive(t, bars, "the chart draws bars")
	shoot(t, ctx, "overview")

	// The receipts list, and the panel receipt's timeline.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/receipts")))
	waitText(t, ctx, requestID)
	shoot(t, ctx, "receipts")
	click(t, ctx, `a[href="/receipts/`+requestID+`"]`)
	waitText(t, ctx, "How the deliberation ran")
	page := text(t, ctx)
	for _, want := range []string{"Round 1 · seat-1", "Judge · round 1", "Synthesis", "used", "The answer", "Transcript"} {
		require.Contains(t, page, want)
	}
	spans, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('figure.chart svg rect').length`))
	require.NoError(t, err)
	rc, err := b.store.GetReceipt(bg, b.org.ID, requestID)
	require.NoError(t, err)
	require.GreaterOrEqual(t, spans, len(rc.Seats)+len(rc.Staff), "a bar for every call")
	for _, c := range append(rc.Seats, rc.Staff...) {
		require.NotEmpty(t, c.Attempt, "the receipt records how each call ended")
	}
	shoot(t, ctx, "receipt")

	// The hostile answer is shown as text; nothing in it runs.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/receipts/"+xss)))
	waitText(t, ctx, "window.__xss = 1")
	ran, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__xss !== undefined`))
	require.NoError(t, err)
	require.False(t, ran, "no script of the answer ran")
	bad, err := chromedp.Run(ctx, chromedp.Evaluate[int](
		`document.querySelectorAll('.answer script, .answer img, .answer [onerror], .answer a[href^="javascript"]').length`))
	require.NoError(t, err)
	require.Zero(t, bad, "no script, image, handler or javascript: link reached the page")
	click(t, ctx, `details.transcript summary`)
	ran, err = chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__xss !== undefined`))
	require.NoError(t, err)
	require.False(t, ran)
	shoot(t, ctx, "receipt-hostile")

	// The money page, and its exports equal the journal.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/money")))
	waitText(t, ctx, "conclave balance add --org "+b.org.ID)
	shoot(t, ctx, "money")
	journal, err := b.store.ListPostings(bg, b.org.ID)
	require.NoError(t, err)
	cookie := signIn(t, b, "olive@acme.example", ownerPassword, nil)
	res, data := get(t, b, "/money/export.json", cookie)
	require.Equal(t, http.StatusOK, res.StatusCode, data)
	var exported []struct {
		PostingID    int64  `json:"posting_id"`
		Kind         string `json:"kind"`
		Memo         string `json:"memo"`
		AmountMicros int64  `json:"amount_micros"`
	}
	require.NoError(t, json.Unmarshal([]byte(data), &exported))
	require.Len(t, exported, len(journal))
	for i, e := range exported {
		p := journal[len(journal)-1-i] // the export is newest first
		var amount core.Micros
		for _, l := range p.Legs {
			if l.Account == core.AccountOrgBalance {
				amount = l.Amount
			}
		}
		require.Equal(t, p.ID, e.PostingID)
		require.Equal(t, p.Kind, e.Kind)
		require.Equal(t, p.Memo, e.Memo)
		require.Equal(t, int64(amount), e.AmountMicros)
	}
	res, data = get(t, b, "/money/export.csv", cookie)
	require.Equal(t, http.StatusOK, res.StatusCode)
	rows, err := csv.NewReader(bytes.NewReader([]byte(data))).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, len(journal)+1, "a header and a row per posting")
	for i, row := range rows[1:] {
		require.Equal(t, strconv.FormatInt(exported[i].PostingID, 10), row[0])
		require.Equal(t, strconv.FormatInt(exported[i].AmountMicros, 10), row[5])
	}

	// A provider key: set, tested through the egress layer, removed.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/byok"),
		chromedp.SendKeys(chromedp.CSS("#openai-key"), "sk-test-"+strings.Repeat("k", 40)),
		chromedp.Click(chromedp.CSS(`form[action="/byok/openai"] button`))))
	waitText(t, ctx, "Provider key saved")
	// The page scrolls to the provider's card (#openai) as it loads: a
	// mouse click computed before the scroll lands elsewhere, so the form
	// is submitted as its button would.
	require.NoError(t, chromedp.Do(ctx, chromedp.Submit(chromedp.CSS(`form[action="/byok/openai/test"]`))))
	waitText(t, ctx, "Test of the OpenAI key")
	require.Contains(t, text(t, ctx), "answered on your key")
	shoot(t, ctx, "byok")
	click(t, ctx, `a[href="/byok/openai/remove"]`)
	waitText(t, ctx, "Remove the OpenAI key?")
	shoot(t, ctx, "byok-remove")
	click(t, ctx, `form[action="/byok/openai/remove"] button`)
	waitText(t, ctx, "Provider key removed")

	// A key's rate, lowered; a value past what the organisation has is
	// refused beside its field, and nothing changes.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/keys/"+key.ID+"/limits"),
		chromedp.SendKeys(chromedp.CSS("#rpm"), "100000"),
		chromedp.Click(chromedp.CSS(`form[action$="/limits"] button`))))
	waitText(t, ctx, "the most this organisation has")
	shoot(t, ctx, "key-limits-refused")
	require.NoError(t, chromedp.Do(ctx, chromedp.SetValue(chromedp.CSS("#rpm"), "5"),
		chromedp.Click(chromedp.CSS(`form[action$="/limits"] button`))))
	waitText(t, ctx, "Limits saved")
	require.Contains(t, text(t, ctx), "5/min")
	require.Contains(t, text(t, ctx), "just now", "the key's last use")
	shoot(t, ctx, "keys-with-limits")

	// The key, revoked, is refused on the API.
	click(t, ctx, `a[href="/keys/`+key.ID+`/revoke"]`)
	waitText(t, ctx, "cannot be restored")
	click(t, ctx, `form[action$="/revoke"] button`)
	waitText(t, ctx, "Key revoked")
	status, body = apiCall(t, b, secret, "GET", "/v1/models", "")
	require.Equal(t, http.StatusUnauthorized, status, string(body))

	// The audit trail shows it all.
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/audit")))
	waitText(t, ctx, core.AuditKeyRevoked)
	page = text(t, ctx)
	for _, want := range []string{core.AuditKeyCreated, core.AuditKeyChanged, core.AuditBYOKSet, core.AuditBYOKRemoved, "olive@acme.example"} {
		require.Contains(t, page, want)
	}
	shoot(t, ctx, "audit")
}

// A member sees their own usage only: the overview and receipts of their
// keys, not the owner's; the provider keys page says only whether each is
// set, and setting one is refused; the audit trail is not theirs.
func TestBrowserDashboardMemberSeesOwnUsage(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	bg := context.Background()
	owner := b.principal(t, b.owner)
	ownerSecret, ownerKey, err := b.people.CreateKey(bg, owner, &people.NewKey{Name: "owner's ci"})
	require.NoError(t, err)
	link, _, err := b.people.Invite(bg, owner, "kim@acme.example", core.RoleMember)
	require.NoError(t, err)
	_, err = b.people.AcceptWithPassword(bg, linkSecret(link), "Kim Member", "kim's long passphrase", "127.0.0.1")
	require.NoError(t, err)
	members, err := b.store.Members(bg, b.org.ID)
	require.NoError(t, err)
	var kim *core.Person
	for _, m := range members {
		if m.Email == "kim@acme.example" {
			kim = &core.Person{ID: m.ID, Email: m.Email, Name: m.Name}
		}
	}
	require.NotNil(t, kim)
	kimSecret, _, err := b.people.CreateKey(bg, b.principal(t, kim), &people.NewKey{Name: "kim's laptop"})
	require.NoError(t, err)
	_, err = b.people.SetBYOK(bg, owner, core.ProviderAnthropic, "sk-ant-"+strings.Repeat("a", 40), "", "")
	require.NoError(t, err)

	ownerCall := panelCall(t, b, ownerSecret)
	kimCall := panelCall(t, b, kimSecret)
	_, err = b.store.AggregateSpend(bg, time.Second, 1000)
	require.NoError(t, err)

	ctx := browser(t)
	browserSignIn(t, ctx, b, "kim@acme.example", "kim's long passphrase")
	waitText(t, ctx, "Your usage in Acme Research")
	page := text(t, ctx)
	require.Contains(t, page, "kim's laptop")
	require.NotContains(t, page, "owner's ci", "the owner's key's spend is not a member's to see")
	shoot(t, ctx, "overview-member")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/receipts")))
	waitText(t, ctx, "Your receipts")
	page = text(t, ctx)
	require.Contains(t, page, kimCall)
	require.NotContains(t, page, ownerCall)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/receipts/"+ownerCall)))
	waitText(t, ctx, "No receipt of yours")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/byok")))
	waitText(t, ctx, "Only owners may set, test or remove provider keys")
	page = text(t, ctx)
	require.Contains(t, page, "Anthropic")
	require.NotContains(t, page, "aaaa", "a member never sees a key's hint")
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('main form').length`))
	require.NoError(t, err)
	require.Zero(t, n, "no form to set, test or remove a key")
	shoot(t, ctx, "byok-member")

	cookie := signIn(t, b, "kim@acme.example", "kim's long passphrase", nil)
	req := newRequest(t, "POST", b.origin+"/byok/openai", map[string][]string{"api_key": {"sk-" + strings.Repeat("m", 40)}})
	req.Header.Set("Origin", b.origin)
	req.AddCookie(cookie)
	res, body := fetch(t, req)
	require.Equal(t, http.StatusForbidden, res.StatusCode, body)
	res, _ = get(t, b, "/audit", cookie)
	require.Equal(t, http.StatusForbidden, res.StatusCode)
	res, _ = get(t, b, "/keys/"+ownerKey.ID+"/limits", cookie)
	require.Equal(t, http.StatusNotFound, res.StatusCode, "another person's key is not a member's to change")
	res, _ = get(t, b, "/people/"+b.owner.ID+"/remove", cookie)
	require.Equal(t, http.StatusForbidden, res.StatusCode)

	// The owner removes Kim after a confirmation; Kim's key is then refused.
	b.setOwnerPassword(t)
	owners := signIn(t, b, "olive@acme.example", ownerPassword, nil)
	res, body = get(t, b, "/people/"+kim.ID+"/remove", owners)
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	require.Contains(t, body, "Remove kim@acme.example from Acme Research?")
	members, err = b.store.Members(bg, b.org.ID)
	require.NoError(t, err)
	require.Len(t, members, 2, "asking changed nothing")
	req = newRequest(t, "POST", b.origin+"/people/"+kim.ID+"/remove", nil)
	req.Header.Set("Origin", b.origin)
	req.AddCookie(owners)
	res, body = fetch(t, req)
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	require.Equal(t, "/people?done=removed", res.Header.Get("Location"))
	status, _ := apiCall(t, b, kimSecret, "GET", "/v1/models", "")
	require.Equal(t, http.StatusForbidden, status, "a removed person's key is refused")
}
