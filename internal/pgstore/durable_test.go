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

// crashable is a durable cluster of the test's own that the test can
// crash: killing a backend makes PostgreSQL end every process and recover
// from the log alone, losing whatever was not yet written to it.
type crashable struct {
	url           string
	admin, victim *pgx.Conn
}

func newCrashable(t *testing.T) *crashable {
	t.Helper()
	ctx := context.Background()
	c := &crashable{url: pgtest.NewDurableDatabase(t)}
	var err error
	c.admin, err = pgx.Connect(ctx, c.url)
	require.NoError(t, err)
	// The log writer would otherwise flush a commit left waiting within
	// 200 ms; with 10 s, only a synchronous commit puts it on disk soon.
	_, err = c.admin.Exec(ctx, "ALTER SYSTEM SET wal_writer_delay = '10s'")
	require.NoError(t, err)
	_, err = c.admin.Exec(ctx, "SELECT pg_reload_conf()")
	require.NoError(t, err)
	// An unlogged table is emptied by crash recovery: its row shows that
	// the server really recovered from the log.
	_, err = c.admin.Exec(ctx, "CREATE UNLOGGED TABLE crash_witness (x int); INSERT INTO crash_witness VALUES (1)")
	require.NoError(t, err)
	c.victim, err = pgx.Connect(ctx, c.url) // its backend is killed to crash the server
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.victim.Close(ctx) })
	return c
}

// store is a Store on the crashable server (its pool closed when the test
// ends) and an organisation in it.
func (c *crashable) store(t *testing.T) (*pgstore.Store, *pgxpool.Pool, *core.Org) {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), c.url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	s := pgstore.New(pool)
	org, _, err := s.CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Crashable"})
	require.NoError(t, err)
	return s, pool, org
}

// crash crashes the server, waits until it has recovered, and returns a
// connection to it (closed when the test ends).
func (c *crashable) crash(t *testing.T) *pgx.Conn {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, syscall.Kill(int(c.victim.PgConn().PID()), syscall.SIGKILL))
	// The server ends every other backend, the admin one's included.
	require.Eventually(t, func() bool { return c.admin.Ping(ctx) != nil }, 60*time.Second, 10*time.Millisecond,
		"the crash ends the other sessions")
	_ = c.admin.Close(ctx)
	var after *pgx.Conn
	require.Eventually(t, func() bool {
		conn, err := pgx.Connect(ctx, c.url)
		if err != nil {
			return false
		}
		if err := conn.Ping(ctx); err != nil {
			_ = conn.Close(ctx)
			return false
		}
		after = conn
		return true
	}, 60*time.Second, 50*time.Millisecond, "the server comes back after the crash")
	t.Cleanup(func() { _ = after.Close(ctx) })
	var witnesses int
	require.NoError(t, after.QueryRow(ctx, "SELECT count(*) FROM crash_witness").Scan(&witnesses))
	require.Zero(t, witnesses, "the server crashed and recovered from the log")
	return after
}

// settled reports whether hold is settled at billed in db, with the
// organisation's balance, the charge's posting and the receipt to match;
// or, when it is not, that nothing of the settlement is there.
func settled(t *testing.T, db *pgx.Conn, orgID, holdID, requestID string, billed core.Micros) bool {
	t.Helper()
	ctx := context.Background()
	var state core.HoldState
	var billedMicros *int64
	require.NoError(t, db.QueryRow(ctx, "SELECT state, billed_micros FROM holds WHERE id = $1", holdID).Scan(&state, &billedMicros))
	var balance, held, charged int64
	require.NoError(t, db.QueryRow(ctx, "SELECT balance_micros, held_micros FROM balances WHERE org_id = $1", orgID).Scan(&balance, &held))
	require.NoError(t, db.QueryRow(ctx, `SELECT coalesce(sum(l.amount_micros), 0) FROM journal_legs l JOIN postings p ON p.id = l.posting_id
		WHERE p.kind = 'call_charge' AND l.org_id = $1 AND l.account = 'org_balance'`, orgID).Scan(&charged))
	var receipts int
	require.NoError(t, db.QueryRow(ctx, "SELECT count(*) FROM receipts WHERE request_id = $1", requestID).Scan(&receipts))
	if state != core.HoldSettled {
		require.Equal(t, core.HoldHeld, state)
		require.Equal(t, int64(core.TrialCredit), balance, "nothing charged")
		require.Zero(t, charged, "no posting")
		require.Zero(t, receipts, "no receipt")
		return false
	}
	require.Equal(t, int64(billed), *billedMicros)
	require.Equal(t, int64(core.TrialCredit-billed), balance)
	require.Zero(t, held)
	require.Equal(t, -int64(billed), charged, "the charge's posting")
	require.Equal(t, 1, receipts, "the receipt")
	return true
}

// A settlement is on disk when SettleCall returns, although its own
// transaction commits without waiting: PostgreSQL crashing right after
// keeps the charge, the journal posting, the claim's new state and the
// receipt.
func TestSettlementIsDurableWhenSettleCallReturns(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCrashable(t)
	s, _, org := c.store(t)
	a, err := s.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: "req_durable", Lease: time.Minute,
		IdempotencyKey: "k-durable", RequestHash: make([]byte, 32), Hold: core.PlaceHoldParams{Amount: 1_000_000}})
	require.NoError(t, err)
	require.NoError(t, a.Refused)
	r := benchReceipt("req_durable")
	_, err = s.SettleCall(ctx, &core.SettleCallParams{HoldID: a.Hold.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r,
		IdempotencyKey: "k-durable", ClaimState: core.ClaimSucceeded})
	require.NoError(t, err)

	after := c.crash(t)
	require.True(t, settled(t, after, org.ID, a.Hold.ID, "req_durable", r.Billed), "the settlement survived the crash")
	var claim core.ClaimState
	require.NoError(t, after.QueryRow(ctx, "SELECT state FROM idempotency_keys WHERE org_id = $1 AND key = 'k-durable'", org.ID).Scan(&claim))
	require.Equal(t, core.ClaimSucceeded, claim)
}

// A settlement whose wait for the disk is cut off by a crash, after its
// commit, is reported as what the recovered database holds: billed if it
// was kept, not billed if it was lost — SettleCall waits for the server to
// come back to find out.
func TestSettlementCutOffByACrashIsReportedAsTheDatabaseKeptIt(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c := newCrashable(t)
	s, pool, org := c.store(t)
	// The wait for the disk takes long enough for the crash to cut it off.
	pgstore.SetDurableMarks(s, "SELECT pg_sleep(3)", "", time.Minute)
	h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_cut", Amount: 1_000_000})
	require.NoError(t, err)
	_, err = pool.Exec(ctx, "SELECT pg_logical_emit_message(true, 'test', 'hold on disk')")
	require.NoError(t, err)
	r := benchReceipt("req_cut")
	done := make(chan error, 1)
	go func() {
		_, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: r.Billed, Receipt: r})
		done <- err
	}()
	require.Eventually(t, func() bool {
		var n int
		return c.admin.QueryRow(ctx, "SELECT count(*) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep%' AND state = 'active'").Scan(&n) == nil && n == 1
	}, 10*time.Second, 5*time.Millisecond, "the settlement is waiting for the disk")
	after := c.crash(t)
	err = <-done
	require.NotErrorIs(t, err, core.ErrOutcomeUnknown, "the server came back within the window")
	kept := settled(t, after, org.ID, h.ID, "req_cut", r.Billed)
	if kept {
		require.NoError(t, err, "a settlement the database kept is reported billed")
	} else {
		require.ErrorContains(t, err, "the settlement was lost", "a settlement the database lost is reported unbilled")
	}
	t.Logf("kept by the recovered database: %v", kept)
}

// When a committed settlement cannot be confirmed on disk within the
// window, SettleCall says the outcome is unknown, never that nothing was
// billed; and when it can, it reports the settlement.
func TestSettlementWhoseWaitForTheDiskFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		confirm   string
		wantError error
	}{
		{"confirmed on another connection", "", nil},
		{"not confirmed", "SELECT 1/0", core.ErrOutcomeUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, pool, org := newAdmissionStore(t)
			pgstore.SetDurableMarks(s, "SELECT 1/0", tc.confirm, 300*time.Millisecond)
			h, err := s.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: org.ID, RequestID: "req_mark", Amount: 100_000})
			require.NoError(t, err)
			bal, err := s.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: org.ID, Billed: 40_000})
			if tc.wantError != nil {
				require.ErrorIs(t, err, tc.wantError)
			} else {
				require.NoError(t, err)
				require.Equal(t, core.TrialCredit-40_000, bal.Balance)
			}
			var state core.HoldState
			require.NoError(t, pool.QueryRow(ctx, "SELECT state FROM holds WHERE id = $1", h.ID).Scan(&state))
			require.Equal(t, core.HoldSettled, state, "committed either way")
		})
	}
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
