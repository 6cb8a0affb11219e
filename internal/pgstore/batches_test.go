package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/bench/runs/runstest"
	"github.com/conclavehq/conclave/internal/jobs"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// batches is the batch store over pool, enqueuing on River as the gateway
// does.
func batches(t *testing.T, pool *pgxpool.Pool) *pgstore.Batches {
	t.Helper()
	q, err := jobs.NewQuestionQueue(pool, 0)
	require.NoError(t, err)
	return pgstore.NewBatches(pool, q)
}

func TestBatchesConformance(t *testing.T) {
	runstest.Run(t, func(t *testing.T) runstest.Stores {
		pool := pgtest.NewPool(t)
		return runstest.Stores{Core: pgstore.New(pool), Batches: batches(t, pool)}
	})
}

// questionJobs counts the River jobs of a batch's questions.
func questionJobs(t *testing.T, pool *pgxpool.Pool, batchID string) int {
	t.Helper()
	var n int
	require.NoError(t, pool.QueryRow(context.Background(),
		`SELECT count(*) FROM river_job WHERE kind = 'bench_question' AND args->>'batch_id' = $1`, batchID).Scan(&n))
	return n
}

// A launch enqueues one job per question in its own transaction; a
// refused one enqueues none; and a question's job is unique, whatever
// inserts it again.
func TestLaunchEnqueuesItsQuestionsAtomically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, b, orgID := batchesOrg(t)
	launch := func(price core.Micros) (string, error) {
		id := "5d1c9c1e-0000-4000-8000-00000000000" + string(rune('0'+int(price%10)))
		return id, launchMedium(ctx, b, orgID, id, 3, price)
	}
	refused, err := launch(core.USD(5) + 1)
	require.ErrorIs(t, err, core.ErrInsufficientFunds)
	require.Zero(t, questionJobs(t, pool, refused))

	id, err := launch(75_000)
	require.NoError(t, err)
	require.Equal(t, 3, questionJobs(t, pool, id))

	q, err := jobs.NewQuestionQueue(pool, 0)
	require.NoError(t, err)
	require.NoError(t, pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return q.EnqueueQuestions(ctx, tx, orgID, id, 3) }))
	require.Equal(t, 3, questionJobs(t, pool, id), "each question has one job")
}

// The database refuses a refund past a batch's charge, whatever writes it:
// the CHECK refund_within_charge backs every refund path.
func TestRefundCannotPassTheCharge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, b, orgID := batchesOrg(t)
	id := "5d1c9c1e-0000-4000-8000-0000000000aa"
	require.NoError(t, launchMedium(ctx, b, orgID, id, 1, 75_000))
	_, err := pool.Exec(ctx, `UPDATE batches SET refunded_micros = billed_micros + 1 WHERE id = $1`, id)
	require.ErrorContains(t, err, "refund_within_charge")
}

// batchesOrg is a fresh database's pool, its batch store and an
// organisation with its trial credit.
func batchesOrg(t *testing.T) (*pgxpool.Pool, *pgstore.Batches, string) {
	t.Helper()
	pool := pgtest.NewPool(t)
	org, _, err := pgstore.New(pool).CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Acme"})
	require.NoError(t, err)
	return pool, batches(t, pool), org.ID
}

// launchMedium launches a test run of n medium questions at price each.
func launchMedium(ctx context.Context, b *pgstore.Batches, orgID, id string, n int, price core.Micros) error {
	plan := &runs.Plan{Kind: runs.KindTest, Model: "acme-panl", Form: runs.FormBuckets,
		Counts: map[runs.Bucket]int{runs.BucketMedium: n}, Tiers: []core.Tier{core.TierPlus},
		Judges: runs.Judges, Repeats: 1, Protocol: runs.ProtocolPairwise}
	qs := make([]*runs.Question, n)
	for i := range qs {
		qs[i] = &runs.Question{BatchID: id, Index: i, Bucket: runs.BucketMedium, Tier: core.TierPlus, QuestionID: "q", Price: price}
	}
	cost := price * core.Micros(n)
	_, err := b.Launch(ctx, &runs.LaunchParams{DailyLimit: 5, Questions: qs, Batch: &runs.Batch{
		ID: id, OrgID: orgID, Kind: runs.KindTest, Model: "acme-panl", ModeID: "acme-panl", ModeKey: "panl",
		ModeVersion: 1, ModeConfigHash: "h", Plan: plan, BankVersion: "b", Billed: cost,
		Quote: &runs.Quote{Total: n, Cost: cost},
	}})
	return err
}

// Trial credit a launch spent and a refund gives back after the trial has
// expired is trial credit again: the trial reopens with it, and the next
// expiry pass deducts it as it deducted the rest, so a cancelled run never
// turns expiring trial credit into balance that stays.
func TestARefundAfterTheTrialExpiredIsDeductedByTheNextPass(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool, b, orgID := batchesOrg(t)
	store := pgstore.New(pool)
	balance := func() *core.Balance {
		t.Helper()
		bal, err := store.GetBalance(ctx, orgID)
		require.NoError(t, err)
		return bal
	}
	grant := balance().TrialRemaining
	require.Positive(t, grant)
	id := "5d1c9c1e-0000-4000-8000-0000000000bb"
	require.NoError(t, launchMedium(ctx, b, orgID, id, 2, core.USD(1)))
	require.Equal(t, grant-core.USD(2), balance().TrialRemaining, "the launch spent trial credit")

	later := &pgstore.ExpireTrialsParams{At: time.Now().Add(core.TrialPeriod + time.Hour)}
	e, err := store.ExpireTrial(ctx, orgID, later)
	require.NoError(t, err)
	require.Equal(t, grant-core.USD(2), e.Deducted, "the unused trial credit expires")
	require.Zero(t, balance().Balance)

	_, err = b.CancelBatch(ctx, orgID, id)
	require.NoError(t, err)
	bal := balance()
	require.Equal(t, core.USD(2), bal.Balance, "the cancel refunds both questions")
	require.Equal(t, core.USD(2), bal.TrialRemaining, "as trial credit, the trial reopened")

	e, err = store.ExpireTrial(ctx, orgID, later)
	require.NoError(t, err)
	require.Equal(t, core.USD(2), e.Deducted, "the next pass deducts what the refund gave back")
	bal = balance()
	require.Zero(t, bal.Balance)
	require.Zero(t, bal.TrialRemaining)
}

// Migration 0016 gives the questions of batches launched before it their
// share of the charge: a test question its bucket's quoted price, a
// certification's question an even split whose first ones carry the
// remainder, so that every batch's shares add up to its charge.
func TestQuestionPricesAreFilledInForEarlierBatches(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := poolMigratedTo(t, 15)
	org := orgBefore(t, pool)

	insert := func(id, kind string, attempt *int, billed int64, quote string, buckets ...string) {
		t.Helper()
		_, err := pool.Exec(ctx, `INSERT INTO batches (id, org_id, kind, model, mode_id, mode_key, mode_version,
			mode_config_hash, plan, protocol, judges, judge_repeats, draw_seed, bank_version, quote, billed_micros,
			attempt, total) VALUES ($1, $2, $3, 'acme-panl', 'acme-panl', 'panl', 1, 'h', '{}', 'pairwise',
			'{nova_pro}', 1, 7, 'v1', $4, $5, $6, $7)`, id, org.ID, kind, quote, billed, attempt, len(buckets))
		require.NoError(t, err)
		for i, b := range buckets {
			_, err := pool.Exec(ctx, `INSERT INTO batch_questions (batch_id, index, bucket, tier, question_id)
				VALUES ($1, $2, $3, 'plus', 'q')`, id, i, b)
			require.NoError(t, err)
		}
	}
	test, certify := "5d1c9c1e-0000-4000-8000-0000000000c1", "5d1c9c1e-0000-4000-8000-0000000000c2"
	insert(test, "test", nil, 112_500, `{"buckets": {"light": {"per_question_micros": 37500}, "medium": {"per_question_micros": 75000}}}`,
		"light", "medium")
	one := 1
	insert(certify, "certify", &one, 1000, `{"buckets": {}}`, "light", "medium", "hard")

	require.NoError(t, pgstore.Migrate(ctx, pool))
	prices := func(id string) []int64 {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT price_micros FROM batch_questions WHERE batch_id = $1 ORDER BY index`, id)
		require.NoError(t, err)
		out, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		require.NoError(t, err)
		return out
	}
	require.Equal(t, []int64{37_500, 75_000}, prices(test), "each bucket's quoted price")
	require.Equal(t, []int64{334, 333, 333}, prices(certify), "1000 µ$ over three, the first carrying the remainder")
}
