// Package pgstore is Conclave's system of record on PostgreSQL through pgx v5:
// numbered migrations embedded in the binary (Migrate), named queries kept in
// queries.sql, and Store, which implements core.Store: organisations, the
// ledger, keys, admission, receipts, call outcomes and organisations' own
// provider credentials; and core.ModeStore, organisations' own modes.
package pgstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/core"
)

// Store implements core.Store, and with it each of core's small store
// interfaces, on a pgx pool. It is safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// marks overrides how SettleCall makes a settlement durable; only
	// tests set it (export_test.go), to make a mark fail.
	marks durableMarks
	// lostModeWrites counts mode changes whose conditional write found the
	// mode changed by another writer (modes.go); tests read it.
	lostModeWrites atomic.Int64
	// afterModeRead, when set (tests), runs in a mode change's transaction
	// after the mode was read and before it is written.
	afterModeRead func()
}

// New returns a Store over pool. The schema must already be migrated.
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Pool returns the underlying pool, for callers that own its lifecycle.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

// InTx runs fn in one transaction, committing when fn returns nil. Every
// multi-statement write goes through it.
func (s *Store) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	return pgx.BeginFunc(ctx, s.pool, fn)
}

// translate turns driver errors into core errors where the driver is called.
func translate(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return core.ErrNotFound
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch pgErr.Code {
		case "23505": // unique_violation
			return fmt.Errorf("%w: %s", core.ErrConflict, pgErr.ConstraintName)
		case "23514": // check_violation
			if pgErr.TableName == "balances" {
				return fmt.Errorf("%w: %s", core.ErrInsufficientFunds, pgErr.ConstraintName)
			}
			if pgErr.ConstraintName == "billed_within_hold" {
				return fmt.Errorf("%w: %s", core.ErrAboveHold, pgErr.ConstraintName)
			}
		}
	}
	return err
}

// orgCols scans the columns every organisation query returns, in order.
func orgCols(o *core.Org) []any {
	return []any{&o.ID, &o.Name, &o.Ticker, &o.Plan, &o.SuspendedAt, &o.CreatedAt,
		(*nullInt)(&o.Concurrency), &o.MonthlyQuota, &o.VerifiedAt, &o.KeepTranscripts}
}

func scanOrg(row pgx.Row) (*core.Org, error) {
	var o core.Org
	if err := row.Scan(orgCols(&o)...); err != nil {
		return nil, translate(err)
	}
	return &o, nil
}

func scanBalance(row pgx.Row) (*core.Balance, error) {
	var b core.Balance
	if err := row.Scan(&b.OrgID, &b.Balance, &b.Held, &b.TrialRemaining, &b.UpdatedAt); err != nil {
		return nil, translate(err)
	}
	return &b, nil
}

// keyCols scans the columns every key query returns, in order.
func keyCols(k *core.Key) []any {
	return []any{&k.ID, &k.OrgID, &k.Name, &k.Test, &k.Scopes, &k.Modes,
		(*nullInt)(&k.RPM), (*nullInt)(&k.Concurrency), (*nullInt)(&k.MaxInputTokens), (*nullMicros)(&k.Ceiling),
		&k.Hint, &k.ExpiresAt, &k.RevokedAt, &k.CreatedAt, &k.PersonID, &k.CreatorRole}
}

// CreateOrg implements core.Orgs.
func (s *Store) CreateOrg(ctx context.Context, p *core.CreateOrgParams) (*core.Org, *core.Balance, error) {
	plan := p.Plan
	if plan == "" {
		plan = core.PlanStandard
	}
	candidates := []string{p.Ticker}
	if p.Ticker == "" {
		candidates = core.TickerCandidates(p.Name)
	}
	for _, ticker := range candidates {
		org, bal, err := s.createOrg(ctx, p.Name, ticker, plan, !p.Unverified)
		if errors.Is(err, core.ErrConflict) && p.Ticker == "" {
			continue // derived ticker taken: try the next candidate
		}
		if err != nil {
			return nil, nil, fmt.Errorf("creating organisation %q: %w", p.Name, err)
		}
		return org, bal, nil
	}
	return nil, nil, fmt.Errorf("creating organisation %q: every derived ticker is taken: %w", p.Name, core.ErrConflict)
}

func (s *Store) createOrg(ctx context.Context, name, ticker, plan string, verified bool) (*core.Org, *core.Balance, error) {
	var org *core.Org
	var bal *core.Balance
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		if org, err = scanOrg(tx.QueryRow(ctx, q("InsertOrg"), core.NewID("org"), name, ticker, plan, verified)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, q("InsertBalance"), org.ID); err != nil {
			return translate(err)
		}
		bal, err = credit(ctx, tx, org.ID, core.PostingTrialGrant, "trial credit", core.AccountTrialIssued, core.TrialCredit, true)
		return err
	})
	return org, bal, err
}

// credit moves amount from a system account into the organisation's balance
// as one posting, and updates the balance row in the same transaction.
func credit(ctx context.Context, tx pgx.Tx, orgID, kind, memo, from string, amount core.Micros, trial bool) (*core.Balance, error) {
	var postingID int64
	var at time.Time
	if err := tx.QueryRow(ctx, q("InsertPosting"), kind, orgID, memo).Scan(&postingID, &at); err != nil {
		return nil, translate(err)
	}
	if _, err := tx.Exec(ctx, q("InsertLeg"), postingID, core.AccountOrgBalance, orgID, int64(amount)); err != nil {
		return nil, translate(err)
	}
	if _, err := tx.Exec(ctx, q("InsertLeg"), postingID, from, nil, -int64(amount)); err != nil {
		return nil, translate(err)
	}
	trialPart := core.Micros(0)
	if trial {
		trialPart = amount
	}
	return scanBalance(tx.QueryRow(ctx, q("CreditBalance"), orgID, int64(amount), int64(trialPart)))
}

// GetOrg implements core.Orgs.
func (s *Store) GetOrg(ctx context.Context, id string) (*core.Org, error) {
	return scanOrg(s.pool.QueryRow(ctx, q("GetOrg"), id))
}

// OrgByTicker implements core.Orgs.
func (s *Store) OrgByTicker(ctx context.Context, ticker string) (*core.Org, error) {
	return scanOrg(s.pool.QueryRow(ctx, q("OrgByTicker"), ticker))
}

// SetOrgSuspended implements core.Orgs.
func (s *Store) SetOrgSuspended(ctx context.Context, p *core.SetOrgSuspendedParams) (*core.Org, error) {
	return s.orgChange(ctx, p.OrgID, fmt.Sprintf("suspended %t", p.Suspended), q("SetOrgSuspended"), p.OrgID, p.Suspended)
}

// SetOrgPlan implements core.Orgs.
func (s *Store) SetOrgPlan(ctx context.Context, p *core.SetOrgPlanParams) (*core.Org, error) {
	if p.Plan == "" {
		return nil, errors.New("setting plan: plan is empty")
	}
	return s.orgChange(ctx, p.OrgID, "plan "+p.Plan, q("SetOrgPlan"), p.OrgID, p.Plan)
}

// SetOrgLimits implements core.Orgs.
func (s *Store) SetOrgLimits(ctx context.Context, p *core.SetOrgLimitsParams) (*core.Org, error) {
	var conc, quota any
	var detail []string
	if p.Concurrency != nil {
		detail = append(detail, fmt.Sprintf("concurrency %d", *p.Concurrency))
		if *p.Concurrency > 0 {
			conc = *p.Concurrency
		}
	}
	if p.MonthlyQuota != nil {
		detail = append(detail, "monthly quota "+p.MonthlyQuota.String())
		if *p.MonthlyQuota >= 0 {
			quota = int64(*p.MonthlyQuota)
		}
	}
	return s.orgChange(ctx, p.OrgID, strings.Join(detail, ", "), q("SetOrgLimits"), p.OrgID, p.Concurrency != nil, conc, p.MonthlyQuota != nil, quota)
}

// SetOrgVerified implements core.Orgs.
func (s *Store) SetOrgVerified(ctx context.Context, orgID string, verified bool) (*core.Org, error) {
	return s.orgChange(ctx, orgID, fmt.Sprintf("verified %t", verified), q("SetOrgVerified"), orgID, verified)
}

// SetOrgTranscripts implements core.Orgs.
func (s *Store) SetOrgTranscripts(ctx context.Context, orgID string, keep bool) (*core.Org, error) {
	detail := "transcripts kept"
	if !keep {
		detail = "transcripts not kept (receipts without prompt and answer text)"
	}
	return s.orgChange(ctx, orgID, detail, q("SetOrgTranscripts"), orgID, keep)
}

// orgChange runs an update of an organisation's settings (sql, returning
// the organisation) with its audit row, in one batch: one round trip.
func (s *Store) orgChange(ctx context.Context, orgID, detail, sql string, args ...any) (*core.Org, error) {
	var o *core.Org
	b := &pgx.Batch{}
	b.Queue(sql, args...).QueryRow(func(row pgx.Row) error {
		var err error
		o, err = scanOrg(row)
		return err
	})
	queueAudit(ctx, b, orgID, core.AuditOrgSettings, orgID, detail)
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, err
	}
	return o, nil
}

// AddFunds implements core.Ledger.
func (s *Store) AddFunds(ctx context.Context, p *core.AddFundsParams) (*core.Balance, error) {
	if p.Amount <= 0 {
		return nil, fmt.Errorf("adding funds: amount %s is not positive", p.Amount)
	}
	memo := p.Memo
	if memo == "" {
		memo = "prepaid top-up"
	}
	var bal *core.Balance
	err := s.InTx(ctx, func(tx pgx.Tx) error {
		var err error
		bal, err = credit(ctx, tx, p.OrgID, core.PostingTopUp, memo, core.AccountCashIn, p.Amount, false)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("adding funds to %s: %w", p.OrgID, err)
	}
	return bal, nil
}

// GetBalance implements core.Ledger.
func (s *Store) GetBalance(ctx context.Context, orgID string) (*core.Balance, error) {
	return scanBalance(s.pool.QueryRow(ctx, q("GetBalance"), orgID))
}

// ListPostings implements core.Ledger.
func (s *Store) ListPostings(ctx context.Context, orgID string) ([]*core.Posting, error) {
	rows, err := s.pool.Query(ctx, q("ListPostings"), orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*core.Posting
	for rows.Next() {
		var p core.Posting
		var leg core.Leg
		if err := rows.Scan(&p.ID, &p.Kind, &p.OrgID, &p.Memo, &p.CreatedAt, &leg.Account, &leg.OrgID, &leg.Amount); err != nil {
			return nil, translate(err)
		}
		if n := len(out); n == 0 || out[n-1].ID != p.ID {
			out = append(out, &p)
		}
		last := out[len(out)-1]
		last.Legs = append(last.Legs, leg)
	}
	return out, translate(rows.Err())
}

// CreateKey implements core.Keys. The key and its audit row are one batch:
// one round trip, one implicit transaction.
func (s *Store) CreateKey(ctx context.Context, p *core.CreateKeyParams) (*core.Key, error) {
	scopes := p.Scopes
	if scopes == nil {
		scopes = core.AllScopes
	}
	modes := p.Modes
	if modes == nil {
		modes = []string{}
	}
	var k core.Key
	id := core.NewID("key")
	b := &pgx.Batch{}
	b.Queue(q("InsertKey"), id, p.OrgID, p.Hash, p.Hint, p.Name, p.Test,
		scopes, modes, nullIf(p.RPM), nullIf(p.Concurrency), nullIf(p.MaxInputTokens), nullIf(int64(p.Ceiling)), p.ExpiresAt, p.PersonID,
	).QueryRow(func(row pgx.Row) error { return row.Scan(keyCols(&k)...) })
	detail := fmt.Sprintf("%q scopes %s", p.Name, strings.Join(scopes, ","))
	if len(modes) > 0 {
		detail += " modes " + strings.Join(modes, ",")
	}
	if p.Test {
		detail += " test"
	}
	queueAudit(ctx, b, p.OrgID, core.AuditKeyCreated, id, detail)
	if err := sendBatch(ctx, s.pool, b); err != nil {
		// A missing organisation (the foreign key) is core.ErrNotFound.
		return nil, fmt.Errorf("creating key for %s: %w", p.OrgID, err)
	}
	return &k, nil
}

// KeyByHash implements core.Keys.
func (s *Store) KeyByHash(ctx context.Context, hash []byte) (*core.Key, *core.Org, error) {
	var k core.Key
	var o core.Org
	dest := append(keyCols(&k), orgCols(&o)...)
	if err := s.pool.QueryRow(ctx, q("KeyByHash"), hash).Scan(dest...); err != nil {
		return nil, nil, translate(err)
	}
	return &k, &o, nil
}

// RevokeKey implements core.Keys. A revocation of a live key writes its
// audit row in the same batch; revoking a revoked key writes nothing.
func (s *Store) RevokeKey(ctx context.Context, id string) (*core.Key, error) {
	a := core.ActorOf(ctx)
	var k core.Key
	b := &pgx.Batch{}
	b.Queue(q("AuditKeyRevoked"), id, a.Kind, a.ID, a.Address)
	b.Queue(q("RevokeKey"), id).QueryRow(func(row pgx.Row) error { return row.Scan(keyCols(&k)...) })
	if err := sendBatch(ctx, s.pool, b); err != nil {
		return nil, err
	}
	return &k, nil
}

// ListKeys implements core.Keys.
func (s *Store) ListKeys(ctx context.Context, orgID string) ([]*core.Key, error) {
	rows, err := s.pool.Query(ctx, q("ListKeys"), orgID)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*core.Key
	for rows.Next() {
		var k core.Key
		if err := rows.Scan(append(keyCols(&k), &k.LastUsedAt)...); err != nil {
			return nil, translate(err)
		}
		out = append(out, &k)
	}
	return out, translate(rows.Err())
}

// Ping implements core.Pinger.
func (s *Store) Ping(ctx context.Context) error { return s.pool.Ping(ctx) }

// Ready reports whether the database is reachable and every embedded
// migration has been applied.
func (s *Store) Ready(ctx context.Context) error {
	v, err := SchemaVersion(ctx, s.pool)
	if err != nil {
		return err
	}
	if want := LatestVersion(); v < want {
		return fmt.Errorf("schema is at version %d, want %d", v, want)
	}
	return nil
}

// nullIf maps a zero override to NULL.
func nullIf[T int | int64](v T) any {
	if v == 0 {
		return nil
	}
	return v
}

// nullInt scans a nullable integer column into an int (NULL → 0).
type nullInt int

func (n *nullInt) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n = 0
	case int64:
		*n = nullInt(v)
	case int32:
		*n = nullInt(v)
	default:
		return fmt.Errorf("scanning %T into an int", src)
	}
	return nil
}

// nullMicros scans a nullable bigint column into Micros (NULL → 0).
type nullMicros core.Micros

func (n *nullMicros) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*n = 0
	case int64:
		*n = nullMicros(v)
	default:
		return fmt.Errorf("scanning %T into micros", src)
	}
	return nil
}

var (
	_ core.Orgs   = (*Store)(nil)
	_ core.Ledger = (*Store)(nil)
	_ core.Keys   = (*Store)(nil)
	_ core.Pinger = (*Store)(nil)
	_ core.Store  = (*Store)(nil)
)
