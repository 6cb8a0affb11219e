package jobs

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/logtest"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type testBundle struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	store *pgstore.Store
	logs  *logtest.Buffer
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	pool := pgtest.NewPool(t)
	return &testBundle{ctx: t.Context(), pool: pool, store: pgstore.New(pool), logs: &logtest.Buffer{}}
}

// runner starts a Runner whose jobs run every second, and stops it when the
// test ends.
func (b *testBundle) runner(t *testing.T, cfg Config) *Runner {
	t.Helper()
	r := b.newRunner(t, cfg)
	b.start(t, r)
	return r
}

// newRunner is a Runner not yet started, whose jobs run every second unless
// cfg says otherwise, logging to b.logs.
func (b *testBundle) newRunner(t *testing.T, cfg Config) *Runner {
	t.Helper()
	if cfg.TrialExpiryInterval == 0 {
		cfg.TrialExpiryInterval = time.Second
	}
	if cfg.SweepInterval == 0 {
		cfg.SweepInterval = time.Second
	}
	if cfg.ReapInterval == 0 {
		cfg.ReapInterval = time.Second
	}
	if cfg.SpendInterval == 0 {
		cfg.SpendInterval = time.Second
	}
	cfg.Logger = slog.New(slog.NewTextHandler(b.logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cfg.testOnly = true
	r, err := New(b.pool, cfg)
	require.NoError(t, err)
	return r
}

// start starts r and stops it when the test ends.
func (b *testBundle) start(t *testing.T, r *Runner) {
	t.Helper()
	require.NoError(t, r.Start(b.ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, r.Stop(ctx))
		if t.Failed() {
			t.Logf("runner logs:\n%s", b.logs.String())
		}
	})
}

// org creates an organisation created age ago.
func (b *testBundle) org(t *testing.T, name string, age time.Duration) string {
	t.Helper()
	return pgtest.OrgCreatedAgo(t, b.pool, name, age)
}

func (b *testBundle) balance(t *testing.T, orgID string) *core.Balance {
	t.Helper()
	bal, err := b.store.GetBalance(b.ctx, orgID)
	require.NoError(t, err)
	return bal
}

// deadHold places a hold for requestID whose lease lapsed a minute ago, as
// a call whose replica died leaves it.
func (b *testBundle) deadHold(t *testing.T, org, requestID string, amount core.Micros) *core.Hold {
	t.Helper()
	h, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: requestID, Amount: amount})
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, "UPDATE holds SET expires_at = now() - interval '1 minute' WHERE id = $1", h.ID)
	require.NoError(t, err)
	return h
}

// completed counts the jobs of a kind River has completed.
func (b *testBundle) completed(t *testing.T, kind string) int {
	t.Helper()
	var n int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM river_job WHERE kind = $1 AND state = 'completed'", kind).Scan(&n))
	return n
}

// The trial-expiry job, run by a started River client, deducts the unused
// trial credit of an organisation past its trial and journals it.
func TestRiverRunsTrialExpiry(t *testing.T) {
	t.Parallel()
	b := setup(t)
	due := b.org(t, "Expiring", 31*24*time.Hour)
	fresh := b.org(t, "New Org", 0)
	b.runner(t, Config{})

	require.Eventually(t, func() bool { return b.balance(t, due).TrialRemaining == 0 }, 20*time.Second, 50*time.Millisecond,
		"the trial-expiry job ran")
	require.Eventually(t, func() bool { return b.completed(t, TrialExpiryArgs{}.Kind()) > 0 }, 10*time.Second, 50*time.Millisecond)
	require.Zero(t, b.balance(t, due).Balance)
	ps, err := b.store.ListPostings(b.ctx, due)
	require.NoError(t, err)
	require.Len(t, ps, 2, "the grant and its expiry")
	require.Equal(t, core.PostingTrialExpiry, ps[1].Kind)
	var sum core.Micros
	for _, l := range ps[1].Legs {
		sum += l.Amount
		if l.Account == core.AccountOrgBalance {
			require.Equal(t, -core.TrialCredit, l.Amount)
		}
	}
	require.Zero(t, sum)
	require.Equal(t, core.TrialCredit, b.balance(t, fresh).TrialRemaining)
	require.Contains(t, b.logs.String(), "trial credit expired")
}

// River runs the spend job: a call's charge reaches the daily sums the
// dashboard reads, once.
func TestRiverRunsTheSpendJob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	org := b.org(t, "Spender", 0)
	h, err := b.store.PlaceHold(b.ctx, &core.PlaceHoldParams{OrgID: org, RequestID: "req_spend", Amount: 5000})
	require.NoError(t, err)
	rounds := 1
	_, err = b.store.SettleCall(b.ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org, Billed: 4200, Receipt: &core.Receipt{
		RequestID: "req_spend", Mode: "conclave-standard", ModeKey: "k", ModeConfigHash: "h", Status: "succeeded",
		Billed: 4200, TokenCharge: 4200, Rounds: &rounds, SeatCount: 1, Payer: org, KeyID: "key_x", PayerKind: core.PrincipalAPIKey}})
	require.NoError(t, err)
	b.runner(t, Config{SpendGrace: time.Second})
	sums := func() []*core.DaySpend {
		rows, err := b.store.DailySpend(b.ctx, &core.SpendQuery{OrgID: org, From: time.Now().AddDate(0, 0, -1), To: time.Now().AddDate(0, 0, 1)})
		require.NoError(t, err)
		return rows
	}
	require.Eventually(t, func() bool { return len(sums()) == 1 }, 20*time.Second, 50*time.Millisecond, "the spend job ran")
	require.Eventually(t, func() bool { return b.completed(t, SpendArgs{}.Kind()) > 1 }, 20*time.Second, 50*time.Millisecond,
		"and ran again")
	got := sums()
	require.Len(t, got, 1)
	require.Equal(t, core.Micros(4200), got[0].Billed, "counted once")
	require.Equal(t, int64(1), got[0].Charges)
	require.Equal(t, "key_x", got[0].KeyID)
	require.Equal(t, "conclave-standard", got[0].Mode)
}

// A configured short trial period: the job expires a trial that young.
func TestRiverRunsTrialExpiryWithAConfiguredPeriod(t *testing.T) {
	t.Parallel()
	b := setup(t)
	org := b.org(t, "Short Trial", time.Hour)
	b.runner(t, Config{TrialPeriod: 30 * time.Minute})
	require.Eventually(t, func() bool { return b.balance(t, org).Balance == 0 }, 20*time.Second, 50*time.Millisecond)
}

// The hold-sweep job, run by River, releases a dead call's hold and frees
// its slot and claim; the reaper job deletes old finished claims.
func TestRiverRunsTheHoldSweepAndTheReaper(t *testing.T) {
	t.Parallel()
	b := setup(t)
	org := b.org(t, "Swept", 0)
	b.deadHold(t, org, "req_dead", 2*core.MicrosPerUSD)
	_, err := b.pool.Exec(b.ctx, "INSERT INTO concurrency_slots (org_id, slot, request_id, lease_until) VALUES ($1, 0, 'req_dead', now() - interval '1 minute')", org)
	require.NoError(t, err)
	hash := bytes.Repeat([]byte{1}, 32)
	_, err = b.pool.Exec(b.ctx, `INSERT INTO idempotency_keys (org_id, key, request_hash, request_id, state, locked_until)
		VALUES ($1, 'k-dead', $2, 'req_dead', 'in_flight', now() - interval '1 minute'),
		       ($1, 'k-old', $2, 'req_old', 'succeeded', now() - interval '2 days')`, org, hash)
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, "UPDATE idempotency_keys SET updated_at = now() - interval '2 days' WHERE key = 'k-old'")
	require.NoError(t, err)

	b.runner(t, Config{HoldGrace: 10 * time.Second})

	require.Eventually(t, func() bool { return b.balance(t, org).Held == 0 }, 20*time.Second, 50*time.Millisecond, "the hold was released")
	var status core.OutcomeStatus
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT status FROM call_outcomes WHERE request_id = 'req_dead'").Scan(&status))
	require.Equal(t, core.OutcomeAbandoned, status)
	require.Equal(t, core.TrialCredit, b.balance(t, org).Balance, "nothing billed")
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM idempotency_keys").Scan(&n))
		return n == 0
	}, 20*time.Second, 50*time.Millisecond, "the dead call's claim is freed and the old one reaped")
	var slots int
	require.NoError(t, b.pool.QueryRow(b.ctx, "SELECT count(*) FROM concurrency_slots").Scan(&slots))
	require.Zero(t, slots)
}

// SweepNow does the three jobs' work at once, without River running.
func TestSweepNow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	due := b.org(t, "Sweep Now", 31*24*time.Hour)
	b.deadHold(t, due, "req_gone", 4*core.MicrosPerUSD)

	r, err := New(b.pool, Config{})
	require.NoError(t, err)
	rep, err := r.SweepNow(b.ctx)
	require.NoError(t, err)
	require.Equal(t, 1, rep.Holds.HoldsReleased)
	// The hold is swept first, so the whole trial is deducted in one pass.
	require.Equal(t, &pgstore.ExpireTrialsResult{Orgs: 1, Deducted: core.TrialCredit}, rep.Trials)
	require.Zero(t, b.balance(t, due).Balance)
	require.NoError(t, r.Stop(b.ctx), "stopping a runner never started does nothing")

	// The package functions are the same work.
	res, err := SweepHolds(b.ctx, b.pool, time.Time{})
	require.NoError(t, err)
	require.Zero(t, res.HoldsReleased)
	tr, err := ExpireTrials(b.ctx, b.pool, time.Time{}, 0)
	require.NoError(t, err)
	require.Zero(t, tr.Orgs)
	n, err := ReapIdempotencyKeys(b.ctx, b.pool, time.Time{}, time.Hour)
	require.NoError(t, err)
	require.Zero(t, n)
}

func TestConfigIsValidated(t *testing.T) {
	t.Parallel()
	for name, cfg := range map[string]Config{
		"negative grace":    {HoldGrace: -time.Second},
		"sub-second sweep":  {SweepInterval: time.Millisecond},
		"negative period":   {TrialPeriod: -time.Hour},
		"negative workers":  {MaxWorkers: -1},
		"negative stop":     {StopTimeout: -time.Second},
		"negative reap":     {ReapInterval: -time.Second},
		"negative retained": {IdempotencyRetention: -time.Second},
	} {
		_, err := New(nil, cfg)
		require.Error(t, err, name)
	}
	c := Config{}.WithDefaults()
	require.Equal(t, core.TrialPeriod, c.TrialPeriod)
	require.Equal(t, 24*time.Hour, c.IdempotencyRetention)
}

// A started Runner stops within its stop timeout and leaves no goroutine
// behind. Not parallel: it compares the goroutines before and after.
func TestRunnerStopsCleanly(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ignore := goleak.IgnoreCurrent()
	ctx := t.Context()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	r, err := New(pool, Config{SweepInterval: time.Second, StopTimeout: 5 * time.Second, testOnly: true})
	require.NoError(t, err)
	require.NoError(t, r.Start(ctx))
	// Wait until a job has run, so that every part of River is up.
	require.Eventually(t, func() bool {
		var n int
		require.NoError(t, pool.QueryRow(ctx, "SELECT count(*) FROM river_job WHERE state = 'completed'").Scan(&n))
		return n > 0
	}, 20*time.Second, 50*time.Millisecond)

	start := time.Now()
	require.NoError(t, r.Stop(ctx))
	require.Less(t, time.Since(start), 10*time.Second)
	require.NoError(t, r.Stop(ctx), "Stop is safe twice")
	pool.Close()
	goleak.VerifyNone(t, ignore)
}

// A hold-sweep run left 'running' by a replica that died (killed in the
// middle of it) does not stop the sweeps of later periods: the holds of
// that replica's calls are still released.
func TestSweepRunsPastARunLeftByADeadReplica(t *testing.T) {
	t.Parallel()
	b := setup(t)
	org := b.org(t, "Orphaned", 0)
	b.deadHold(t, org, "req_orphan", 2*core.MicrosPerUSD)
	// What a killed replica leaves: its periodic sweep, inserted as the
	// runner inserts it, running, never finished.
	cfg := Config{SweepInterval: time.Second, TrialExpiryInterval: time.Hour, ReapInterval: time.Hour, HoldGrace: time.Second,
		StopTimeout: 5 * time.Second}
	r := b.newRunner(t, cfg)
	require.NoError(t, pgstore.MigrateRiver(b.ctx, b.pool))
	res, err := r.Client().Insert(b.ctx, HoldSweepArgs{}, periodicOpts(cfg.SweepInterval))
	require.NoError(t, err)
	_, err = b.pool.Exec(b.ctx, "UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['dead-replica'] WHERE id = $1", res.Job.ID)
	require.NoError(t, err)

	b.start(t, r)
	require.Eventually(t, func() bool { return b.balance(t, org).Held == 0 }, 20*time.Second, 50*time.Millisecond,
		"a later period's sweep released the dead call's hold")
	require.Equal(t, core.TrialCredit, b.balance(t, org).Balance, "nothing billed")
}
