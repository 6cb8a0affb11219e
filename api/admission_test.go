package api_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

const hardQuestion = "Should we adopt trunk-based development? Compare the risks and recommend a strategy."

// requireReplay checks the spec's replay form: the stored answer, panel
// holding only request_id, replayed, mode, a note, seats_answered and
// answer_truncated.
func requireReplay(t *testing.T, r *response, first *response) {
	t.Helper()
	require.Equal(t, 200, r.status, r.raw)
	panel := r.body["panel"].(map[string]any)
	require.Equal(t, true, panel["replayed"])
	fp := first.body["panel"].(map[string]any)
	require.Equal(t, fp["request_id"], panel["request_id"], "the replay names the call that ran")
	require.Equal(t, fp["mode"], panel["mode"])
	require.Equal(t, fp["seats_answered"], panel["seats_answered"])
	require.NotEmpty(t, panel["note"])
	require.Contains(t, panel, "answer_truncated")
	for f := range panel {
		require.Contains(t, []string{"request_id", "replayed", "mode", "note", "seats_answered", "answer_truncated"}, f, "the replay form holds no %s", f)
	}
	require.Equal(t, first.body["choices"], r.body["choices"], "the stored answer")
	require.Equal(t, first.body["usage"], r.body["usage"])
	require.Equal(t, first.body["id"], r.body["id"])
}

func billedMicros(t *testing.T, r *response) core.Micros {
	t.Helper()
	v, ok := r.body["panel"].(map[string]any)["billed_usd"].(float64)
	require.True(t, ok, r.raw)
	m, err := core.ParseUSD(strconv.FormatFloat(v, 'f', -1, 64))
	require.NoError(t, err)
	return m
}

// A repeat of a succeeded call with its Idempotency-Key replays the stored
// answer, runs nothing and bills nothing, whatever the body; without a
// header an identical repeat is deduplicated by the derived key.
func TestIdempotentReplay(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	first := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", hardQuestion, ""), "Idempotency-Key", "order-7")
	require.Equal(t, 200, first.status, first.raw)
	billed := billedMicros(t, first)
	require.Positive(t, billed)

	again := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", "A different question entirely.", ""), "Idempotency-Key", "order-7")
	requireReplay(t, again, first)
	require.NotEqual(t, first.header.Get("X-Request-Id"), again.header.Get("X-Request-Id"), "the repeat is its own request")
	cb.requireBalanceMoved(t, core.TrialCredit, billed)

	// No header: the key is derived from organisation, key, model, messages.
	q := "Should a startup self-host its database? Weigh cost against operational risk."
	d1 := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", q, ""))
	require.Equal(t, 200, d1.status, d1.raw)
	d2 := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", q, ""))
	requireReplay(t, d2, d1)
	cb.requireBalanceMoved(t, core.TrialCredit, billed+billedMicros(t, d1))
	// Another key of the same organisation derives another key: it runs.
	other := cb.newKey(t, &core.CreateKeyParams{})
	d3 := cb.do(t, "POST", "/v1/chat/completions", other, chatBody("conclave-standard", q, ""))
	require.Equal(t, 200, d3.status)
	require.NotContains(t, d3.body["panel"], "replayed")
}

// A call that ended capped is not replayed: the repeat runs and bills again.
func TestIdempotentCappedRunsAgain(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	body, ceiling := cappedBody(t, cb, "conclave-standard", hardQuestion)
	first := cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "capped-1")
	require.Equal(t, 200, first.status, first.raw)
	require.Equal(t, true, first.body["panel"].(map[string]any)["capped"])
	second := cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "capped-1")
	require.Equal(t, 200, second.status, second.raw)
	panel := second.body["panel"].(map[string]any)
	require.NotContains(t, panel, "replayed")
	require.Equal(t, true, panel["capped"])
	require.NotEqual(t, first.body["panel"].(map[string]any)["request_id"], panel["request_id"])
	cb.requireBalanceMoved(t, core.TrialCredit, 2*ceiling)
}

// A call that failed unbilled frees its key: the retry runs.
func TestIdempotentFailedCallRunsAgain(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", "Migrate? [[sim: error=bad_request]]", ""), "Idempotency-Key", "retry-1")
	requireError(t, r, 503, core.CodeModeUnavailable, "api_error")
	r = cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", hardQuestion, ""), "Idempotency-Key", "retry-1")
	require.Equal(t, 200, r.status, r.raw)
	require.NotContains(t, r.body["panel"], "replayed")
	cb.requireBalanceMoved(t, core.TrialCredit, billedMicros(t, r))
}

// A repeat while the first call runs gets 409 request_in_progress once its
// wait for the call (here 50 ms) has passed; after the call ends, the
// repeat replays it. A malformed key is refused.
func TestIdempotentRepeatWhileRunning(t *testing.T) {
	t.Parallel()
	cb := setupChatWith(t, func(p *parts) { p.limits.RepeatWait = 50 * time.Millisecond })
	// delay is simulated time: 25 s at the test's time scale is 0.5 s a call.
	slow := chatBody("conclave-standard", hardQuestion+" [[sim: delay=25s]]", "")
	done := make(chan *response, 1)
	go func() { done <- cb.do(t, "POST", "/v1/chat/completions", cb.key, slow, "Idempotency-Key", "slow-1") }()
	require.Eventually(t, func() bool {
		n, err := cb.countRows("SELECT count(*) FROM idempotency_keys WHERE key = 'slow-1' AND state = 'in_flight'")
		return err == nil && n == 1
	}, 10*time.Second, 10*time.Millisecond)
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, slow, "Idempotency-Key", "slow-1")
	requireError(t, r, 409, core.CodeRequestInProgress, "invalid_request_error")
	require.NotEmpty(t, r.header.Get("Retry-After"))
	first := <-done
	require.Equal(t, 200, first.status, first.raw)
	requireReplay(t, cb.do(t, "POST", "/v1/chat/completions", cb.key, slow, "Idempotency-Key", "slow-1"), first)
	cb.requireBalanceMoved(t, core.TrialCredit, billedMicros(t, first))

	r = cb.do(t, "POST", "/v1/chat/completions", cb.key, slow, "Idempotency-Key", strings.Repeat("k", 300))
	requireError(t, r, 400, core.CodeInvalidRequest, "invalid_request_error")
}

func (cb *chatBundle) countRows(query string) (int, error) {
	var n int
	err := cb.store.Pool().QueryRow(context.Background(), query).Scan(&n)
	return n, err
}

// Requests per minute are counted per key, estimates included, with
// Retry-After on a refusal.
func TestRateLimitPerKey(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	key := cb.newKey(t, &core.CreateKeyParams{RPM: 3})
	est := chatBody("conclave-standard", "What is 2 + 2?", "")
	require.Equal(t, 200, cb.do(t, "POST", "/v1/estimate", key, est).status)
	require.Equal(t, 200, cb.do(t, "POST", "/v1/estimate", key, est).status)
	ok := cb.do(t, "POST", "/v1/chat/completions", key, chatBody("conclave-standard", "What is 2 + 2?", ""))
	require.Equal(t, 200, ok.status, ok.raw)
	r := cb.do(t, "POST", "/v1/chat/completions", key, chatBody("conclave-standard", "What is 3 + 3?", ""))
	requireError(t, r, 429, core.CodeRateLimitExceeded, "rate_limit_error")
	wait, err := strconv.Atoi(r.header.Get("Retry-After"))
	require.NoError(t, err)
	require.True(t, wait >= 1 && wait <= 20, "Retry-After %d s: one emission interval at 3 per minute", wait)
	requireError(t, cb.do(t, "POST", "/v1/estimate", key, est), 429, core.CodeRateLimitExceeded, "rate_limit_error")
	require.Equal(t, 200, cb.do(t, "POST", "/v1/estimate", cb.key, est).status, "another key has its own budget")
	cb.requireBalanceMoved(t, core.TrialCredit, billedMicros(t, ok))
}

// Every authenticated request counts against its key's rate, reads
// included: listing and reading modes and reading receipts spend the same
// budget as calls, and are refused with 429 and Retry-After once it is
// spent.
func TestReadsCountAgainstTheKeysRate(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	key := tb.newKey(t, &core.CreateKeyParams{RPM: 3})
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models", key, "").status)
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models/conclave-standard", key, "").status)
	require.Equal(t, 404, tb.do(t, "GET", "/v1/receipts/req_unknown", key, "").status)
	for _, path := range []string{"/v1/models", "/v1/models/CNCL:STND", "/v1/receipts/req_unknown"} {
		r := tb.do(t, "GET", path, key, "")
		requireError(t, r, 429, core.CodeRateLimitExceeded, "rate_limit_error")
		wait, err := strconv.Atoi(r.header.Get("Retry-After"))
		require.NoError(t, err)
		require.True(t, wait >= 1 && wait <= 20, "Retry-After %d s: one emission interval at 3 per minute", wait)
	}
	require.Equal(t, 200, tb.do(t, "GET", "/v1/models", tb.key, "").status, "another key has its own budget")
}

// Calls in flight are counted per organisation; an estimate needs a slot
// too; the slot is given back when the call ends.
func TestConcurrencyLimitPerOrganisation(t *testing.T) {
	t.Parallel()
	cb := setupChat(t, func(c *config.Config) { c.Limits.Concurrency = 2 })
	slow := func(i int) string {
		return chatBody("conclave-standard", hardQuestion+" [[sim: delay=25s]] #"+strconv.Itoa(i), "")
	}
	var wg sync.WaitGroup
	results := make([]*response, 2)
	for i := range 2 {
		wg.Go(func() { results[i] = cb.do(t, "POST", "/v1/chat/completions", cb.key, slow(i)) })
	}
	require.Eventually(t, func() bool {
		n, err := cb.countRows("SELECT count(*) FROM concurrency_slots")
		return err == nil && n == 2
	}, 10*time.Second, 10*time.Millisecond)
	other := cb.newKey(t, &core.CreateKeyParams{})
	r := cb.do(t, "POST", "/v1/estimate", other, chatBody("conclave-standard", "What is 2 + 2?", ""))
	requireError(t, r, 429, core.CodeConcurrencyLimitExceeded, "rate_limit_error")
	require.Equal(t, "5", r.header.Get("Retry-After"))
	requireError(t, cb.do(t, "POST", "/v1/chat/completions", other, chatBody("conclave-standard", "What is 2 + 2?", "")),
		429, core.CodeConcurrencyLimitExceeded, "rate_limit_error")
	wg.Wait()
	for _, res := range results {
		require.Equal(t, 200, res.status, res.raw)
	}
	n, err := cb.countRows("SELECT count(*) FROM concurrency_slots")
	require.NoError(t, err)
	require.Zero(t, n, "every slot was given back")
	require.Equal(t, 200, cb.do(t, "POST", "/v1/estimate", other, chatBody("conclave-standard", "What is 2 + 2?", "")).status)
}

// The spend rules: the monthly quota, the activation allowance of an
// unverified organisation, and no billing configured — each refused before
// any seat fires, moving no money.
func TestSpendRuleCodes(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	ctx := context.Background()
	q := chatBody("conclave-standard", hardQuestion, "")

	quota := core.Micros(1_000_000)
	_, err := cb.store.SetOrgLimits(ctx, &core.SetOrgLimitsParams{OrgID: cb.org.ID, MonthlyQuota: &quota})
	require.NoError(t, err)
	requireError(t, cb.do(t, "POST", "/v1/chat/completions", cb.newKey(t, &core.CreateKeyParams{}), q), 402, core.CodeQuotaExceeded, "invalid_request_error")
	cb.requireBalanceMoved(t, core.TrialCredit, 0)

	pending, _, err := cb.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Pending", Unverified: true})
	require.NoError(t, err)
	pb := &chatBundle{testBundle: &testBundle{srv: cb.srv, store: cb.store, org: pending}}
	rich := pb.newKey(t, &core.CreateKeyParams{Ceiling: 11 * core.MicrosPerUSD})
	requireError(t, pb.do(t, "POST", "/v1/chat/completions", rich, q), 402, core.CodeVerificationRequired, "invalid_request_error")
	r := pb.do(t, "POST", "/v1/chat/completions", pb.newKey(t, &core.CreateKeyParams{}), q)
	require.Equal(t, 200, r.status, "within the activation allowance: %s", r.raw)
	_, err = cb.store.SetOrgVerified(ctx, pending.ID, true)
	require.NoError(t, err)
	r = pb.do(t, "POST", "/v1/chat/completions", pb.newKey(t, &core.CreateKeyParams{Ceiling: 9 * core.MicrosPerUSD}), chatBody("conclave-standard", hardQuestion+" Again.", ""))
	require.Equal(t, 200, r.status, "verified: %s", r.raw)

	broke, _, err := cb.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Lapsed"})
	require.NoError(t, err)
	_, err = cb.store.Pool().Exec(ctx, "UPDATE balances SET balance_micros = 0, trial_remaining_micros = 0, trial_expired_at = now() WHERE org_id = $1", broke.ID)
	require.NoError(t, err)
	bb := &chatBundle{testBundle: &testBundle{srv: cb.srv, store: cb.store, org: broke}}
	requireError(t, bb.do(t, "POST", "/v1/chat/completions", bb.newKey(t, &core.CreateKeyParams{}), q), 402, core.CodeNoBillingConfigured, "invalid_request_error")
	_, err = cb.store.AddFunds(ctx, &core.AddFundsParams{OrgID: broke.ID, Amount: 1_000, Memo: "a little"})
	require.NoError(t, err)
	requireError(t, bb.do(t, "POST", "/v1/chat/completions", bb.newKey(t, &core.CreateKeyParams{}), q), 402, core.CodeInsufficientBalance, "invalid_request_error")
}

// cutDatabase makes the bundle's database refuse connections and drops the
// ones open (as when Postgres is down); the returned function lets them in
// again.
func (cb *chatBundle) cutDatabase(t *testing.T) (restore func()) {
	t.Helper()
	ctx := context.Background()
	var name string
	require.NoError(t, cb.store.Pool().QueryRow(ctx, "SELECT current_database()").Scan(&name))
	admin, err := pgx.Connect(ctx, os.Getenv(pgtest.EnvURL))
	require.NoError(t, err)
	t.Cleanup(func() { admin.Close(context.Background()) })
	db := pgx.Identifier{name}.Sanitize()
	_, err = admin.Exec(ctx, "ALTER DATABASE "+db+" ALLOW_CONNECTIONS false")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()", name)
	require.NoError(t, err)
	return func() {
		_, err := admin.Exec(ctx, "ALTER DATABASE "+db+" ALLOW_CONNECTIONS true")
		require.NoError(t, err)
	}
}

// With Postgres unreachable every call fails closed with 503
// service_unavailable — even for a key still in the authentication cache —
// no seat fires and nothing is billed; when Postgres is back the service
// recovers by itself.
func TestServiceUnavailableFailsClosedAndRecovers(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	body := chatBody("conclave-standard", "What is 2 + 2?", "")
	first := cb.do(t, "POST", "/v1/chat/completions", cb.key, body) // caches the key
	require.Equal(t, 200, first.status, first.raw)
	calls := cb.simCalls()

	restore := cb.cutDatabase(t)
	for _, path := range []string{"/v1/chat/completions", "/v1/estimate"} {
		r := cb.do(t, "POST", path, cb.key, chatBody("conclave-standard", "What is 3 + 3?", ""))
		requireError(t, r, 503, core.CodeServiceUnavailable, "api_error")
	}
	require.Equal(t, calls, cb.simCalls(), "no seat fired while the database was down")
	restore()

	require.Eventually(t, func() bool {
		return cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", "What is 4 + 4?", "")).status == 200
	}, 10*time.Second, 50*time.Millisecond, "the service recovers by itself")
	n, err := cb.countRows("SELECT count(*) FROM receipts")
	require.NoError(t, err)
	require.Equal(t, 2, n, "two calls ran and were billed, the refused ones were not")
	n, err = cb.countRows("SELECT count(*) FROM holds WHERE state = 'held'")
	require.NoError(t, err)
	require.Zero(t, n)
}

// A deliberation whose hold was taken away mid-call (the sweeper judged its
// process dead) cannot be recorded: 502 cost_unreadable, nothing billed,
// and the key free for a retry.
func TestCostUnreadableIsNotBilled(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	ctx := context.Background()
	body := chatBody("conclave-standard", hardQuestion+" [[sim: delay=25s]]", "")
	done := make(chan *response, 1)
	go func() { done <- cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "lost-1") }()
	var holdID string
	require.Eventually(t, func() bool {
		return cb.store.Pool().QueryRow(ctx, "SELECT id FROM holds WHERE state = 'held'").Scan(&holdID) == nil
	}, 10*time.Second, 10*time.Millisecond)
	require.NoError(t, cb.store.ReleaseHold(ctx, holdID, cb.org.ID))
	r := <-done
	requireError(t, r, 502, core.CodeCostUnreadable, "api_error")
	cb.requireBalanceMoved(t, core.TrialCredit, 0)
	r = cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", "What is 2 + 2?", ""), "Idempotency-Key", "lost-1")
	require.Equal(t, 200, r.status, "the retry runs: %s", r.raw)
}

// unconfirmedStore settles for real and then reports that it could not
// confirm the settlement on disk, as pgstore does when the database goes
// away after the commit and does not come back in time.
type unconfirmedStore struct{ *pgstore.Store }

func (s unconfirmedStore) SettleCall(ctx context.Context, p *core.SettleCallParams) (*core.Balance, error) {
	if _, err := s.Store.SettleCall(ctx, p); err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("settling hold %s: %w", p.HoldID, core.ErrOutcomeUnknown)
}

// A call whose bill could not be confirmed is answered 500 internal_error,
// never "nothing was billed"; the retry with the same key replays the
// answer it was billed for, and bills nothing more.
func TestUnconfirmedBillIsAnInternalErrorAndTheRetryReplays(t *testing.T) {
	t.Parallel()
	var store *pgstore.Store
	cb := setupChatWith(t, func(p *parts) {
		store = p.store
		p.settlement = unconfirmedStore{store}
	})
	body := chatBody("conclave-standard", "What is 2 + 2?", "")
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "unconfirmed-1")
	requireError(t, r, 500, core.CodeInternalError, "api_error")
	require.Contains(t, r.body["error"].(map[string]any)["message"], "never billed twice")
	var billed core.Micros
	require.NoError(t, store.Pool().QueryRow(context.Background(),
		"SELECT billed_micros FROM receipts WHERE org_id = $1", cb.org.ID).Scan(&billed))
	require.Positive(t, billed, "the call was billed")
	cb.requireBalanceMoved(t, core.TrialCredit, billed)

	again := cb.do(t, "POST", "/v1/chat/completions", cb.key, body, "Idempotency-Key", "unconfirmed-1")
	require.Equal(t, 200, again.status, again.raw)
	require.Equal(t, true, again.body["panel"].(map[string]any)["replayed"], "the retry replays the billed answer")
	cb.requireBalanceMoved(t, core.TrialCredit, billed)
}

// panicky is a deliberator with a fault.
type panicky struct{}

func (panicky) Plan(_ context.Context, req *deliberate.Request) (*deliberate.Plan, error) {
	return &deliberate.Plan{Request: *req, Lane: core.LanePanel}, nil
}

func (panicky) Execute(context.Context, *deliberate.Plan) (*deliberate.Result, error) {
	panic("a fault in the service")
}

// A fault in the service answers 500 internal_error; everything the call
// held is given back as it unwinds, so a retry with the same key runs
// again (here into the same fault) rather than waiting on a claim.
func TestInternalErrorGivesEverythingBack(t *testing.T) {
	t.Parallel()
	cb := setupWith(t, "Faulty", func(p *parts) { p.deliberator = panicky{} })
	key := cb.key
	for range 2 {
		r := cb.do(t, "POST", "/v1/chat/completions", key, chatBody("conclave-standard", hardQuestion, ""), "Idempotency-Key", "faulty-1")
		requireError(t, r, 500, core.CodeInternalError, "api_error")
	}
	cb.requireBalanceMoved(t, core.TrialCredit, 0)
	for _, table := range []string{"concurrency_slots", "idempotency_keys"} {
		n, err := cb.countRows("SELECT count(*) FROM " + table)
		require.NoError(t, err)
		require.Zero(t, n, "nothing left in %s", table)
	}
}
