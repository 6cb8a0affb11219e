package pgstore_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// A settlement is on disk when SettleCall returns, although its own
// transaction commits without waiting: PostgreSQL crashing right after
// (a backend killed, so every process restarts and recovers from the log
// alone, losing whatever was not yet written) keeps the charge, the
// journal posting, the claim's new state and the receipt.
func TestSettlementIsDurableWhenSettleCallReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	url := pgtest.NewDurableDatabase(t)
	admin, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	// The log writer would otherwise flush a commit left waiting within
	// 200 ms; with 10 s, only the settlement's own wait puts it on disk
	// before the crash.
	_, err = admin.Exec(ctx, "ALTER SYSTEM SET wal_writer_delay = '10s'")
	require.NoError(t, err)
	_, err = admin.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	// An unlogged table is emptied by crash recovery: its row shows that
	// the server really recovered from the log.
	_, err = admin.Exec(ctx, "CREATE UNLOGGED TABLE crash_witness (x int); INSERT INTO crash_witness VALUES (1)")
	require.NoError(t, err)
	victim, err := pgx.Connect(ctx, url) // its backend is killed to crash the server
	require.NoError(t, err)
	defer victim.Close(ctx)

	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Durable"})
	require.NoError(t, err)
	a, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: "req_durable", Lease: time.Minute,
		IdempotencyKey: "k-durable", RequestHash: make([]byte, 32), Hold: core.PlaceHoldParams{Amount: 1_000_000}})
	require.NoError(t, err)
	require.NoError(t, a.Refused)
	r := benchReceipt("req_durable")
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: a.Hold.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r,
		IdempotencyKey: "k-durable", ClaimState: core.ClaimSucceeded})
	require.NoError(t, err)

	require.NoError(t, syscall.Kill(int(victim.PgConn().PID()), syscall.SIGKILL))
	pool.Close()
	// The server ends every other backend, this one's included, then
	// restarts and replays the log.
	require.Eventually(t, func() bool { return admin.Ping(ctx) != nil }, 60*time.Second, 10*time.Millisecond,
		"the crash ends the other sessions")
	_ = admin.Close(ctx)
	var after *pgx.Conn
	require.Eventually(t, func() bool {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return false
		}
		if err := c.Ping(ctx); err != nil {
			_ = c.Close(ctx)
			return false
		}
		after = c
		return true
	}, 60*time.Second, 50*time.Millisecond, "the server comes back after the crash")
	defer after.Close(ctx)
	var witnesses int
	require.NoError(t, after.QueryRow(ctx, "SELECT count(*) FROM crash_witness").Scan(&witnesses))
	require.Zero(t, witnesses, "the server crashed and recovered from the log")

	var state string
	var billed int64
	require.NoError(t, after.QueryRow(ctx, "SELECT state, billed_micros FROM holds WHERE id = $1", a.Hold.ID).Scan(&state, &billed))
	require.Equal(t, "settled", state, "the settlement survived the crash")
	require.Equal(t, int64(r.Billed), billed)
	var balance, held int64
	require.NoError(t, after.QueryRow(ctx, "SELECT balance_micros, held_micros FROM balances WHERE org_id = $1", org.ID).Scan(&balance, &held))
	require.Equal(t, int64(core.TrialCredit-r.Billed), balance)
	require.Zero(t, held)
	var charged int64
	require.NoError(t, after.QueryRow(ctx, `SELECT coalesce(sum(l.amount_micros), 0) FROM journal_legs l JOIN postings p ON p.id = l.posting_id
		WHERE p.kind = 'call_charge' AND l.org_id = $1 AND l.account = 'org_balance'`, org.ID).Scan(&charged))
	require.Equal(t, -int64(r.Billed), charged, "the charge's posting survived")
	var claim string
	require.NoError(t, after.QueryRow(ctx, "SELECT state FROM idempotency_keys WHERE org_id = $1 AND key = 'k-durable'", org.ID).Scan(&claim))
	require.Equal(t, core.ClaimSucceeded, claim)
	var receipts int
	require.NoError(t, after.QueryRow(ctx, "SELECT count(*) FROM receipts WHERE request_id = 'req_durable'").Scan(&receipts))
	require.Equal(t, 1, receipts, "the receipt survived")
}

// A settlement that is refused leaves nothing behind and gives its
// connection back to the pool idle, with synchronous commits on again;
// the pool does not have to replace it.
func TestRefusedSettlementKeepsItsConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	require.NoError(t, err)
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Refused"})
	require.NoError(t, err)
	var pid uint32
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid))

	h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_twice", Amount: 5_000})
	require.NoError(t, err)
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 4_000})
	require.NoError(t, err)
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 4_000})
	require.ErrorIs(t, err, core.ErrConflict, "a settled hold is not settled again")

	bal, err := s.GetBalance(ctx, org.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit-4_000, bal.Balance, "billed once")
	var again uint32
	var sync string
	require.NoError(t, pool.QueryRow(ctx, "SELECT pg_backend_pid(), current_setting('synchronous_commit')").Scan(&again, &sync))
	require.Equal(t, pid, again, "the same connection, kept by the pool")
	require.Equal(t, "on", sync, "the settlement's setting ended with its transaction")
	require.EqualValues(t, 1, pool.Stat().TotalConns())
}
