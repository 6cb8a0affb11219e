package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/people"
)

// The dashboard's pages answer bad input in words beside what caused it,
// and change nothing: a filter they cannot read, a receipt that is not
// there, a request id looked up, a page past the last.
func TestDashboardPagesAnswerBadInput(t *testing.T) {
	t.Parallel()
	b := setup(t, people.Config{})
	b.setOwnerPassword(t)
	c := signIn(t, b, "olive@acme.example", ownerPassword, nil)
	secret, _, err := b.people.CreateKey(context.Background(), b.principal(t, b.owner), &people.NewKey{Name: "ci"})
	require.NoError(t, err)
	id := panelCall(t, b, secret)

	for _, tc := range []struct {
		path   string
		status int
		want   string
	}{
		{"/receipts?from=yesterday", http.StatusUnprocessableEntity, "not a value this filter takes"},
		{"/receipts?lane=slow", http.StatusUnprocessableEntity, "not a value this filter takes"},
		{"/receipts?capped=maybe", http.StatusUnprocessableEntity, "not a value this filter takes"},
		{"/receipts?mode=%00", http.StatusUnprocessableEntity, "not a value this filter takes"},
		{"/receipts?after=never&after_id=x", http.StatusUnprocessableEntity, "not a value this filter takes"},
		{"/receipts?mode=no-such-mode", http.StatusOK, "No receipt matches these filters"},
		{"/receipts?lane=panel", http.StatusOK, id},
		{"/receipts/req_nothing", http.StatusNotFound, "No receipt for request req_nothing"},
		{"/money?kind=gift", http.StatusUnprocessableEntity, "not a value this filter takes"},
		{"/money?before=-3", http.StatusUnprocessableEntity, "not a value this filter takes"},
		{"/money?kind=call_charge", http.StatusOK, id},
		{"/money/export.csv?kind=gift", http.StatusUnprocessableEntity, "Nothing was exported"},
		{"/audit?action=key.stolen", http.StatusUnprocessableEntity, "not a value this filter takes"},
		{"/audit?action=key.created", http.StatusOK, core.AuditKeyCreated},
		{"/byok/nowhere/remove", http.StatusNotFound, "There is no page at this address"},
		{"/keys/key_nothing/limits", http.StatusNotFound, "There is no page at this address"},
	} {
		res, body := get(t, b, tc.path, c)
		require.Equal(t, tc.status, res.StatusCode, "%s: %s", tc.path, body)
		require.Contains(t, body, tc.want, tc.path)
	}

	// A request id typed in the lookup opens its receipt.
	req := newRequest(t, "GET", b.origin+"/receipts?request_id="+id, nil)
	req.AddCookie(c)
	res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	_ = res.Body.Close()
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	require.Equal(t, "/receipts/"+id, res.Header.Get("Location"))

	// A key limit that is not a number is said beside its field; the key
	// is unchanged.
	keys, err := b.store.ListKeys(context.Background(), b.org.ID)
	require.NoError(t, err)
	form := map[string][]string{"rpm": {"lots"}}
	post := newRequest(t, "POST", b.origin+"/keys/"+keys[0].ID+"/limits", form)
	post.Header.Set("Origin", b.origin)
	post.AddCookie(c)
	res, body := fetch(t, post)
	require.Equal(t, http.StatusUnprocessableEntity, res.StatusCode)
	require.Contains(t, body, "Give a whole number.")
	after, err := b.store.ListKeys(context.Background(), b.org.ID)
	require.NoError(t, err)
	require.Equal(t, keys[0].RPM, after[0].RPM)

	// A memo a spreadsheet would run as a formula is exported as text in
	// the CSV, and as it is in the JSON.
	_, err = b.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: b.org.ID, Amount: core.MicrosPerUSD, Memo: `=HYPERLINK("https://evil.example")`})
	require.NoError(t, err)
	res, body = get(t, b, "/money/export.csv", c)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `"'=HYPERLINK(""https://evil.example"")"`)
	res, body = get(t, b, "/money/export.json", c)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, `"memo":"=HYPERLINK(\"https://evil.example\")"`)

	// The journal's pages: the second starts below the first's last row.
	res, body = get(t, b, "/money", c)
	require.Equal(t, http.StatusOK, res.StatusCode)
	require.Contains(t, body, "No older postings.")
	require.True(t, strings.Contains(body, "Trial credit"))
}
