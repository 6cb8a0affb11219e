package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/genie"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/mcp"
)

// panelTest is a test run of acme-panl at plus, two medium questions:
// $0.114336 each (api/runs_test.go works it out).
const (
	panelTest      = `{"model":"acme-panl","buckets":{"medium":2}}`
	panelTestPrice = core.Micros(2 * 114_336)
)

// quote makes a quote for key as ask_genie does, through the gateway's
// own Quotes service.
func (tb *testBundle) quote(t *testing.T, key string, kind runs.Kind, request string) *genie.Quote {
	t.Helper()
	ctx := context.Background()
	p, err := tb.access.Authenticate(ctx, key)
	require.NoError(t, err)
	q, err := tb.quotes.Make(ctx, p, kind, json.RawMessage(request))
	require.NoError(t, err)
	return q
}

// approvedAnswer is approve_quote's answer.
type approvedAnswer struct {
	acceptance
	Quote struct {
		ID       string  `json:"quote_id"`
		Kind     string  `json:"kind"`
		PriceUSD float64 `json:"price_usd"`
		Status   string  `json:"status"`
	} `json:"quote"`
}

// approve approves quoteID with key, which must succeed.
func (tb *testBundle) approve(t *testing.T, key, quoteID string) (approvedAnswer, toolResult) {
	t.Helper()
	res := tb.callTool(t, key, "approve_quote", map[string]any{"quote_id": quoteID})
	require.False(t, res.IsError, res.Content[0].Text)
	require.JSONEq(t, string(res.StructuredContent), res.Content[0].Text)
	var a approvedAnswer
	res.text(t, &a)
	require.True(t, a.OK)
	require.NotEmpty(t, a.BatchID)
	require.Equal(t, quoteID, a.Quote.ID)
	require.Equal(t, "launched", a.Quote.Status)
	return a, res
}

// A quote approved over the official Go SDK launches its run once at the
// quoted price; approving it again answers the same run, replayed, and
// charges nothing more. Every refusal of the quote itself — malformed,
// unknown, another organisation's, another key's, expired, used — is in
// the self-answered shape, and a call without quote_id is -32602.
func TestApproveQuote(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	q := tb.quote(t, key, runs.KindTest, panelTest)
	require.Equal(t, panelTestPrice, q.Price)
	require.Equal(t, 2, q.Questions)
	before := tb.money(t, org.ID)

	ctx := context.Background()
	cs, err := connectGoSDK(ctx, tb, key)
	require.NoError(t, err)
	defer cs.Close()
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "approve_quote", Arguments: map[string]any{"quote_id": q.ID}})
	require.NoError(t, err)
	require.False(t, res.IsError, res.Content[0].(*sdk.TextContent).Text)
	var first approvedAnswer
	require.NoError(t, json.Unmarshal([]byte(res.Content[0].(*sdk.TextContent).Text), &first))
	require.True(t, first.OK)
	require.Equal(t, "launched", first.Quote.Status)
	require.Equal(t, 0.228672, *first.BilledUSD, "charged the quoted price")
	require.Equal(t, 2, first.TotalQuestions)
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, panelTestPrice)

	again, againRes := tb.approve(t, key, q.ID)
	require.Equal(t, first.BatchID, again.BatchID, "the same run")
	require.True(t, replayed(againRes))
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, panelTestPrice)
	require.Equal(t, 1, tb.batches(t, org.ID))

	// The run polls as run_test launched it.
	var polled struct {
		OK    bool `json:"ok"`
		Batch struct {
			ID string `json:"id"`
		} `json:"batch"`
	}
	tb.succeed(t, key, "run_test", map[string]any{"batch_id": first.BatchID}, &polled)
	require.Equal(t, first.BatchID, polled.Batch.ID)

	// Refusals of the quote: nothing launched, nothing charged.
	charged := tb.money(t, org.ID)
	sameOrgKey := tb.newKey(t, org.ID)
	_, otherKey := tb.newOrg(t, "Other", "OTHR")
	tb.fail(t, sameOrgKey, "approve_quote", map[string]any{"quote_id": q.ID}, 403, "payer_mismatch")
	tb.fail(t, otherKey, "approve_quote", map[string]any{"quote_id": q.ID}, 404, "quote_not_found")
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": core.NewID("qt")}, 404, "quote_not_found")
	for _, bad := range []string{"qt_bad", "", "batch-1", strings.ToUpper(q.ID)} {
		tb.fail(t, key, "approve_quote", map[string]any{"quote_id": bad}, 400, "invalid_quote_id")
	}
	require.Contains(t, tb.invalidParams(t, key, "approve_quote", map[string]any{}), "quote_id")

	expired := tb.quote(t, key, runs.KindTest, panelTest)
	_, err = tb.pool.Exec(ctx, `UPDATE genie_quotes SET expires_at = now() - interval '1 second' WHERE id = $1`, expired.ID)
	require.NoError(t, err)
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": expired.ID}, 410, "quote_expired")

	// A launch refused passes its code on, and the quote is used: the
	// mode is not listed, which certification needs.
	cert := tb.quote(t, key, runs.KindCertify, `{"model":"acme-panl"}`)
	require.Equal(t, core.Micros(50_000_000), cert.Price)
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": cert.ID}, 400, "listing_required")
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": cert.ID}, 409, "quote_already_used")
	// Listed, the certification's $50 is more than the balance holds.
	var listed struct{ Mode authoredMode }
	tb.succeed(t, key, "list_mode", map[string]any{"mode_id": "acme-panl"}, &listed)
	require.NoError(t, tb.approveWhenPending(ctx, "acme-panl"))
	cert = tb.quote(t, key, runs.KindCertify, `{"model":"acme-panl"}`)
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": cert.ID}, 402, "insufficient_balance")
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": cert.ID}, 409, "quote_already_used")
	require.Equal(t, charged, tb.money(t, org.ID), "no refusal charged anything")
	require.Equal(t, 1, tb.batches(t, org.ID))
}

// A price that rose above the quoted one is requoted: nothing launched, a
// new quote at the price in the extra block, which approves; the old
// quote is used.
func TestApproveQuoteRequoted(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	q := tb.quote(t, key, runs.KindTest, panelTest)
	// The quote was made when the run cost a micro-dollar less.
	_, err := tb.pool.Exec(context.Background(), `UPDATE genie_quotes SET price_micros = price_micros - 1 WHERE id = $1`, q.ID)
	require.NoError(t, err)
	before := tb.money(t, org.ID)

	out := tb.fail(t, key, "approve_quote", map[string]any{"quote_id": q.ID}, 409, "requoted")
	var nq struct {
		ID       string  `json:"quote_id"`
		PriceUSD float64 `json:"price_usd"`
		Status   string  `json:"status"`
	}
	require.NoError(t, json.Unmarshal(out.Conclave["quote"], &nq), "the new quote is in the extra block")
	require.NotEqual(t, q.ID, nq.ID)
	require.Equal(t, 0.228672, nq.PriceUSD)
	require.Equal(t, "open", nq.Status)
	require.Equal(t, before, tb.money(t, org.ID), "nothing charged")
	require.Zero(t, tb.batches(t, org.ID), "nothing launched")

	a, _ := tb.approve(t, key, nq.ID)
	require.Equal(t, 0.228672, *a.BilledUSD)
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, panelTestPrice)
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": q.ID}, 409, "quote_already_used")
}

// The store failing under an approval: a quote that cannot be read is
// quote_read_failed, an approval that cannot be written
// approval_not_recorded; neither launches or charges anything, and the
// quote approves once the store is back.
func TestApproveQuoteStoreFailures(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	q := tb.quote(t, key, runs.KindTest, panelTest)
	before := tb.money(t, org.ID)
	ctx := context.Background()
	exec := func(sql string) {
		t.Helper()
		_, err := tb.pool.Exec(ctx, sql)
		require.NoError(t, err)
	}

	exec(`CREATE FUNCTION refuse_approval() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN RAISE EXCEPTION 'the disk is full'; END $$`)
	exec(`CREATE TRIGGER refuse_approval BEFORE UPDATE ON genie_quotes FOR EACH ROW EXECUTE FUNCTION refuse_approval()`)
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": q.ID}, 503, "approval_not_recorded")
	exec(`DROP TRIGGER refuse_approval ON genie_quotes`)

	exec(`ALTER TABLE genie_quotes RENAME TO genie_quotes_away`)
	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": q.ID}, 503, "quote_read_failed")
	exec(`ALTER TABLE genie_quotes_away RENAME TO genie_quotes`)

	require.Equal(t, before, tb.money(t, org.ID), "nothing charged")
	require.Zero(t, tb.batches(t, org.ID), "nothing launched")
	tb.approve(t, key, q.ID)
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, panelTestPrice)
}

// With genie.chat_history off there are no quotes: approve_quote is 503
// chat_history_required.
func TestApproveQuoteWithoutChatHistory(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.historyOff = true })
	_, key := tb.acmePanel(t)
	out := tb.fail(t, key, "approve_quote", map[string]any{"quote_id": core.NewID("qt")}, 503, "chat_history_required")
	require.Contains(t, out.Error.Message, "run_test")
}

// committedThenLost commits the first launch and then answers that its
// outcome is unknown: the connection closed as the commit returned.
type committedThenLost struct {
	runs.LaunchStore
	mu   sync.Mutex
	lost bool
}

func (c *committedThenLost) Launch(ctx context.Context, p *runs.LaunchParams) (*runs.Batch, error) {
	b, err := c.LaunchStore.Launch(ctx, p)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err == nil && !c.lost {
		c.lost = true
		return nil, fmt.Errorf("%w: the connection closed after the commit", core.ErrOutcomeUnknown)
	}
	return b, err
}

// A launch that committed but could not be confirmed is launch_failed;
// approving the same quote again answers that run: one batch, one charge.
func TestApproveQuoteLaunchFailedRetry(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) {
		o.launches = func(s runs.LaunchStore) runs.LaunchStore { return &committedThenLost{LaunchStore: s} }
	})
	org, key := tb.acmePanel(t)
	q := tb.quote(t, key, runs.KindTest, panelTest)
	before := tb.money(t, org.ID)

	tb.fail(t, key, "approve_quote", map[string]any{"quote_id": q.ID}, 502, "launch_failed")
	a, res := tb.approve(t, key, q.ID)
	require.True(t, replayed(res), "the run the failed approval launched")
	b, _ := tb.approve(t, key, q.ID)
	require.Equal(t, a.BatchID, b.BatchID)
	require.Equal(t, 1, tb.batches(t, org.ID), "launched once")
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, panelTestPrice)
}

// Approvals of one quote racing on two replicas of one database launch
// one run, charged once; every approval answers that run.
func TestApproveQuoteExactlyOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	one := setup(t, func(o *setupOpts) { o.dbURL = url })
	two := setup(t, func(o *setupOpts) { o.dbURL = url })
	org, key := one.acmePanel(t)
	for round := range 3 {
		q := one.quote(t, key, runs.KindTest, panelTest)
		before := one.money(t, org.ID)
		start := make(chan struct{})
		ids := make([]string, 6)
		var launched atomic.Int32
		var wg sync.WaitGroup
		for i := range ids {
			wg.Add(1)
			go func() {
				defer wg.Done()
				replica := []*testBundle{one, two}[i%2]
				<-start
				a, res := replica.approve(t, key, q.ID)
				ids[i] = a.BatchID
				if !replayed(res) {
					launched.Add(1)
				}
			}()
		}
		close(start)
		wg.Wait()
		for _, id := range ids {
			require.Equal(t, ids[0], id, "round %d: every approval answers the one run", round)
		}
		require.Equal(t, int32(1), launched.Load(), "round %d: one approval launched, the others answered its run", round)
		require.Equal(t, round+1, one.batches(t, org.ID), "round %d: one run launched", round)
		one.requireCharged(t, org.ID, before, core.PostingTestCharge, panelTestPrice)
	}
}

// approve_quote counts toward the batch limit of 8 self-answered calls.
func TestApproveQuoteCountsInTheBatchLimit(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.rpm = 100_000 })
	var elems []string
	for i := 1; i <= 9; i++ {
		elems = append(elems, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"approve_quote","arguments":{"quote_id":"qt_bad"}}}`, i))
	}
	r := tb.post(t, mcp.Path, tb.key, "["+strings.Join(elems, ",")+"]")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 9)
	for _, res := range out[:8] {
		require.Nil(t, res.Error, r.raw)
		require.Contains(t, string(res.Result), "invalid_quote_id")
	}
	requireBatchTooLarge(t, out[8], "9", "max_self_answered_calls")
}

// ask_genie, with the chat history kept, attaches a quote to the run it
// recommends, priced as run_test prices it; approve_quote launches it at
// that price, and the conversation is kept for the key alone.
func TestAskGenieQuoteApproves(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.genieHistory = true })
	org, key := tb.acmePanel(t)
	var ans struct {
		Answer string `json:"answer"`
		Quote  *struct {
			ID        string          `json:"quote_id"`
			Kind      string          `json:"kind"`
			Request   json.RawMessage `json:"request"`
			PriceUSD  float64         `json:"price_usd"`
			Questions int             `json:"questions"`
			Status    string          `json:"status"`
		} `json:"quote"`
		QuoteUnavailable string `json:"quote_unavailable"`
	}
	tb.succeed(t, key, "ask_genie", map[string]any{"mode": "acme-panl", "message": "What should I test first?"}, &ans)
	require.Empty(t, ans.QuoteUnavailable)
	require.NotNil(t, ans.Quote, "a quote for the first test run")
	require.Equal(t, "test", ans.Quote.Kind)
	require.Equal(t, "open", ans.Quote.Status)
	require.Equal(t, 60, ans.Quote.Questions)

	var dry acceptance
	tb.succeed(t, key, "run_test", map[string]any{"model": "acme-panl", "buckets": map[string]int{"light": 20, "medium": 20, "hard": 20},
		"dry_run": true}, &dry)
	require.Equal(t, *dry.TotalCostUSD, ans.Quote.PriceUSD, "the launch endpoints' price")

	before := tb.money(t, org.ID)
	a, _ := tb.approve(t, key, ans.Quote.ID)
	require.Equal(t, 60, a.TotalQuestions)
	require.Equal(t, ans.Quote.PriceUSD, *a.BilledUSD)
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, core.Micros(ans.Quote.PriceUSD*1e6+0.5))

	var turns, others int
	require.NoError(t, tb.pool.QueryRow(context.Background(),
		`SELECT count(*) FILTER (WHERE payer LIKE 'key:%'), count(DISTINCT payer) FROM genie_turns WHERE org_id = $1 AND mode_id = 'acme-panl'`,
		org.ID).Scan(&turns, &others))
	require.Equal(t, 2, turns, "the question and the answer")
	require.Equal(t, 1, others, "one payer's conversation")
}

// When a run cannot be quoted, Make says why, as ask_genie's
// quote_unavailable: invalid_spec, mode_not_owned, chat_history_required,
// or the code that refused the price.
func TestQuoteUnavailableReasons(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, key := tb.acmePanel(t)
	ctx := context.Background()
	p, err := tb.access.Authenticate(ctx, key)
	require.NoError(t, err)
	reason := func(q *genie.Quotes, kind runs.Kind, request string) string {
		t.Helper()
		_, err := q.Make(ctx, p, kind, json.RawMessage(request))
		require.Error(t, err)
		return genie.UnavailableReason(err)
	}
	require.Equal(t, "invalid_spec", reason(tb.quotes, runs.KindTest, `{"model":"acme-panl"}`))
	require.Equal(t, "invalid_spec", reason(tb.quotes, runs.KindTest, `["acme-panl"]`))
	require.Equal(t, "invalid_spec", reason(tb.quotes, "poll", `{"model":"acme-panl"}`))
	require.Equal(t, "mode_not_owned", reason(tb.quotes, runs.KindCertify, `{"model":"conclave-standard"}`))
	require.Equal(t, "model_not_found", reason(tb.quotes, runs.KindTest, `{"model":"acme-none","buckets":{"light":1}}`))
	off := setup(t, func(o *setupOpts) { o.historyOff = true })
	require.Equal(t, "chat_history_required", reason(off.quotes, runs.KindTest, panelTest))
	var n int
	require.NoError(t, tb.pool.QueryRow(ctx, `SELECT count(*) FROM genie_quotes`).Scan(&n))
	require.Zero(t, n, "nothing kept")
}

// launcherAnswering answers every launch that is not a dry run with
// answer: a refusal without a code, or an acceptance without a run.
type launcherAnswering struct {
	genie.Launcher
	answer func() (*runs.Acceptance, error)
}

func (l launcherAnswering) Test(ctx context.Context, p *access.Principal, k runs.Key, r *runs.TestRequest) (*runs.Acceptance, error) {
	if string(r.DryRun) == "true" {
		return l.Launcher.Test(ctx, p, k, r)
	}
	return l.answer()
}

// A launch refusal without a code is launch_refused with the launch's
// status, or 502 when it has none; a launch that answered without a run is
// launch_refused with 200, as the spec gives it. Each uses the quote:
// approving it again is quote_already_used. Nothing is launched or charged.
func TestApproveQuoteLaunchRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer func() (*runs.Acceptance, error)
		status int
		words  string
	}{
		{"no code, a status", func() (*runs.Acceptance, error) {
			return nil, &core.Error{Message: "the launcher turned this run down", Status: http.StatusConflict}
		}, http.StatusConflict, "the launcher turned this run down"},
		{"no code, no status", func() (*runs.Acceptance, error) {
			return nil, &core.Error{Message: "the launcher said no"}
		}, http.StatusBadGateway, "the launcher said no"},
		{"no run", func() (*runs.Acceptance, error) { return &runs.Acceptance{Kind: runs.KindTest}, nil }, http.StatusOK, "without a run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := setup(t, func(o *setupOpts) {
				o.quoteLauncher = func(l genie.Launcher) genie.Launcher { return launcherAnswering{Launcher: l, answer: tc.answer} }
			})
			org, key := tb.acmePanel(t)
			q := tb.quote(t, key, runs.KindTest, panelTest)
			before := tb.money(t, org.ID)
			out := tb.fail(t, key, "approve_quote", map[string]any{"quote_id": q.ID}, tc.status, "launch_refused")
			require.Contains(t, out.Error.Message, tc.words)
			tb.fail(t, key, "approve_quote", map[string]any{"quote_id": q.ID}, 409, "quote_already_used")
			require.Equal(t, before, tb.money(t, org.ID), "nothing charged")
			require.Zero(t, tb.batches(t, org.ID), "nothing launched")
		})
	}
}
