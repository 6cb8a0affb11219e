package pgstore_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/plugins/byok"
)

// The actors the audit tests act as: a person signed in from one address,
// a key from another, and the operator's CLI.
var (
	adaActor = core.Actor{Kind: core.ActorPerson, ID: "person_ada", Address: "203.0.113.7"}
	keyActor = core.Actor{Kind: core.ActorKey, ID: "key_robot", Address: "198.51.100.4"}
)

// trail is what an organisation's audit trail says: each row's actor,
// action, object and detail, oldest first.
type trailRow struct {
	Actor                  core.Actor
	Action, Object, Detail string
}

func trail(t *testing.T, s *pgstore.Store, orgID string) []trailRow {
	t.Helper()
	rows, err := s.Audit(context.Background(), &core.AuditQuery{OrgID: orgID})
	require.NoError(t, err)
	out := []trailRow{}
	for _, r := range rows {
		require.Equal(t, orgID, r.OrgID)
		require.False(t, r.At.IsZero())
		out = append(out, trailRow{Actor: r.Actor, Action: r.Action, Object: r.Object, Detail: r.Detail})
	}
	return out
}

// requireNothingSecret fails if any of secrets appears anywhere in any
// column of the organisation's audit rows (the whole row, as text).
func requireNothingSecret(t *testing.T, pool *pgxpool.Pool, orgID string, secrets ...string) {
	t.Helper()
	rows, err := pool.Query(context.Background(), `SELECT a::text FROM audit_log a WHERE org_id = $1`, orgID)
	require.NoError(t, err)
	texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, texts)
	for _, text := range texts {
		for _, secret := range secrets {
			require.NotEmpty(t, secret)
			require.NotContains(t, text, secret)
		}
	}
}

// Keys: a creation names the key and says what it may do; a revocation is
// one row, however often the key is revoked; nothing of the key's secret,
// its hash or its hint is written.
func TestKeyChangesAreAudited(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	ctx := core.WithActor(context.Background(), adaActor)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme"})
	require.NoError(t, err)

	secret, hash := core.NewKeySecret(true)
	hint := core.KeyHint(secret)
	key, err := s.CreateKey(ctx, &core.CreateKeyParams{OrgID: org.ID, Hash: hash, Hint: hint, Name: "CI runner", Test: true,
		Scopes: []string{"deliberate", "estimate"}, Modes: []string{"acme-panl"}, PersonID: adaActor.ID})
	require.NoError(t, err)
	plain, plainHash := core.NewKeySecret(false)
	other, err := s.CreateKey(core.WithActor(ctx, core.Operator), &core.CreateKeyParams{OrgID: org.ID, Hash: plainHash,
		Hint: core.KeyHint(plain), Name: "ops"})
	require.NoError(t, err)
	_, stray := core.NewKeySecret(false)
	_, err = s.CreateKey(ctx, &core.CreateKeyParams{OrgID: "org_missing", Hash: stray, Name: "nowhere"})
	require.ErrorIs(t, err, core.ErrNotFound, "a key for no organisation is refused, and writes no row")

	revoker := core.WithActor(ctx, keyActor)
	for range 2 {
		got, err := s.RevokeKey(revoker, key.ID)
		require.NoError(t, err)
		require.NotNil(t, got.RevokedAt)
	}

	require.Equal(t, []trailRow{
		{adaActor, core.AuditKeyCreated, key.ID, `"CI runner" scopes deliberate,estimate modes acme-panl test`},
		{core.Operator, core.AuditKeyCreated, other.ID, `"ops" scopes ` + strings.Join(core.AllScopes, ",")},
		{keyActor, core.AuditKeyRevoked, key.ID, "CI runner"},
	}, trail(t, s, org.ID), "a second revocation of a revoked key writes nothing")
	requireNothingSecret(t, pool, org.ID, secret, plain, hint, core.KeyHint(plain),
		hex.EncodeToString(hash), hex.EncodeToString(plainHash), secret[len(secret)-8:])
}

// Provider credentials: setting, replacing and removing each write a row
// naming the provider; removing what is not there writes none; neither the
// key, its hint, the sealed bytes nor an AWS role's external id is ever
// written.
func TestBYOKChangesAreAudited(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	ctx := core.WithActor(context.Background(), adaActor)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme"})
	require.NoError(t, err)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	sealer, err := byok.NewSealer(k)
	require.NoError(t, err)

	const key = "sk-proj-acme-0123456789abcdef-w@7#"
	rec, err := byok.NewKeyCredential(sealer, org.ID, core.ProviderOpenAI, key)
	require.NoError(t, err)
	_, err = s.SetProviderCredential(ctx, rec)
	require.NoError(t, err)
	const replacement = "sk-proj-acme-fedcba9876543210-q!5$"
	again, err := byok.NewKeyCredential(sealer, org.ID, core.ProviderOpenAI, replacement)
	require.NoError(t, err)
	_, err = s.SetProviderCredential(ctx, again)
	require.NoError(t, err)
	const arn, externalID = "arn:aws:iam::111122223333:role/conclave", "acme-external-7f3k"
	role, err := byok.NewRoleCredential(org.ID, arn, externalID)
	require.NoError(t, err)
	_, err = s.SetProviderCredential(ctx, role)
	require.NoError(t, err)

	require.NoError(t, s.RemoveProviderCredential(ctx, org.ID, core.ProviderOpenAI))
	require.ErrorIs(t, s.RemoveProviderCredential(ctx, org.ID, core.ProviderOpenAI), core.ErrNotFound)
	require.ErrorIs(t, s.RemoveProviderCredential(ctx, org.ID, core.ProviderAnthropic), core.ErrNotFound)

	require.Equal(t, []trailRow{
		{adaActor, core.AuditBYOKSet, core.ProviderOpenAI, "api key"},
		{adaActor, core.AuditBYOKSet, core.ProviderOpenAI, "api key"},
		{adaActor, core.AuditBYOKSet, core.ProviderAWS, "role " + arn},
		{adaActor, core.AuditBYOKRemoved, core.ProviderOpenAI, ""},
	}, trail(t, s, org.ID))
	requireNothingSecret(t, pool, org.ID, key, replacement, rec.Hint, again.Hint, externalID, role.Hint,
		"0123456789abcdef", hex.EncodeToString(rec.Sealed), hex.EncodeToString(again.Sealed))
}

// Modes: a draft (new, then replaced), a release, a listing request, the
// operator's review and lab invitations are each one row naming the mode;
// a refused change writes none, and neither does the system's own record
// of a certification.
func TestModeChangesAreAudited(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	s := pgstore.New(pool)
	ctx := core.WithActor(context.Background(), adaActor)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	_, _, err = s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Beta", Ticker: "BETA"})
	require.NoError(t, err)

	save := &core.SaveModeDraft{OrgID: org.ID, Name: "Review Panel", Ticker: "PANL", Spec: []byte(`{}`), Validated: true}
	m, err := s.SaveModeDraft(ctx, save)
	require.NoError(t, err)
	save.ModeID, save.BaseRevision = m.ID, m.DraftRevision
	m, err = s.SaveModeDraft(ctx, save)
	require.NoError(t, err)
	_, err = s.SaveModeDraft(ctx, save)
	require.Equal(t, core.CodeDraftChanged, core.AsError(err).Code, "a stale draft is refused, and writes no row")

	asKey := core.WithActor(ctx, keyActor)
	mode := &core.Mode{ID: m.ID, Ticker: m.Ticker, Deliberation: core.Deliberation{MaxRounds: 1}}
	_, err = s.ReleaseMode(asKey, &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision, Mode: mode, ConfigHash: mode.ConfigHash(nil)})
	require.NoError(t, err)
	m, err = s.ChangeListing(asKey, org.ID, m.ID, core.ModeAction{Kind: core.ActionRequestListing, ListingRevision: m.ListingRevision})
	require.NoError(t, err)
	op := core.WithActor(context.Background(), core.Operator)
	m, err = s.ReviewListing(op, m.ID, core.ModeAction{Kind: core.ActionApprove, ListingRevision: m.ListingRevision, Version: 1})
	require.NoError(t, err)
	_, err = s.RecordCertified(context.Background(), m.ID, 1)
	require.NoError(t, err)

	// An invitation to a ticker no organisation has is written as one to a
	// ticker an organisation has: the trail does not tell which is taken.
	require.NoError(t, s.SetLabInvite(ctx, org.ID, m.ID, "BETA", true))
	require.NoError(t, s.SetLabInvite(ctx, org.ID, m.ID, "NONE", true))
	require.NoError(t, s.SetLabInvite(ctx, org.ID, m.ID, "BETA", false))
	require.ErrorIs(t, s.SetLabInvite(ctx, org.ID, "acme-none", "BETA", true), core.ErrNotFound)

	require.Equal(t, []trailRow{
		{adaActor, core.AuditModeDrafted, "acme-panl", "new mode ACME:PANL, draft 1"},
		{adaActor, core.AuditModeDrafted, "acme-panl", "draft 2"},
		{keyActor, core.AuditModeReleased, "acme-panl", "version 1"},
		{keyActor, core.AuditModeListing, "acme-panl", "request_listing → listing pending"},
		{core.Operator, core.AuditModeListing, "acme-panl", "approve → listing approved"},
		{adaActor, core.AuditModeListing, "acme-panl", "lab invite BETA"},
		{adaActor, core.AuditModeListing, "acme-panl", "lab invite NONE"},
		{adaActor, core.AuditModeListing, "acme-panl", "lab invite withdrawn BETA"},
	}, trail(t, s, org.ID))
}

// Two replicas releasing one draft at once: the loser's conditional write
// rolls back with the audit row sent beside it, so the trail has the one
// release that happened.
func TestALostModeWriteLeavesNoAuditRow(t *testing.T) {
	t.Parallel()
	ctx := core.WithActor(context.Background(), adaActor)
	a := pgstore.New(pgtest.NewPool(t))
	b := pgstore.New(replicaPool(t, a))
	org, _, err := a.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	m, err := a.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: org.ID, Name: "Review Panel", Ticker: "PANL", Spec: []byte(`{}`), Validated: true})
	require.NoError(t, err)
	var read sync.WaitGroup
	read.Add(2)
	for _, s := range []*pgstore.Store{a, b} {
		var once sync.Once
		pgstore.SetAfterModeRead(s, func() { once.Do(func() { read.Done(); read.Wait() }) })
	}
	mode := &core.Mode{ID: m.ID, Ticker: m.Ticker, Deliberation: core.Deliberation{MaxRounds: 1}}
	p := &core.ReleaseMode{OrgID: org.ID, ModeID: m.ID, Revision: m.DraftRevision, Mode: mode, ConfigHash: mode.ConfigHash(nil)}
	errs := make(chan error, 2)
	for _, s := range []*pgstore.Store{a, b} {
		go func() {
			_, err := s.ReleaseMode(ctx, p)
			errs <- err
		}()
	}
	e1, e2 := <-errs, <-errs
	if e1 != nil {
		e1, e2 = e2, e1
	}
	require.NoError(t, e1)
	require.Equal(t, core.CodeDraftChanged, core.AsError(e2).Code)
	require.Positive(t, pgstore.LostModeWrites(a)+pgstore.LostModeWrites(b))

	var releases []trailRow
	for _, r := range trail(t, a, org.ID) {
		if r.Action == core.AuditModeReleased {
			releases = append(releases, r)
		}
	}
	require.Equal(t, []trailRow{{adaActor, core.AuditModeReleased, "acme-panl", "version 1"}}, releases)
}

// launchRun launches a run of kind with n medium questions at price each,
// launched by Ada. misplaced puts a question out of place, which the store
// finds only after the batch and its audit row are written: the launch's
// transaction takes both back.
func launchRun(ctx context.Context, b *pgstore.Batches, orgID, id string, kind runs.Kind, n int, price core.Micros, misplaced bool) error {
	plan := &runs.Plan{Kind: kind, Model: "acme-panl", Form: runs.FormBuckets,
		Counts: map[runs.Bucket]int{runs.BucketMedium: n}, Tiers: []core.Tier{core.TierPlus},
		Judges: runs.Judges, Repeats: 1, Protocol: runs.ProtocolPairwise}
	qs := make([]*runs.Question, n)
	for i := range qs {
		qs[i] = &runs.Question{BatchID: id, Index: i, Bucket: runs.BucketMedium, Tier: core.TierPlus, QuestionID: "q", Price: price}
	}
	if misplaced {
		qs[n-1].Index = n + 6
	}
	cost := price * core.Micros(n)
	_, err := b.Launch(ctx, &runs.LaunchParams{DailyLimit: 5, Questions: qs, Batch: &runs.Batch{
		ID: id, OrgID: orgID, PersonID: adaActor.ID, Kind: kind, Model: "acme-panl", ModeID: "acme-panl", ModeKey: "panl",
		ModeVersion: 2, ModeConfigHash: "h", Plan: plan, BankVersion: "b", Billed: cost,
		Quote: &runs.Quote{Total: n, Cost: cost},
	}})
	return err
}

// Runs: a test run's and a certification's launch and cancel are each one
// row naming the batch, the launch saying the mode, the questions and the
// price; a launch refused, or one that fails part-way, writes none; a
// second cancel writes nothing more.
func TestRunChangesAreAudited(t *testing.T) {
	t.Parallel()
	pool, b, orgID := batchesOrg(t)
	s := pgstore.New(pool)
	ctx := core.WithActor(context.Background(), keyActor)

	const test, cert = "5d1c9c1e-0000-4000-8000-000000000a01", "5d1c9c1e-0000-4000-8000-000000000a02"
	require.NoError(t, launchRun(ctx, b, orgID, test, runs.KindTest, 3, 75_000, false))
	require.NoError(t, launchRun(ctx, b, orgID, cert, runs.KindCertify, 2, 500_000, false))
	require.ErrorIs(t, launchRun(ctx, b, orgID, "5d1c9c1e-0000-4000-8000-000000000a03", runs.KindTest, 1, core.USD(10), false),
		core.ErrInsufficientFunds)
	require.Error(t, launchRun(ctx, b, orgID, "5d1c9c1e-0000-4000-8000-000000000a04", runs.KindTest, 2, 75_000, true))

	asAda := core.WithActor(context.Background(), adaActor)
	got, err := b.CancelBatch(asAda, orgID, test)
	require.NoError(t, err)
	require.Equal(t, runs.StatusCancelled, got.Status)
	require.Equal(t, adaActor.ID, got.PersonID, "the batch names the person who launched it")
	_, err = b.CancelBatch(asAda, orgID, test)
	require.NoError(t, err, "cancelling a cancelled run answers it")
	_, err = b.CancelBatch(core.WithActor(context.Background(), core.Operator), orgID, cert)
	require.NoError(t, err)

	require.Equal(t, []trailRow{
		{keyActor, core.AuditTestLaunched, test, "acme-panl v2, 3 questions, $0.225"},
		{keyActor, core.AuditCertifyLaunched, cert, "acme-panl v2, 2 questions, $1"},
		{adaActor, core.AuditTestCancelled, test, "acme-panl"},
		{core.Operator, core.AuditCertifyCancelled, cert, "acme-panl"},
	}, trail(t, s, orgID))
}

// tripsOf counts the trips f makes on a pool traced by c: batches, and
// queries sent outside one (begin and commit among them).
func tripsOf(c *tripCounter, f func()) int64 {
	q, b := c.queries.Load(), c.batches.Load()
	f()
	return (c.queries.Load() - q) + (c.batches.Load() - b)
}

// auditTracer counts trips as tripCounter does, and notes every trip that
// carries an audit row with nothing else: a statement sent alone, or a
// batch of that one statement.
type auditTracer struct {
	tripCounter
	mu    sync.Mutex
	alone []string
}

func writesAudit(sql string) bool {
	return strings.Contains(strings.ToLower(sql), "insert into audit_log")
}

func (a *auditTracer) TraceQueryStart(ctx context.Context, c *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	if writesAudit(d.SQL) {
		a.mu.Lock()
		a.alone = append(a.alone, d.SQL)
		a.mu.Unlock()
	}
	return a.tripCounter.TraceQueryStart(ctx, c, d)
}

func (a *auditTracer) TraceBatchStart(ctx context.Context, c *pgx.Conn, d pgx.TraceBatchStartData) context.Context {
	if q := d.Batch.QueuedQueries; len(q) == 1 && writesAudit(q[0].SQL) {
		a.mu.Lock()
		a.alone = append(a.alone, q[0].SQL)
		a.mu.Unlock()
	}
	return a.tripCounter.TraceBatchStart(ctx, c, d)
}

// An audited change costs no trip of its own. Compared with what each
// change made before it was audited: a credential set or removed and an
// organisation's plan were one statement (now one batch, the row inside:
// still one trip); a draft replaced was begin, read, write, commit (still
// four); a lab invitation a read and a write (still two). And across every
// change here, a launch and a cancel included, an audit row is never sent
// on its own — alone or as a batch of one — so it always rides with a
// statement the change sent anyway.
func TestAuditRowsNeverTakeATripOfTheirOwn(t *testing.T) {
	t.Parallel()
	traced := &auditTracer{}
	pool := tracedPool(t, traced)
	s := pgstore.New(pool)
	b := batches(t, pool)
	ctx := core.WithActor(context.Background(), adaActor)
	org, _, err := s.CreateOrg(ctx, &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	sealer, err := byok.NewSealer(k)
	require.NoError(t, err)
	rec, err := byok.NewKeyCredential(sealer, org.ID, core.ProviderOpenAI, "sk-proj-acme-0123456789abcdef")
	require.NoError(t, err)

	trips := func(f func()) int64 { return tripsOf(&traced.tripCounter, f) }
	require.Equal(t, int64(1), trips(func() {
		_, err := s.SetProviderCredential(ctx, rec)
		require.NoError(t, err)
	}), "a credential set")
	require.Equal(t, int64(1), trips(func() { require.NoError(t, s.RemoveProviderCredential(ctx, org.ID, core.ProviderOpenAI)) }),
		"a credential removed")
	require.Equal(t, int64(1), trips(func() {
		_, err := s.SetOrgPlan(ctx, &core.SetOrgPlanParams{OrgID: org.ID, Plan: "pro"})
		require.NoError(t, err)
	}), "an organisation's plan")

	save := &core.SaveModeDraft{OrgID: org.ID, Name: "Review Panel", Ticker: "PANL", Spec: []byte(`{}`), Validated: true}
	m, err := s.SaveModeDraft(ctx, save)
	require.NoError(t, err)
	save.ModeID, save.BaseRevision = m.ID, m.DraftRevision
	// begin, the mode's read, its conditional write with the row, commit.
	require.Equal(t, int64(4), trips(func() {
		_, err := s.SaveModeDraft(ctx, save)
		require.NoError(t, err)
	}), "a draft replaced")
	// The mode's read, then the invitation with its row.
	require.Equal(t, int64(2), trips(func() { require.NoError(t, s.SetLabInvite(ctx, org.ID, m.ID, "BETA", true)) }),
		"a lab invitation")

	const id = "5d1c9c1e-0000-4000-8000-000000000b01"
	require.NoError(t, launchRun(ctx, b, org.ID, id, runs.KindTest, 2, 75_000, false))
	_, err = b.CancelBatch(ctx, org.ID, id)
	require.NoError(t, err)

	rows := trail(t, s, org.ID)
	require.Len(t, rows, 8, "every change above wrote its row: %+v", rows)
	require.Equal(t, core.AuditTestCancelled, rows[len(rows)-1].Action)
	traced.mu.Lock()
	defer traced.mu.Unlock()
	require.Empty(t, traced.alone, "no audit row travels alone")
}
