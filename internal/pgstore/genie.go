package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/genie"
)

// The mode assistant's quotes and conversations (core/genie). Every write
// is one statement; an approval's record and a quote's end are
// conditional on its status, so that replicas approving one quote at once
// agree (migration 0027).

//go:embed genie_queries.sql
var genieQueriesSQL string

var genieQueries = parseQueries(genieQueriesSQL)

// gq returns the named query of genie_queries.sql.
func gq(name string) string {
	s, ok := genieQueries[name]
	if !ok {
		panic(fmt.Sprintf("genie_queries.sql has no query %q", name))
	}
	return s
}

// CreateQuote implements genie.QuoteStore.
func (s *Store) CreateQuote(ctx context.Context, q *genie.Quote) error {
	_, err := s.pool.Exec(ctx, gq("CreateQuote"), q.ID, q.OrgID, q.Payer, string(q.Kind), string(q.Request), q.Model,
		int64(q.Price), q.Questions, q.Minutes, q.CreatedAt, q.ExpiresAt)
	return translateWrite(err)
}

func scanQuote(row pgx.Row) (*genie.Quote, error) {
	q := &genie.Quote{}
	var kind, status string
	var price int64
	var approved *time.Time
	err := row.Scan(&q.ID, &q.OrgID, &q.Payer, &kind, &q.Request, &q.Model, &price, &q.Questions, &q.Minutes, &status,
		&q.BatchID, &approved, &q.CreatedAt, &q.ExpiresAt)
	if err != nil {
		return nil, translate(err)
	}
	q.Kind, q.Status, q.Price = runs.Kind(kind), genie.QuoteStatus(status), core.Micros(price)
	if approved != nil {
		q.ApprovedAt = *approved
	}
	return q, nil
}

// Quote implements genie.QuoteStore.
func (s *Store) Quote(ctx context.Context, orgID, id string) (*genie.Quote, error) {
	return scanQuote(s.pool.QueryRow(ctx, gq("Quote"), orgID, id))
}

// ApproveQuote implements genie.QuoteStore.
func (s *Store) ApproveQuote(ctx context.Context, orgID, id string, at time.Time) (*genie.Quote, error) {
	return scanQuote(s.pool.QueryRow(ctx, gq("ApproveQuote"), orgID, id, at))
}

// SettleQuote implements genie.QuoteStore.
func (s *Store) SettleQuote(ctx context.Context, orgID, id string, status genie.QuoteStatus, batchID string) error {
	if status != genie.QuoteLaunched && status != genie.QuoteUsed || (status == genie.QuoteLaunched) != (batchID != "") {
		return fmt.Errorf("pgstore: a quote settles launched with a batch or used without one, not %q with %q", status, batchID)
	}
	tag, err := s.pool.Exec(ctx, gq("SettleQuote"), orgID, id, string(status), batchID)
	if err != nil {
		return translate(err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	var ok bool
	if err := s.pool.QueryRow(ctx, gq("QuoteExists"), orgID, id).Scan(&ok); err != nil {
		return translate(err)
	}
	if !ok {
		return core.ErrNotFound
	}
	return nil
}

// AppendTurns implements genie.HistoryStore, in one transaction.
func (s *Store) AppendTurns(ctx context.Context, orgID, payer, modeID string, turns []genie.Turn) error {
	if len(turns) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	now := time.Now()
	for _, t := range turns {
		at := t.At
		if at.IsZero() {
			at = now
		}
		b.Queue(gq("AppendTurn"), orgID, payer, modeID, t.Role, t.Content, at)
	}
	return sendBatch(ctx, s.pool, b)
}

// Turns implements genie.HistoryStore.
func (s *Store) Turns(ctx context.Context, orgID, payer, modeID string, limit int) ([]genie.Turn, error) {
	rows, err := s.pool.Query(ctx, gq("Turns"), orgID, payer, modeID, limit)
	if err != nil {
		return nil, translate(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (genie.Turn, error) {
		var t genie.Turn
		err := row.Scan(&t.Role, &t.Content, &t.At)
		return t, err
	})
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return nil, translate(err)
	}
	return out, nil
}

// ReapHistory implements genie.HistoryStore.
func (s *Store) ReapHistory(ctx context.Context, before time.Time) (int64, error) {
	tag, err := s.pool.Exec(ctx, gq("ReapHistory"), before)
	if err != nil {
		return 0, translate(err)
	}
	return tag.RowsAffected(), nil
}

var (
	_ genie.QuoteStore   = (*Store)(nil)
	_ genie.HistoryStore = (*Store)(nil)
)
