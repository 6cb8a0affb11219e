package pgstore_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// billedCall is one billed call the dashboard tests settle.
type billedCall struct {
	id, key, person, mode string
	lane                  core.Lane
	billed                core.Micros
	at                    time.Time
	capped, substituted   bool
}

// settle places a hold for c and settles it with its receipt, as a billed
// call does.
func settle(t *testing.T, s *pgstore.Store, orgID string, c billedCall) {
	t.Helper()
	ctx := context.Background()
	h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: orgID, RequestID: c.id, Amount: c.billed + 1})
	require.NoError(t, err)
	status, finish := "succeeded", "stop"
	if c.capped {
		status = "capped"
	}
	rounds := 1
	rc := &core.Receipt{
		RequestID: c.id, Mode: c.mode, ModeKey: "k", ModeConfigHash: "h", Status: status,
		Billed: c.billed, TokenCharge: c.billed, Rounds: &rounds, SeatCount: 3, Payer: orgID, Lane: c.lane,
		PayerKind: core.PrincipalAPIKey, KeyID: c.key, PersonID: c.person, FinishReason: finish, Substituted: c.substituted,
		CreatedAt: c.at,
	}
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: orgID, Billed: c.billed, Receipt: rc})
	require.NoError(t, err)
}

func newDashboardStore(t *testing.T) (*pgstore.Store, *pgxpool.Pool, *core.Org) {
	t.Helper()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Dashboard"})
	require.NoError(t, err)
	return s, pool, org
}

// The receipts list filters by every field the page offers and pages by
// its cursor: every receipt once, newest first, whatever the page size.
func TestListReceiptsFiltersAndPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, org := newDashboardStore(t)
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	var calls []billedCall
	for i := range 9 {
		c := billedCall{id: fmt.Sprintf("req_%02d", i), key: []string{"key_a", "key_b", "key_c"}[i%3],
			person: []string{"person_ann", "person_bob", "person_ann"}[i%3], mode: []string{"fast", "deep"}[i%2],
			lane: []core.Lane{core.LanePanel, core.LaneExpress}[i%2], billed: core.Micros(1000 * (i + 1)),
			// two receipts share each second: the cursor's tie-breaker matters
			at: t0.Add(time.Duration(i/2) * time.Second), capped: i == 4, substituted: i == 5}
		settle(t, s, org.ID, c)
		calls = append(calls, c)
	}
	list := func(q core.ReceiptQuery) []string {
		t.Helper()
		q.OrgID = org.ID
		var ids []string
		for {
			q.Limit = 2
			rows, err := s.ListReceipts(ctx, &q)
			require.NoError(t, err)
			for _, r := range rows {
				ids = append(ids, r.RequestID)
			}
			if len(rows) < 2 {
				return ids
			}
			last := rows[len(rows)-1]
			q.After = &core.ReceiptCursor{CreatedAt: last.CreatedAt, RequestID: last.RequestID}
		}
	}
	want := func(keep func(billedCall) bool) []string {
		var ids []string
		for i := len(calls) - 1; i >= 0; i-- {
			if keep(calls[i]) {
				ids = append(ids, calls[i].id)
			}
		}
		return ids
	}
	yes, no := true, false
	require.Equal(t, want(func(billedCall) bool { return true }), list(core.ReceiptQuery{}), "every receipt once, newest first")
	require.Equal(t, want(func(c billedCall) bool { return c.key == "key_b" }), list(core.ReceiptQuery{KeyID: "key_b"}))
	require.Equal(t, want(func(c billedCall) bool { return c.person == "person_ann" }), list(core.ReceiptQuery{PersonID: "person_ann"}))
	require.Equal(t, want(func(c billedCall) bool { return c.mode == "deep" }), list(core.ReceiptQuery{Mode: "deep"}))
	require.Equal(t, want(func(c billedCall) bool { return c.lane == core.LaneExpress }), list(core.ReceiptQuery{Lane: core.LaneExpress}))
	require.Equal(t, []string{"req_04"}, list(core.ReceiptQuery{Capped: &yes}))
	require.Len(t, list(core.ReceiptQuery{Capped: &no}), 8)
	require.Equal(t, []string{"req_05"}, list(core.ReceiptQuery{Substituted: &yes}))
	require.Equal(t, want(func(c billedCall) bool {
		return !c.at.Before(t0.Add(2*time.Second)) && c.at.Before(t0.Add(4*time.Second))
	}),
		list(core.ReceiptQuery{From: t0.Add(2 * time.Second), To: t0.Add(4 * time.Second)}))
	require.Empty(t, list(core.ReceiptQuery{FinishReason: "length"}))

	other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other"})
	require.NoError(t, err)
	rows, err := s.ListReceipts(ctx, &core.ReceiptQuery{OrgID: other.ID})
	require.NoError(t, err)
	require.Empty(t, rows, "another organisation sees none of them")

	rows, err = s.ListReceipts(ctx, &core.ReceiptQuery{OrgID: org.ID, Limit: 1})
	require.NoError(t, err)
	r := rows[0]
	require.Equal(t, "req_08", r.RequestID)
	require.Equal(t, "key_c", r.KeyID)
	require.Equal(t, "person_ann", r.PersonID)
	require.Equal(t, core.PrincipalAPIKey, r.PayerKind)
	require.Equal(t, "stop", r.FinishReason)
	require.Equal(t, core.Micros(9000), r.Billed)

	full, err := s.GetReceipt(ctx, org.ID, "req_05")
	require.NoError(t, err)
	require.True(t, full.Substituted)
	require.Equal(t, "key_c", full.KeyID, "GET receipts reads who called too")
}

// The journal lists the postings that moved the balance, newest first, a
// page at a time, filtered by kind; the money state reads the balance.
func TestListJournalAndMoneyState(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, org := newDashboardStore(t)
	for i := range 5 {
		settle(t, s, org.ID, billedCall{id: fmt.Sprintf("req_j%d", i), mode: "fast", lane: core.LanePanel, billed: 2500, at: time.Now()})
	}
	_, err := s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: 50 * core.MicrosPerUSD, Memo: "invoice 1"})
	require.NoError(t, err)

	var all []*core.JournalRow
	q := core.JournalQuery{OrgID: org.ID, Limit: 3}
	for {
		rows, err := s.ListJournal(ctx, &q)
		require.NoError(t, err)
		all = append(all, rows...)
		if len(rows) < 3 {
			break
		}
		q.Before = rows[len(rows)-1].PostingID
	}
	require.Len(t, all, 7, "the trial grant, five calls and the top-up")
	require.Equal(t, core.PostingTopUp, all[0].Kind)
	require.Equal(t, core.PostingTrialGrant, all[6].Kind)
	var sum core.Micros
	for i, r := range all {
		if i > 0 {
			require.Less(t, r.PostingID, all[i-1].PostingID)
		}
		sum += r.Amount
	}
	m, err := s.MoneyState(ctx, org.ID)
	require.NoError(t, err)
	require.Equal(t, m.Balance.Balance, sum, "the journal adds up to the balance")
	require.True(t, m.ToppedUp)
	require.True(t, m.Verified)
	require.WithinDuration(t, time.Now().Add(core.TrialPeriod), m.TrialEnds, time.Minute)

	calls, err := s.ListJournal(ctx, &core.JournalQuery{OrgID: org.ID, Kind: core.PostingCallCharge})
	require.NoError(t, err)
	require.Len(t, calls, 5)
	require.Equal(t, "call req_j4", calls[0].Memo)
	require.Equal(t, core.Micros(-2500), calls[0].Amount)
}

// spendOf reads the organisation's daily spend as one line per row.
func spendOf(t *testing.T, s *pgstore.Store, orgID string) []string {
	t.Helper()
	rows, err := s.DailySpend(context.Background(), &core.SpendQuery{OrgID: orgID,
		From: time.Now().AddDate(0, 0, -2), To: time.Now().AddDate(0, 0, 2)})
	require.NoError(t, err)
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprintf("%s %s %s %s %d %d", r.Kind, r.Mode, r.KeyID, r.PersonID, r.Charges, r.Billed))
	}
	return out
}

// The spend job counts each charge exactly once: run twice, it adds
// nothing; it waits at a posting id whose transaction is still open, and
// counts it when it commits; and when its own transaction dies midway
// (its connection killed), nothing of that run is kept and the next run
// counts everything once.
func TestAggregateSpendCountsEachPostingExactlyOnce(t *testing.T) {
	// Not parallel: the spend cursor is the database's, and every posting
	// of the database (other tests' too) passes it. This test's database
	// is its own (pgtest.NewPool), so nothing else writes postings in it.
	ctx := context.Background()
	s, pool, org := newDashboardStore(t)
	now := time.Now()
	settle(t, s, org.ID, billedCall{id: "req_s1", key: "key_a", person: "person_ann", mode: "fast", lane: core.LanePanel, billed: 1000, at: now})
	settle(t, s, org.ID, billedCall{id: "req_s2", key: "key_a", person: "person_ann", mode: "fast", lane: core.LanePanel, billed: 3000, at: now})
	settle(t, s, org.ID, billedCall{id: "req_s3", key: "key_b", person: "person_bob", mode: "deep", lane: core.LanePanel, billed: 500, at: now})

	res, err := s.AggregateSpend(ctx, time.Second, 100)
	require.NoError(t, err)
	require.False(t, res.Waiting)
	require.Equal(t, 4, res.Postings, "the trial grant and three charges")
	want := []string{"call deep key_b person_bob 1 500", "call fast key_a person_ann 2 4000"}
	require.Equal(t, want, spendOf(t, s, org.ID))

	res, err = s.AggregateSpend(ctx, time.Second, 100)
	require.NoError(t, err)
	require.Zero(t, res.Postings, "nothing new: nothing counted twice")
	require.Equal(t, want, spendOf(t, s, org.ID))

	// A transaction takes a posting id and stays open; a later call
	// commits after it. The job stops before the open one's gap.
	open, err := pool.Begin(ctx)
	require.NoError(t, err)
	var openID int64
	require.NoError(t, open.QueryRow(ctx, `INSERT INTO postings (kind, org_id, memo) VALUES ('top_up', $1, 'slow') RETURNING id`, org.ID).Scan(&openID))
	_, err = open.Exec(ctx, `INSERT INTO journal_legs (posting_id, account, org_id, amount_micros) VALUES ($1, 'org_balance', $2, 7), ($1, 'cash_in', NULL, -7)`, openID, org.ID)
	require.NoError(t, err)
	settle(t, s, org.ID, billedCall{id: "req_s4", key: "key_b", person: "person_bob", mode: "deep", lane: core.LanePanel, billed: 250, at: now})
	res, err = s.AggregateSpend(ctx, time.Hour, 100)
	require.NoError(t, err)
	require.True(t, res.Waiting, "a young gap may still commit: wait")
	require.Zero(t, res.Postings)
	require.NoError(t, open.Commit(ctx))
	res, err = s.AggregateSpend(ctx, time.Hour, 100)
	require.NoError(t, err)
	require.Equal(t, 2, res.Postings)
	want = []string{"call deep key_b person_bob 2 750", "call fast key_a person_ann 2 4000"}
	require.Equal(t, want, spendOf(t, s, org.ID))

	// A rolled-back transaction leaves a gap for good: once the posting
	// after it is older than the grace, the job goes past it.
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `SELECT nextval('postings_id_seq')`)
		return err
	}))
	settle(t, s, org.ID, billedCall{id: "req_s5", key: "key_a", person: "person_ann", mode: "fast", lane: core.LanePanel, billed: 100, at: now})
	res, err = s.AggregateSpend(ctx, time.Hour, 100)
	require.NoError(t, err)
	require.True(t, res.Waiting, "within the grace the gap is waited on")
	// Past a grace shorter than the posting's age. (Backdating the posting
	// instead would move its charge to the day before between midnight
	// and the backdating's length past it, UTC.)
	time.Sleep(50 * time.Millisecond)
	res, err = s.AggregateSpend(ctx, 10*time.Millisecond, 100)
	require.NoError(t, err)
	require.Equal(t, 1, res.Postings, "past the old gap")
	want = []string{"call deep key_b person_bob 2 750", "call fast key_a person_ann 3 4100"}
	require.Equal(t, want, spendOf(t, s, org.ID))

	// The job's connection dies while it writes: nothing of that run stays.
	settle(t, s, org.ID, billedCall{id: "req_s6", key: "key_b", person: "person_bob", mode: "deep", lane: core.LanePanel, billed: 40, at: now})
	blocker, err := pool.Begin(ctx)
	require.NoError(t, err)
	_, err = blocker.Exec(ctx, `LOCK TABLE daily_spend IN EXCLUSIVE MODE`)
	require.NoError(t, err)
	done := make(chan error, 1)
	go func() {
		_, err := s.AggregateSpend(ctx, time.Hour, 100)
		done <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'INSERT INTO daily_spend%'`).Scan(&n)
		return err == nil && n == 1
	}, 10*time.Second, 20*time.Millisecond, "the job waits on the lock, mid-transaction")
	_, err = pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'INSERT INTO daily_spend%'`)
	require.NoError(t, err)
	require.Error(t, <-done, "the run died with its connection")
	require.NoError(t, blocker.Rollback(ctx))
	require.Equal(t, want, spendOf(t, s, org.ID), "nothing of the dead run was kept")
	res, err = s.AggregateSpend(ctx, time.Hour, 100)
	require.NoError(t, err)
	require.Equal(t, 1, res.Postings)
	want = []string{"call deep key_b person_bob 3 790", "call fast key_a person_ann 3 4100"}
	require.Equal(t, want, spendOf(t, s, org.ID), "and the next run counted it once")

	// The sums equal the journal's charges.
	var charged int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT -sum(l.amount_micros) FROM journal_legs l JOIN postings p ON p.id = l.posting_id
		WHERE p.kind = 'call_charge' AND l.org_id = $1 AND l.account = 'org_balance'`, org.ID).Scan(&charged))
	var summed int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT sum(billed_micros) FROM daily_spend WHERE org_id = $1`, org.ID).Scan(&summed))
	require.Equal(t, charged, summed)
}

// When keys were last used is written from memory, and never moves back;
// a key's limits change with an audit row, and only in its organisation.
func TestTouchKeysAndKeyLimits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, org := newDashboardStore(t)
	k, err := s.CreateKey(ctx, &core.CreateKeyParams{OrgID: org.ID, Hash: core.HashKey("ccl_live_" + strings.Repeat("d", 32)), Hint: "ccl_live_dd", Name: "robot"})
	require.NoError(t, err)
	later := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, s.TouchKeys(ctx, map[string]time.Time{k.ID: later}))
	require.NoError(t, s.TouchKeys(ctx, map[string]time.Time{k.ID: later.Add(-time.Hour), "key_gone": later}))
	keys, err := s.ListKeys(ctx, org.ID)
	require.NoError(t, err)
	require.NotNil(t, keys[0].LastUsedAt)
	require.True(t, later.Equal(*keys[0].LastUsedAt), "an older time does not move it back")

	rpm, conc := 10, 2
	actx := core.WithActor(ctx, adaActor)
	got, err := s.SetKeyLimits(actx, org.ID, k.ID, &core.KeyLimits{RPM: &rpm, Concurrency: &conc})
	require.NoError(t, err)
	require.Equal(t, 10, got.RPM)
	require.Equal(t, 2, got.Concurrency)
	require.Zero(t, got.MaxInputTokens, "left as it was")
	zero := 0
	got, err = s.SetKeyLimits(actx, org.ID, k.ID, &core.KeyLimits{RPM: &zero})
	require.NoError(t, err)
	require.Zero(t, got.RPM, "0 is back to the default")
	require.Equal(t, 2, got.Concurrency)

	other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other"})
	require.NoError(t, err)
	_, err = s.SetKeyLimits(actx, other.ID, k.ID, &core.KeyLimits{RPM: &rpm})
	require.ErrorIs(t, err, core.ErrNotFound, "another organisation's key")

	require.Equal(t, []trailRow{
		{Actor: adaActor, Action: core.AuditKeyChanged, Object: k.ID, Detail: "rpm 10, concurrency 2"},
		{Actor: adaActor, Action: core.AuditKeyChanged, Object: k.ID, Detail: "rpm 0"},
	}, trail(t, s, org.ID)[1:], "after the key's creation")

	page, err := s.ListAudit(ctx, &core.AuditFilter{OrgID: org.ID, Action: core.AuditKeyChanged, Limit: 1})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "rpm 0", page[0].Detail, "newest first")
	page, err = s.ListAudit(ctx, &core.AuditFilter{OrgID: org.ID, Action: core.AuditKeyChanged, Limit: 5,
		After: &core.AuditCursor{At: page[0].At, ID: page[0].ID}})
	require.NoError(t, err)
	require.Len(t, page, 1)
	require.Equal(t, "rpm 10, concurrency 2", page[0].Detail)
	page, err = s.ListAudit(ctx, &core.AuditFilter{OrgID: org.ID, ActorID: "person_nobody"})
	require.NoError(t, err)
	require.Empty(t, page)
}

// The keys page's reads: a page at a time, newest first, by a cursor;
// one person's keys; named keys.
func TestListKeysPage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _, org := newDashboardStore(t)
	var made []string
	for i := range 7 {
		person := "person_ann"
		if i%2 == 1 {
			person = "person_bob"
		}
		k, err := s.CreateKey(ctx, &core.CreateKeyParams{OrgID: org.ID, Hash: core.HashKey(fmt.Sprintf("ccl_live_%032d", i)),
			Hint: "ccl_live_0", Name: fmt.Sprintf("k%d", i), Scopes: []string{core.ScopeDeliberate}, PersonID: person})
		require.NoError(t, err)
		made = append(made, k.ID)
	}
	var got []string
	q := &core.KeyQuery{OrgID: org.ID, Limit: 3}
	for {
		page, err := s.ListKeysPage(ctx, q)
		require.NoError(t, err)
		for _, k := range page {
			got = append(got, k.ID)
		}
		if len(page) < 3 {
			break
		}
		last := page[len(page)-1]
		q.After = &core.KeyCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	var want []string
	for i := len(made) - 1; i >= 0; i-- {
		want = append(want, made[i])
	}
	require.Equal(t, want, got, "every key once, newest first")

	bobs, err := s.ListKeysPage(ctx, &core.KeyQuery{OrgID: org.ID, PersonID: "person_bob"})
	require.NoError(t, err)
	require.Len(t, bobs, 3)
	named, err := s.ListKeysPage(ctx, &core.KeyQuery{OrgID: org.ID, IDs: []string{made[2], "key_other"}})
	require.NoError(t, err)
	require.Len(t, named, 1)
	require.Equal(t, "k2", named[0].Name)
	other, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other"})
	require.NoError(t, err)
	none, err := s.ListKeysPage(ctx, &core.KeyQuery{OrgID: other.ID, IDs: []string{made[2]}})
	require.NoError(t, err)
	require.Empty(t, none, "another organisation's key is not named")
}

// plan is the EXPLAIN of sql with args, as PostgreSQL plans it for those
// very arguments (as the lists run: an unnamed statement each time).
func plan(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) string {
	t.Helper()
	rows, err := pool.Query(context.Background(), "EXPLAIN "+sql, append([]any{pgx.QueryExecModeExec}, args...)...)
	require.NoError(t, err)
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	return strings.Join(lines, "\n")
}

// The dashboard's lists read one page by index, for a big organisation
// and for a small one beside it: never the receipts table whole, never
// every posting.
func TestDashboardListsReadByIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, pool, big := newDashboardStore(t)
	small, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Small"})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `INSERT INTO receipts (request_id, org_id, mode_id, mode_key, mode_config_hash, status, billed_micros,
			token_charge_micros, surcharge_micros, platform_fee_micros, prompt_tokens, completion_tokens, seat_count, payer, created_at, person_id)
		SELECT 'req_p' || g, $1, 'm', 'k', 'h', 'succeeded', 1, 1, 0, 0, 1, 1, 1, $1, now() - g * interval '1 second', 'person_' || (g % 50)
		  FROM generate_series(1, 20000) g`, big.ID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `WITH p AS (INSERT INTO postings (kind, org_id, memo) SELECT 'top_up', $1, 'x' FROM generate_series(1, 20000) RETURNING id)
		INSERT INTO journal_legs (posting_id, account, org_id, amount_micros)
		SELECT id, 'org_balance', $1, 1 FROM p UNION ALL SELECT id, 'cash_in', NULL, -1 FROM p`, big.ID)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `ANALYZE receipts; ANALYZE journal_legs; ANALYZE postings`)
	require.NoError(t, err)

	for _, org := range []string{big.ID, small.ID} {
		sql, args := pgstore.ReceiptsQuery(&core.ReceiptQuery{OrgID: org, Limit: 51})
		p := plan(t, pool, sql, args...)
		require.Contains(t, p, "receipts_org_created_id", p)
		require.NotContains(t, p, "Seq Scan on receipts", p)
		sql, args = pgstore.ReceiptsQuery(&core.ReceiptQuery{OrgID: org, PersonID: "person_7", Limit: 51})
		p = plan(t, pool, sql, args...)
		require.Contains(t, p, "receipts_org_person_created", p)
		sql, args = pgstore.JournalQuery(&core.JournalQuery{OrgID: org, Limit: 51})
		p = plan(t, pool, sql, args...)
		require.Contains(t, p, "journal_legs_org_account_posting", p)
		require.NotContains(t, p, "Seq Scan on postings", p)
		if org == small.ID {
			// For the big one a merge stops after a page; for the small one
			// it would read every posting to find three, as a cached
			// generic plan did.
			require.NotContains(t, p, "Merge Join", p)
		}
	}
}
