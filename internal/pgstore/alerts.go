package pgstore

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/alerts"
)

//go:embed alerts_queries.sql
var alertsQueriesSQL string

var alertsQueries = parseQueries(alertsQueriesSQL)

// aq returns the named query of alerts_queries.sql.
func aq(name string) string {
	s, ok := alertsQueries[name]
	if !ok {
		panic(fmt.Sprintf("alerts_queries.sql has no query %q", name))
	}
	return s
}

// AlertQueue inserts a crossing's webhook delivery job into the
// transaction that records the crossing; jobs.AlertQueue implements it.
type AlertQueue interface {
	EnqueueAlert(ctx context.Context, tx pgx.Tx, eventID string) error
}

// AlertSettings implements alerts.Store.
func (s *Store) AlertSettings(ctx context.Context, orgID string) (*alerts.Settings, error) {
	st := &alerts.Settings{OrgID: orgID}
	var budget, floor *int64
	err := s.pool.QueryRow(ctx, aq("AlertSettings"), orgID).Scan(&st.OrgID, &budget, &st.Percents, &floor, &st.WebhookURL, &st.Secret)
	if errors.Is(err, pgx.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return nil, translate(err)
	}
	st.Budget, st.Floor = micros(budget), micros(floor)
	return st, nil
}

func micros(v *int64) *core.Micros {
	if v == nil {
		return nil
	}
	m := core.Micros(*v)
	return &m
}

func int64s(m *core.Micros) *int64 {
	if m == nil {
		return nil
	}
	v := int64(*m)
	return &v
}

// SetAlertThresholds implements alerts.Store; audited as
// org.settings_changed, in the same round trip.
func (s *Store) SetAlertThresholds(ctx context.Context, st *alerts.Settings) error {
	ps := st.Percents
	if ps == nil {
		ps = []int{}
	}
	amount := func(m *core.Micros) string {
		if m == nil {
			return "none"
		}
		return "$" + m.String()
	}
	detail := fmt.Sprintf("spend alerts: monthly budget %s, percentages %v, balance floor %s", amount(st.Budget), ps, amount(st.Floor))
	b := &pgx.Batch{}
	b.Queue(aq("SetAlertThresholds"), st.OrgID, int64s(st.Budget), ps, int64s(st.Floor))
	queueAudit(ctx, b, st.OrgID, core.AuditOrgSettings, st.OrgID, detail)
	return sendBatch(ctx, s.pool, b)
}

// SetAlertWebhook implements alerts.Store; audited as
// org.settings_changed (the URL, never the secret).
func (s *Store) SetAlertWebhook(ctx context.Context, orgID, url, secret string) error {
	detail := "spend alerts: webhook removed"
	if url != "" {
		detail = "spend alerts: webhook set to " + url + " with a new secret"
	}
	b := &pgx.Batch{}
	b.Queue(aq("SetAlertWebhook"), orgID, url, secret)
	queueAudit(ctx, b, orgID, core.AuditOrgSettings, orgID, detail)
	return sendBatch(ctx, s.pool, b)
}

func scanCrossing(row pgx.Row, extra ...any) (*alerts.Crossing, error) {
	c := &alerts.Crossing{}
	var kind string
	err := row.Scan(append([]any{&c.ID, &c.OrgID, &kind, &c.Percent, &c.Period, &c.Limit, &c.Value, &c.At, &c.Delivered}, extra...)...)
	c.Kind = alerts.Kind(kind)
	c.Period = c.Period.UTC()
	return c, err
}

// AlertCrossings implements alerts.Store.
func (s *Store) AlertCrossings(ctx context.Context, orgID string, from time.Time) ([]*alerts.Crossing, error) {
	rows, err := s.pool.Query(ctx, aq("AlertCrossings"), orgID, from.UTC())
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*alerts.Crossing
	for rows.Next() {
		c, err := scanCrossing(rows)
		if err != nil {
			return nil, translate(err)
		}
		out = append(out, c)
	}
	return out, translate(rows.Err())
}

// AlertObservations reads every organisation with a threshold as of the
// month that starts at month: what the alert job compares.
func (s *Store) AlertObservations(ctx context.Context, month time.Time) ([]*alerts.Observation, error) {
	rows, err := s.pool.Query(ctx, aq("AlertObservations"), month.UTC())
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*alerts.Observation
	for rows.Next() {
		o := &alerts.Observation{}
		var budget, floor, base *int64
		if err := rows.Scan(&o.OrgID, &budget, &o.Percents, &floor, &o.WebhookURL, &base, &o.Spent, &o.Balance); err != nil {
			return nil, translate(err)
		}
		o.Budget, o.Floor, o.Base = micros(budget), micros(floor), micros(base)
		out = append(out, o)
	}
	return out, translate(rows.Err())
}

// RecordAlertCrossing records c (giving it a new event id) unless its
// organisation's threshold was already recorded for c's month; when it is
// new and deliver is true, q's delivery job is inserted in the same
// transaction. It reports whether c was new.
func (s *Store) RecordAlertCrossing(ctx context.Context, c *alerts.Crossing, deliver bool, q AlertQueue) (bool, error) {
	var inserted bool
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		id := core.NewID("evt")
		tag, err := tx.Exec(ctx, aq("InsertAlertCrossing"), id, c.OrgID, string(c.Kind), c.Percent, c.Period.UTC(),
			int64(c.Limit), int64(c.Value), c.At)
		if err != nil {
			return translateWrite(err)
		}
		if inserted = tag.RowsAffected() == 1; !inserted {
			return nil
		}
		c.ID = id
		if deliver && q != nil {
			return q.EnqueueAlert(ctx, tx, id)
		}
		return nil
	})
	return inserted, err
}

// AlertDelivery reads crossing id with its organisation's webhook URL and
// secret as they are now ("" when none is set).
func (s *Store) AlertDelivery(ctx context.Context, id string) (c *alerts.Crossing, url, secret string, err error) {
	c, err = scanCrossing(s.pool.QueryRow(ctx, aq("AlertDelivery"), id), &url, &secret)
	if err != nil {
		return nil, "", "", translate(err)
	}
	return c, url, secret, nil
}

// MarkAlertDelivered records that crossing id's webhook post was
// acknowledged.
func (s *Store) MarkAlertDelivered(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, aq("MarkAlertDelivered"), id)
	return translate(err)
}

var _ alerts.Store = (*Store)(nil)
