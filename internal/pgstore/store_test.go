package pgstore_test

import (
	"context"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/storetest"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) core.Store { return pgstore.New(pgtest.NewPool(t)) })
}

// The database itself refuses an unbalanced posting, an edit of the journal,
// and a balance row that goes negative or holds more than it has.
func TestJournalRulesAreEnforcedByTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Ledger"})
	require.NoError(t, err)

	err = s.InTx(ctx, func(tx pgx.Tx) error {
		var id int64
		if err := tx.QueryRow(ctx, "INSERT INTO postings (kind, org_id) VALUES ('top_up', $1) RETURNING id", org.ID).Scan(&id); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "INSERT INTO journal_legs (posting_id, account, org_id, amount_micros) VALUES ($1, 'org_balance', $2, 5)", id, org.ID)
		return err
	})
	require.ErrorContains(t, err, "unbalanced", "a one-legged posting fails at commit")

	err = s.InTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, "INSERT INTO postings (kind, org_id) VALUES ('top_up', $1)", org.ID)
		return err
	})
	require.ErrorContains(t, err, "unbalanced", "a posting without legs fails at commit")

	_, err = pool.Exec(ctx, "UPDATE journal_legs SET amount_micros = amount_micros * 2")
	require.ErrorContains(t, err, "append-only")
	_, err = pool.Exec(ctx, "DELETE FROM postings")
	require.ErrorContains(t, err, "append-only")

	_, err = pool.Exec(ctx, "UPDATE balances SET balance_micros = -1 WHERE org_id = $1", org.ID)
	require.ErrorContains(t, err, "balances_balance_micros_check")
	_, err = pool.Exec(ctx, "UPDATE balances SET held_micros = balance_micros + 1 WHERE org_id = $1", org.ID)
	require.ErrorContains(t, err, "held_within_balance")

	// Nothing above changed the money.
	requireBalanceEqualsJournal(t, pool)
}

// requireBalanceEqualsJournal checks every organisation at once, in SQL.
func requireBalanceEqualsJournal(t *testing.T, q interface {
	QueryRow(context.Context, string, ...any) pgx.Row
}) {
	t.Helper()
	var mismatched, unbalanced int
	require.NoError(t, q.QueryRow(context.Background(), `
		SELECT count(*) FROM balances b
		 WHERE b.balance_micros <> coalesce((SELECT sum(amount_micros) FROM journal_legs l
		                                      WHERE l.org_id = b.org_id AND l.account = 'org_balance'), 0)`).Scan(&mismatched))
	require.Zero(t, mismatched, "balances that differ from their journal")
	require.NoError(t, q.QueryRow(context.Background(), `
		SELECT count(*) FROM (SELECT posting_id FROM journal_legs GROUP BY posting_id HAVING sum(amount_micros) <> 0) x`).Scan(&unbalanced))
	require.Zero(t, unbalanced, "postings whose legs do not sum to zero")
}

func TestMigrateIsIdempotentAndSafeConcurrently(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t) // already migrated from the template
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- pgstore.Migrate(ctx, pool) }()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	v, err := pgstore.SchemaVersion(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, pgstore.LatestVersion(), v)
	require.NoError(t, pgstore.New(pool).Ready(ctx))
	require.Len(t, pgstore.MigrationsDigest(), 64)
}

func TestBalanceEqualsJournalAcrossManyOrganisations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Org"})
			if !errorIsNil(t, err) {
				return
			}
			for j := 1; j <= 5; j++ {
				_, err := s.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: core.Micros(i*1000 + j)})
				errorIsNil(t, err)
			}
		}(i)
	}
	wg.Wait()
	requireBalanceEqualsJournal(t, pool)
}

func errorIsNil(t *testing.T, err error) bool {
	t.Helper()
	if err != nil {
		t.Error(err)
		return false
	}
	return true
}

func TestModeStoreConformance(t *testing.T) {
	storetest.RunModeStore(t,
		func(t *testing.T) *pgstore.Store { return pgstore.New(pgtest.NewPool(t)) },
		func(t *testing.T, s *pgstore.Store) *pgstore.Store { return pgstore.New(replicaPool(t, s)) })
}
