package pgstore

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conclavehq/conclave/core"
)

//go:embed dashboard_queries.sql
var dashboardQueriesSQL string

var dashboardQueries = parseQueries(dashboardQueriesSQL)

// dq returns the named query of dashboard_queries.sql.
func dq(name string) string {
	s, ok := dashboardQueries[name]
	if !ok {
		panic(fmt.Sprintf("dashboard_queries.sql has no query %q", name))
	}
	return s
}

// maxPage bounds every list's page.
const maxPage = 500

// pageSize is limit within 1..maxPage (50 when unset).
func pageSize(limit int) int {
	switch {
	case limit <= 0:
		return 50
	case limit > maxPage:
		return maxPage
	}
	return limit
}

// customPlan asks pgx to plan a list's query for its own arguments every
// time (an unnamed statement) rather than reuse a cached generic plan:
// one organisation may have a million rows and the next three, and a plan
// made for the average scans the big one's rows to find the small one's
// (a generic plan of the journal's page merged it with every posting: 27
// ms for an organisation of three postings beside one of 100,000).
const customPlan = pgx.QueryExecModeExec

// where builds a list's WHERE clause one condition at a time, each value a
// placeholder.
type where struct {
	conds []string
	args  []any // the placeholders' values, after customPlan
}

// add appends cond, whose "?" placeholders take args in turn.
func (w *where) add(cond string, args ...any) {
	if w.args == nil {
		w.args = []any{customPlan}
	}
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(w.args)-1), 1)
	}
	w.conds = append(w.conds, cond)
}

// between keeps col in [from, to); a zero end does not bound.
func (w *where) between(col string, from, to time.Time) {
	if !from.IsZero() {
		w.add(col+" >= ?", from)
	}
	if !to.IsZero() {
		w.add(col+" < ?", to)
	}
}

func (w *where) String() string { return strings.Join(w.conds, " AND ") }

// receiptsQuery is the receipts list's query for q and its arguments
// (customPlan first).
func receiptsQuery(q *core.ReceiptQuery) (string, []any) {
	w := &where{}
	w.add("org_id = ?", q.OrgID)
	if q.PersonID != "" {
		w.add("person_id = ?", q.PersonID)
	}
	w.between("created_at", q.From, q.To)
	if q.Mode != "" {
		w.add("mode_id = ?", q.Mode)
	}
	if q.KeyID != "" {
		w.add("key_id = ?", q.KeyID)
	}
	if q.Lane != "" {
		w.add("lane = ?", string(q.Lane))
	}
	if q.FinishReason != "" {
		w.add("finish_reason = ?", q.FinishReason)
	}
	if q.Capped != nil {
		if *q.Capped {
			w.add("status = 'capped'")
		} else {
			w.add("status <> 'capped'")
		}
	}
	if q.Substituted != nil {
		w.add("substituted = ?", *q.Substituted)
	}
	if q.After != nil {
		w.add("(created_at, request_id) < (?, ?)", q.After.CreatedAt, q.After.RequestID)
	}
	sql := `SELECT request_id, mode_id, coalesce(mode_version, 0), status, billed_micros, prompt_tokens, completion_tokens,
	               rounds, coalesce(lane, ''), coalesce(key_id, ''), coalesce(payer_kind, ''), coalesce(person_id, ''),
	               coalesce(finish_reason, ''), substituted, latency_ms, created_at
	          FROM receipts WHERE ` + w.String() + `
	         ORDER BY created_at DESC, request_id DESC LIMIT ` + strconv.Itoa(pageSize(q.Limit))
	return sql, w.args
}

// ListReceipts implements core.Dashboard.
func (s *Store) ListReceipts(ctx context.Context, q *core.ReceiptQuery) ([]*core.ReceiptRow, error) {
	sql, args := receiptsQuery(q)
	return collect(ctx, s, sql, func(row pgx.Rows) (*core.ReceiptRow, error) {
		var r core.ReceiptRow
		return &r, row.Scan(&r.RequestID, &r.Mode, &r.ModeVersion, &r.Status, &r.Billed, &r.PromptTokens, &r.CompletionTokens,
			&r.Rounds, &r.Lane, &r.KeyID, &r.PayerKind, &r.PersonID, &r.FinishReason, &r.Substituted, &r.LatencyMS, &r.CreatedAt)
	}, args...)
}

// ListKeysPage implements core.Keys.
func (s *Store) ListKeysPage(ctx context.Context, q *core.KeyQuery) ([]*core.Key, error) {
	w := &where{}
	w.add("k.org_id = ?", q.OrgID)
	if q.PersonID != "" {
		w.add("k.person_id = ?", q.PersonID)
	}
	if q.IDs != nil {
		w.add("k.id = ANY(?)", q.IDs)
	}
	if q.After != nil {
		w.add("(k.created_at, k.id) < (?, ?)", q.After.CreatedAt, q.After.ID)
	}
	sql := `SELECT k.id, k.org_id, k.name, k.test, k.scopes, k.modes, k.rpm, k.concurrency, k.max_input_tokens, k.ceiling_micros, k.hint,
	               k.expires_at, k.revoked_at, k.created_at, k.person_id, coalesce(m.role, ''), k.last_used_at
	          FROM api_keys k LEFT JOIN memberships m ON m.org_id = k.org_id AND m.person_id = k.person_id
	         WHERE ` + w.String() + `
	         ORDER BY k.created_at DESC, k.id DESC LIMIT ` + strconv.Itoa(pageSize(q.Limit))
	return collect(ctx, s, sql, func(row pgx.Rows) (*core.Key, error) {
		var k core.Key
		return &k, row.Scan(append(keyCols(&k), &k.LastUsedAt)...)
	}, w.args...)
}

// journalQuery is the journal list's query for q and its arguments
// (customPlan first).
func journalQuery(q *core.JournalQuery) (string, []any) {
	w := &where{}
	w.add("l.org_id = ?", q.OrgID)
	w.add("l.account = ?", core.AccountOrgBalance)
	if q.Before > 0 {
		w.add("l.posting_id < ?", q.Before)
	}
	if q.Kind != "" {
		w.add("p.kind = ?", q.Kind)
	}
	w.between("p.created_at", q.From, q.To)
	sql := `SELECT l.posting_id, p.kind, p.memo, l.amount_micros, p.created_at
	          FROM journal_legs l JOIN postings p ON p.id = l.posting_id
	         WHERE ` + w.String() + `
	         ORDER BY l.posting_id DESC LIMIT ` + strconv.Itoa(pageSize(q.Limit))
	return sql, w.args
}

// ListJournal implements core.Dashboard.
func (s *Store) ListJournal(ctx context.Context, q *core.JournalQuery) ([]*core.JournalRow, error) {
	sql, args := journalQuery(q)
	return collect(ctx, s, sql, func(row pgx.Rows) (*core.JournalRow, error) {
		var r core.JournalRow
		return &r, row.Scan(&r.PostingID, &r.Kind, &r.Memo, &r.Amount, &r.CreatedAt)
	}, args...)
}

// ListAudit implements core.Dashboard.
func (s *Store) ListAudit(ctx context.Context, q *core.AuditFilter) ([]*core.AuditEntry, error) {
	w := &where{}
	w.add("org_id = ?", q.OrgID)
	if q.Action != "" {
		w.add("action = ?", q.Action)
	}
	if q.ActorID != "" {
		w.add("actor_id = ?", q.ActorID)
	}
	w.between("at", q.From, q.To)
	if q.After != nil {
		w.add("(at, id) < (?, ?)", q.After.At, q.After.ID)
	}
	sql := `SELECT id, org_id, actor_kind, actor_id, address, action, object, detail, at
	          FROM audit_log WHERE ` + w.String() + `
	         ORDER BY at DESC, id DESC LIMIT ` + strconv.Itoa(pageSize(q.Limit))
	return collect(ctx, s, sql, func(row pgx.Rows) (*core.AuditEntry, error) {
		var e core.AuditEntry
		return &e, row.Scan(&e.ID, &e.OrgID, &e.Actor.Kind, &e.Actor.ID, &e.Actor.Address, &e.Action, &e.Object, &e.Detail, &e.At)
	}, w.args...)
}

// DailySpend implements core.Dashboard.
func (s *Store) DailySpend(ctx context.Context, q *core.SpendQuery) ([]*core.DaySpend, error) {
	return collect(ctx, s, dq("DailySpend"), func(row pgx.Rows) (*core.DaySpend, error) {
		var d core.DaySpend
		return &d, row.Scan(&d.Day, &d.KeyID, &d.Mode, &d.PersonID, &d.Kind, &d.Charges, &d.Billed)
	}, customPlan, q.OrgID, q.From.UTC().Format(time.DateOnly), q.To.UTC().Format(time.DateOnly), q.PersonID)
}

// SpendSeries implements core.Dashboard.
func (s *Store) SpendSeries(ctx context.Context, q *core.SpendQuery) (*core.SpendSeries, error) {
	rows, err := s.pool.Query(ctx, dq("SpendSeries"), customPlan, q.OrgID, q.From.UTC().Format(time.DateOnly),
		q.To.UTC().Format(time.DateOnly), q.PersonID, q.By, max(q.Top, 1))
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	out := &core.SpendSeries{}
	for rows.Next() {
		var (
			perDay bool
			day    *time.Time
			p      core.SpendPoint
		)
		if err := rows.Scan(&perDay, &day, &p.Label, &p.Other, &p.Charges, &p.Billed); err != nil {
			return nil, translate(err)
		}
		if !perDay {
			out.Totals = append(out.Totals, &p)
			continue
		}
		p.Day = *day
		out.Days = append(out.Days, &p)
	}
	return out, translate(rows.Err())
}

// MoneyState implements core.Dashboard.
func (s *Store) MoneyState(ctx context.Context, orgID string) (*core.MoneyState, error) {
	var m core.MoneyState
	var created time.Time
	err := s.pool.QueryRow(ctx, dq("MoneyState"), orgID).Scan(&m.OrgID, &m.Balance.Balance, &m.Held, &m.TrialRemaining,
		&m.UpdatedAt, &m.ToppedUp, &m.TrialExpiredAt, &created, &m.Verified, &m.Spent)
	if err != nil {
		return nil, translate(err)
	}
	m.TrialEnds = created.Add(core.TrialPeriod)
	return &m, nil
}

// SetKeyLimits implements core.Dashboard.
func (s *Store) SetKeyLimits(ctx context.Context, orgID, keyID string, l *core.KeyLimits) (*core.Key, error) {
	arg := func(v *int) int {
		if v == nil {
			return -1
		}
		return max(*v, 0)
	}
	var parts []string
	for _, f := range []struct {
		name string
		v    *int
	}{{"rpm", l.RPM}, {"concurrency", l.Concurrency}, {"max_input_tokens", l.MaxInputTokens}} {
		if f.v != nil {
			parts = append(parts, fmt.Sprintf("%s %d", f.name, max(*f.v, 0)))
		}
	}
	a := core.ActorOf(ctx)
	b := &pgx.Batch{}
	b.Queue(dq("AuditKeyChanged"), keyID, a.Kind, a.ID, a.Address, strings.Join(parts, ", "), orgID, core.AuditKeyChanged)
	var k core.Key
	b.Queue(dq("SetKeyLimits"), keyID, orgID, arg(l.RPM), arg(l.Concurrency), arg(l.MaxInputTokens)).
		QueryRow(func(row pgx.Row) error { return row.Scan(keyCols(&k)...) })
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, err
	}
	return &k, nil
}

// TouchKeys implements core.Dashboard.
func (s *Store) TouchKeys(ctx context.Context, used map[string]time.Time) error {
	if len(used) == 0 {
		return nil
	}
	ids := make([]string, 0, len(used))
	ats := make([]time.Time, 0, len(used))
	for id, at := range used {
		ids, ats = append(ids, id), append(ats, at)
	}
	_, err := s.pool.Exec(ctx, dq("TouchKeys"), ids, ats)
	return translate(err)
}

var _ core.Dashboard = (*Store)(nil)
