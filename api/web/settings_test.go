package web_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
)

// keyedCall makes a billed call with an Idempotency-Key: its request id,
// its answer and whether it was a replay.
func keyedCall(t *testing.T, b *bundle, secret, idemKey string) (id, answer string, replayed bool) {
	t.Helper()
	req, err := http.NewRequest("POST", b.origin+"/v1/chat/completions", strings.NewReader(
		`{"model":"conclave-standard","messages":[{"role":"user","content":"Should we adopt trunk-based development? Compare the risks and argue both sides."}]}`))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+secret)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", idemKey)
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(body))
	var out struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		Panel struct {
			RequestID string `json:"request_id"`
			Replayed  bool   `json:"replayed"`
		} `json:"panel"`
	}
	require.NoError(t, json.Unmarshal(body, &out))
	require.Len(t, out.Choices, 1)
	require.NotEmpty(t, out.Choices[0].Message.Content)
	return out.Panel.RequestID, out.Choices[0].Message.Content, out.Panel.Replayed
}

// Content retention: a member may not change it; the owner switches
// transcripts off on the settings page (audited), and the next call's
// receipt has no text — through the API with include_transcript=true,
// which says transcript_kept: false, and on its page, which says it was
// not kept — while a retry of that call with its Idempotency-Key still
// replays its answer; a call made before the switch keeps its text.
func TestBrowserRetentionSetting(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)
	bg := context.Background()
	owner := b.principal(t, b.owner)
	secret, _, err := b.people.CreateKey(bg, owner, &people.NewKey{Name: "ci"})
	require.NoError(t, err)
	link, _, err := b.people.Invite(bg, owner, "kim@acme.example", core.RoleMember)
	require.NoError(t, err)
	_, err = b.people.AcceptWithPassword(bg, linkSecret(link), "Kim Member", "kim's long passphrase", "127.0.0.1")
	require.NoError(t, err)

	beforeID, beforeAnswer, _ := keyedCall(t, b, secret, "before-1")

	// A member is refused, by the service and by the pages, and is not
	// offered the page.
	kim := signIn(t, b, "kim@acme.example", "kim's long passphrase", nil)
	res, body := get(t, b, "/settings", kim)
	require.Equal(t, http.StatusForbidden, res.StatusCode, body)
	req := newRequest(t, "POST", b.origin+"/settings/transcripts", url.Values{"transcripts": {"drop"}})
	req.Header.Set("Origin", b.origin)
	req.AddCookie(kim)
	res, body = fetch(t, req)
	require.Equal(t, http.StatusForbidden, res.StatusCode, body)
	_, home := get(t, b, "/", kim)
	require.NotContains(t, home, `href="/settings"`)
	org, err := b.store.GetOrg(bg, b.org.ID)
	require.NoError(t, err)
	require.True(t, org.KeepTranscripts, "the member changed nothing")

	// The owner switches transcripts off.
	ctx := browser(t)
	browserSignIn(t, ctx, b, "olive@acme.example", ownerPassword)
	waitText(t, ctx, "Overview of Acme Research")
	click(t, ctx, `nav a[href="/settings"]`)
	waitText(t, ctx, "Settings of Acme Research")
	checked, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('input[name=transcripts]:checked').value`))
	require.NoError(t, err)
	require.Equal(t, "keep", checked, "transcripts are kept by default")
	shoot(t, ctx, "settings")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS(`input[name=transcripts][value=drop]`)),
		chromedp.Click(chromedp.CSS(`form[action="/settings/transcripts"] button`))))
	waitText(t, ctx, "Transcripts off")
	checked, err = chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector('input[name=transcripts]:checked').value`))
	require.NoError(t, err)
	require.Equal(t, "drop", checked)
	shoot(t, ctx, "settings-transcripts-off")
	org, err = b.store.GetOrg(bg, b.org.ID)
	require.NoError(t, err)
	require.False(t, org.KeepTranscripts)
	require.Equal(t, 1, b.audit(t)[core.AuditOrgSettings])

	// The next call's receipt has no text; its retry still replays.
	id, answer, replayed := keyedCall(t, b, secret, "after-1")
	require.False(t, replayed)
	againID, again, replayed := keyedCall(t, b, secret, "after-1")
	require.True(t, replayed, "a retry with the same Idempotency-Key replays")
	require.Equal(t, id, againID)
	require.Equal(t, answer, again, "and gets its answer")

	status, raw := apiCall(t, b, secret, "GET", "/v1/receipts/"+id+"?include_transcript=true", "")
	require.Equal(t, http.StatusOK, status, string(raw))
	var rec struct {
		Receipt map[string]any `json:"receipt"`
	}
	require.NoError(t, json.Unmarshal(raw, &rec))
	require.Equal(t, false, rec.Receipt["transcript_kept"])
	require.NotContains(t, string(raw), `"content"`, "no text anywhere in the receipt")

	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/receipts/"+id)))
	waitText(t, ctx, "How the deliberation ran")
	page := text(t, ctx)
	require.Contains(t, page, "Not kept: when this call finished, Acme Research kept receipts without prompt and answer text")
	require.NotContains(t, page, "The answer\n", "no answer section")
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('details.transcript, .answer').length`))
	require.NoError(t, err)
	require.Zero(t, n, "no transcript and no answer on the page")
	shoot(t, ctx, "receipt-transcript-not-kept")

	// A call made before the switch keeps its text.
	status, raw = apiCall(t, b, secret, "GET", "/v1/receipts/"+beforeID+"?include_transcript=true", "")
	require.Equal(t, http.StatusOK, status, string(raw))
	require.NoError(t, json.Unmarshal(raw, &rec))
	require.Equal(t, true, rec.Receipt["transcript_kept"])
	require.Contains(t, string(raw), `"content"`)
	require.NotEmpty(t, beforeAnswer)
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(b.origin+"/receipts/"+beforeID)))
	waitText(t, ctx, "How the deliberation ran")
	n, err = chromedp.Run(ctx, chromedp.Evaluate[int](`document.querySelectorAll('details.transcript').length`))
	require.NoError(t, err)
	require.Positive(t, n, "the earlier receipt shows its transcript")
}
