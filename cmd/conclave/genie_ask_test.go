package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/genie"
)

// keyPrincipal is the principal of an API key of the organisation.
func (og *oauthGateway) keyPrincipal(t *testing.T) (*access.Principal, string) {
	t.Helper()
	secret := og.apiKey(t)
	p, err := og.g.acc.Authenticate(context.Background(), secret)
	require.NoError(t, err)
	return p, secret
}

// The assistant on a configured mode: before any run it recommends a first
// test run of 20 questions a bucket and says the mode cannot be certified
// (not the organisation's own); after a real test run its facts are that
// run's stored figures and its next test is computed from them; every
// figure of every answer is one of its facts; an answer that invents a
// figure is asked for again; an outage of every staff engine is
// genie_unavailable; a batch id alone answers the run's status in words.
func TestAskGenieOnTheGateway(t *testing.T) {
	t.Parallel()
	og := startPages(t, fastSimulator)
	a := og.g.asker // the assistant as serve builds it
	p, key := og.keyPrincipal(t)
	ctx := core.WithActor(context.Background(), p.Actor())

	ans, err := a.Ask(ctx, p, &genie.AskRequest{Mode: "conclave-standard", Message: "What should I test next?"})
	require.NoError(t, err)
	require.NotEmpty(t, ans.Answer)
	require.Empty(t, genie.Check(ans.Answer, genie.FactValues(ans.Facts)), "every figure stated is a fact: %s", ans.Answer)
	require.Empty(t, ans.Facts.Runs)
	require.Equal(t, map[string]int{"light": 20, "medium": 20, "hard": 20}, ans.Facts.Next.Buckets)
	require.False(t, ans.Facts.Readiness.Ready)
	require.False(t, ans.Facts.Readiness.Owned)
	require.Empty(t, ans.QuoteUnavailable, "genie.chat_history is on by default: the first test run is quoted")
	require.NotNil(t, ans.Quote)
	require.Equal(t, 60, ans.Quote.Questions)
	stored, err := og.g.db.store.Quote(ctx, p.Org.ID, ans.Quote.ID)
	require.NoError(t, err, "the quote is kept")
	require.Equal(t, genie.PayerOf(p), stored.Payer)

	run := og.testRun(t, key, `{"model":"conclave-standard","buckets":{"medium":4}}`)
	require.Equal(t, "complete", run["status"], "%v", run)
	ans, err = a.Ask(ctx, p, &genie.AskRequest{Mode: "CNCL:STND", Message: "How did the last run go?"})
	require.NoError(t, err)
	require.Len(t, ans.Facts.Runs, 1)
	f := ans.Facts.Runs[0]
	require.Equal(t, run["id"], f.BatchID)
	require.Equal(t, 4, f.Questions)
	require.NotNil(t, f.Result)
	require.Empty(t, genie.Check(ans.Answer, genie.FactValues(ans.Facts)), "%s", ans.Answer)
	if next := ans.Facts.Next; next != nil {
		require.Contains(t, next.Buckets, "medium", "the only bucket tested is the one to narrow")
		require.Empty(t, genie.Check(next.Reason, genie.FactValues(ans.Facts)), "%s", next.Reason)
	}

	// An engine that states a figure of its own is asked again; what
	// reaches the caller states none.
	invent := `What next? [[sim: answer="{\"answer\": \"W is 0.93, and 417 more questions would certify it.\"}"]]`
	ans, err = a.Ask(ctx, p, &genie.AskRequest{Mode: "conclave-standard", Message: invent})
	require.NoError(t, err)
	require.True(t, ans.Regenerated)
	require.NotContains(t, ans.Answer, "0.93")
	require.NotContains(t, ans.Answer, "417")
	require.Empty(t, genie.Check(ans.Answer, genie.FactValues(ans.Facts)), "%s", ans.Answer)

	_, err = a.Ask(ctx, p, &genie.AskRequest{Mode: "conclave-standard", Message: "Anything? [[sim: error=server_error]]"})
	require.Equal(t, core.CodeGenieUnavailable, core.AsError(err).Code, "%v", err)
	_, err = a.Ask(ctx, p, &genie.AskRequest{Mode: "acme-panl@v2", Message: "hi"})
	require.Equal(t, core.CodeSuffixNotSupported, core.AsError(err).Code, "%v", err)

	st, err := a.Ask(ctx, p, &genie.AskRequest{BatchID: run["id"].(string)})
	require.NoError(t, err)
	require.Contains(t, st.Answer, "The test run is complete: W is")
	require.Empty(t, genie.Check(st.Answer, genie.FactValues(st.Facts)), "%s", st.Answer)
	_, err = a.Ask(ctx, p, &genie.AskRequest{BatchID: "not-a-batch"})
	require.Equal(t, core.CodeInvalidBatchID, core.AsError(err).Code)
	_, err = a.Ask(ctx, p, &genie.AskRequest{BatchID: "00000000-0000-4000-8000-000000000000"})
	require.Equal(t, core.CodeBatchNotFound, core.AsError(err).Code)
}

// The assistant's quotes for a person: ask_genie through the person's
// connected app, on the organisation's own released mode, quotes its next
// test run for the person (the payer is the person, not the app nor a
// key); an API key of the same organisation may not approve it
// (payer_mismatch); another app of the same person is the same payer and
// approves it, launching the run once, charged to the organisation's
// balance at no more than the quote; approving it again from the first
// app answers the same run.
func TestGenieQuoteApprovedByAPerson(t *testing.T) {
	t.Parallel()
	og := startPages(t, fastSimulator)
	owner := releasedMode(t, og)
	ctx := context.Background()
	_, err := og.g.db.store.AddFunds(ctx, &core.AddFundsParams{OrgID: og.org.ID, Amount: 50 * core.MicrosPerUSD, Memo: "test"})
	require.NoError(t, err)

	app := og.appToken(t, "models:read tests")
	r := og.call(t, app.Access, "ask_genie", map[string]any{"mode": "acme-panl", "message": "What should I test next?"})
	require.Empty(t, toolError(t, r), r.raw)
	answer := r.body["result"].(map[string]any)["structuredContent"].(map[string]any)
	quote, ok := answer["quote"].(map[string]any)
	require.True(t, ok, "a quote for the next test run: %s", r.raw)
	id, _ := quote["quote_id"].(string)
	stored, err := og.g.db.store.Quote(ctx, og.org.ID, id)
	require.NoError(t, err)
	require.Equal(t, "person:"+owner.Person.ID, stored.Payer, "the person pays, whichever app asked")

	_, key := og.keyPrincipal(t)
	require.Equal(t, "payer_mismatch", toolError(t, og.call(t, key, "approve_quote", map[string]any{"quote_id": id})))

	before, err := og.g.db.store.GetBalance(ctx, og.org.ID)
	require.NoError(t, err)
	other := og.appToken(t, "models:read tests")
	a := og.call(t, other.Access, "approve_quote", map[string]any{"quote_id": id})
	require.Empty(t, toolError(t, a), a.raw)
	launched := a.body["result"].(map[string]any)["structuredContent"].(map[string]any)
	batchID, _ := launched["batch_id"].(string)
	require.NotEmpty(t, batchID, a.raw)
	again := og.call(t, app.Access, "approve_quote", map[string]any{"quote_id": id})
	require.Empty(t, toolError(t, again), again.raw)
	require.Equal(t, batchID, again.body["result"].(map[string]any)["structuredContent"].(map[string]any)["batch_id"])

	var batches int
	require.NoError(t, og.g.db.pool.QueryRow(ctx, `SELECT count(*) FROM batches WHERE org_id = $1`, og.org.ID).Scan(&batches))
	require.Equal(t, 1, batches, "launched once")
	after, err := og.g.db.store.GetBalance(ctx, og.org.ID)
	require.NoError(t, err)
	charged := before.Balance - after.Balance
	require.Positive(t, charged, "charged to the organisation's balance")
	require.LessOrEqual(t, charged, stored.Price, "never more than the quote")
}
