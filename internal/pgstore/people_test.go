package pgstore_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// Sign-in attempt budgets hold across replicas: two stores on two pools of
// one database, spending one account's budget at once, admit exactly its
// limit between them.
func TestAttemptBudgetsHoldAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := pgtest.NewDatabase(t)
	replicas := make([]*pgstore.Store, 2)
	for i := range replicas {
		pool, err := pgxpool.New(context.Background(), url)
		require.NoError(t, err)
		t.Cleanup(pool.Close)
		replicas[i] = pgstore.New(pool)
	}
	budget := core.AttemptBudget{Subject: "account:race@example.com", Limit: 10, Window: time.Hour}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			wait, err := replicas[i%2].SpendAttempt(context.Background(), &core.AttemptParams{Subjects: []core.AttemptBudget{budget}})
			require.NoError(t, err)
			if wait == 0 {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	require.Equal(t, int64(10), admitted.Load())
}

// tripCounter counts the round trips a pool makes: queries sent alone and
// batches (a batch is one trip, whatever it holds).
type tripCounter struct{ queries, batches atomic.Int64 }

func (c *tripCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.queries.Add(1)
	return ctx
}
func (c *tripCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *tripCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.batches.Add(1)
	return ctx
}
func (c *tripCounter) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {}
func (c *tripCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData)     {}

// tracedPool is a pool on a new database whose every trip tracer sees.
func tracedPool(t *testing.T, tracer pgx.QueryTracer) *pgxpool.Pool {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = tracer
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// An audited change costs no round trip of its own: creating and revoking a
// key are each one trip, their audit row inside it (audit_test.go covers
// the other changes).
func TestAuditedChangesAddNoRoundTrip(t *testing.T) {
	t.Parallel()
	trips := &tripCounter{}
	pool := tracedPool(t, trips)
	s := pgstore.New(pool)
	ctx := core.WithActor(context.Background(), core.Operator)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Tripped"})
	require.NoError(t, err)

	count := func(f func()) int64 { return tripsOf(trips, f) }
	secret, hash := core.NewKeySecret(false)
	var key *core.Key
	require.Equal(t, int64(1), count(func() {
		key, err = s.CreateKey(ctx, &core.CreateKeyParams{OrgID: org.ID, Hash: hash, Hint: core.KeyHint(secret), Name: "k"})
		require.NoError(t, err)
	}), "CreateKey with its audit row")
	require.Equal(t, int64(1), count(func() {
		_, err = s.RevokeKey(ctx, key.ID)
		require.NoError(t, err)
	}), "RevokeKey with its audit row")
	rows, err := s.Audit(ctx, &core.AuditQuery{OrgID: org.ID})
	require.NoError(t, err)
	require.Len(t, rows, 2)
}

// People changes carry their audit rows in their own trips: a link is one
// trip, a passkey removed one statement, and a role change is its
// transaction's four (begin, the lock and count, the change with its row,
// commit) — the row is sent with the change, never alone.
func TestPeopleChangesAuditWithoutATripOfTheirOwn(t *testing.T) {
	t.Parallel()
	trips := &tripCounter{}
	pool := tracedPool(t, trips)
	s := pgstore.New(pool)
	ctx := context.Background()
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Counted"})
	require.NoError(t, err)
	ada, err := s.CreatePerson(ctx, &core.CreatePersonParams{Email: "ada@example.com", Name: "Ada", OrgID: org.ID, Role: core.RoleOwner})
	require.NoError(t, err)
	bob, err := s.CreatePerson(ctx, &core.CreatePersonParams{Email: "bob@example.com", Name: "Bob", OrgID: org.ID, Role: core.RoleMember})
	require.NoError(t, err)
	as := core.WithActor(ctx, core.Actor{Kind: core.ActorPerson, ID: ada.ID, Address: "203.0.113.7"})

	count := func(f func()) int64 { return tripsOf(trips, f) }
	invite := func(email string) {
		_, err := s.CreateInvitation(as, &core.CreateInvitationParams{Hash: []byte(email), Kind: core.InvitationInvite,
			OrgID: org.ID, Email: email, Role: core.RoleMember, ExpiresAt: time.Now().Add(time.Hour)})
		require.NoError(t, err)
	}
	setRole := func(role core.Role) {
		_, err := s.SetRole(as, &core.SetRoleParams{OrgID: org.ID, PersonID: bob.ID, Role: role})
		require.NoError(t, err)
	}
	// Warm the pool's statement cache first: a statement's first use is
	// prepared in a trip of its own, once per connection.
	invite("warm@example.com")
	setRole(core.RoleOwner)
	pk, err := s.AddPasskey(as, &core.Passkey{PersonID: ada.ID, CredentialID: []byte("c1"), Name: "Laptop", Credential: []byte("{}")})
	require.NoError(t, err)
	require.NoError(t, s.RemovePasskey(as, ada.ID, pk.ID))
	pk, err = s.AddPasskey(as, &core.Passkey{PersonID: ada.ID, CredentialID: []byte("c2"), Name: "Phone", Credential: []byte("{}")})
	require.NoError(t, err)

	require.Equal(t, int64(1), count(func() { invite("cy@example.com") }), "an invitation and its row")
	require.Equal(t, int64(4), count(func() { setRole(core.RoleMember) }), "a role change and its row")
	require.Equal(t, int64(1), count(func() { require.NoError(t, s.RemovePasskey(as, ada.ID, pk.ID)) }),
		"a passkey removed and its row")

	rows, err := s.Audit(ctx, &core.AuditQuery{OrgID: org.ID})
	require.NoError(t, err)
	var actions []string
	for _, r := range rows[len(rows)-3:] {
		actions = append(actions, r.Action)
	}
	require.Equal(t, []string{core.AuditPersonInvited, core.AuditPersonRole, core.AuditPasskeyRemoved}, actions)
}

// A session's use is written at most once a minute: a fresh one is read
// without a write, a stale one is brought up to now.
func TestSessionUseIsWrittenOnceAMinute(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	p, err := s.CreatePerson(ctx, &core.CreatePersonParams{Email: "ada@example.com", Name: "Ada"})
	require.NoError(t, err)
	hash := []byte("session-hash")
	created, err := s.CreateSession(ctx, &core.CreateSessionParams{Hash: hash, PersonID: p.ID, ExpiresAt: time.Now().Add(time.Hour)})
	require.NoError(t, err)

	xmin := func() uint32 {
		var x uint32
		require.NoError(t, pool.QueryRow(ctx, `SELECT xmin::text::bigint FROM sessions WHERE hash = $1`, hash).Scan(&x))
		return x
	}
	before := xmin()
	got, err := s.Session(ctx, hash, time.Hour)
	require.NoError(t, err)
	require.True(t, got.LastSeenAt.Equal(created.LastSeenAt))
	require.Equal(t, before, xmin(), "a fresh session is not written")

	_, err = pool.Exec(ctx, `UPDATE sessions SET last_seen_at = now() - interval '5 minutes' WHERE hash = $1`, hash)
	require.NoError(t, err)
	stale := xmin()
	got, err = s.Session(ctx, hash, time.Hour)
	require.NoError(t, err)
	require.False(t, got.LastSeenAt.Before(created.LastSeenAt), "the use is recorded as now, not five minutes ago")
	require.NotEqual(t, stale, xmin(), "a stale session is written")

	_, err = pool.Exec(ctx, `UPDATE sessions SET last_seen_at = now() - interval '13 hours' WHERE hash = $1`, hash)
	require.NoError(t, err)
	_, err = s.Session(ctx, hash, 12*time.Hour)
	require.ErrorIs(t, err, core.ErrNotFound, "idle past twelve hours")
	_, err = s.Session(ctx, hash, 24*time.Hour)
	require.NoError(t, err, "a longer idle timeout still finds it")
}

// Idle sign-in budgets are pruned as attempts go on: a flood of unknown
// emails leaves no lasting rows.
func TestIdleAttemptBudgetsArePruned(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	_, err := pool.Exec(ctx, `INSERT INTO signin_attempts (subject, tat)
		SELECT 'account:old' || g || '@example.com', now() - interval '1 hour' FROM generate_series(1, 20) g`)
	require.NoError(t, err)
	budget := core.AttemptBudget{Subject: "address:192.0.2.9", Limit: 100, Window: time.Hour}
	for range 3 {
		wait, err := s.SpendAttempt(ctx, &core.AttemptParams{Subjects: []core.AttemptBudget{budget}})
		require.NoError(t, err)
		require.Zero(t, wait)
	}
	var left int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM signin_attempts WHERE subject LIKE 'account:old%'`).Scan(&left))
	require.Zero(t, left, "each attempt prunes up to eight idle budgets")
}

// The operator's changes to an organisation's settings are audited as the
// operator's, with what changed.
func TestOrgSettingsAreAudited(t *testing.T) {
	t.Parallel()
	s := pgstore.New(pgtest.NewPool(t))
	ctx := core.WithActor(context.Background(), core.Operator)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Settled"})
	require.NoError(t, err)
	_, err = s.SetOrgPlan(ctx, &core.SetOrgPlanParams{OrgID: org.ID, Plan: "pro"})
	require.NoError(t, err)
	conc, quota := 9, core.Micros(5_000_000)
	_, err = s.SetOrgLimits(ctx, &core.SetOrgLimitsParams{OrgID: org.ID, Concurrency: &conc, MonthlyQuota: &quota})
	require.NoError(t, err)
	_, err = s.SetOrgSuspended(ctx, &core.SetOrgSuspendedParams{OrgID: org.ID, Suspended: true})
	require.NoError(t, err)
	_, err = s.SetOrgVerified(ctx, org.ID, false)
	require.NoError(t, err)
	_, err = s.SetOrgPlan(ctx, &core.SetOrgPlanParams{OrgID: "org_missing", Plan: "pro"})
	require.ErrorIs(t, err, core.ErrNotFound)

	rows, err := s.Audit(ctx, &core.AuditQuery{OrgID: org.ID})
	require.NoError(t, err)
	var details []string
	for _, r := range rows {
		require.Equal(t, core.AuditOrgSettings, r.Action)
		require.Equal(t, core.Operator, r.Actor)
		details = append(details, r.Detail)
	}
	require.Equal(t, []string{"plan pro", "concurrency 9, monthly quota 5", "suspended true", "verified false"}, details)
}
