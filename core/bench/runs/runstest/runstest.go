// Package runstest is the conformance suite of the benchmark run stores
// (runs.LaunchStore and runs.RunStore): every implementation runs Run from
// its own tests, against a real backend. It tests behaviour through the
// interfaces only, as the run service and the executor see it, with the
// organisations' money read through core.Ledger: what a launch charges,
// and that a refused launch charges and writes nothing.
package runstest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/storetest"
)

// BatchStore is both run stores in one, as an implementation provides them.
type BatchStore interface {
	runs.LaunchStore
	runs.RunStore
}

// Stores are what the suite runs against: the system of record (for
// organisations and their money) and the batch store over the same data.
type Stores struct {
	Core    core.Store
	Batches BatchStore
}

// Run runs every test against the stores newStores returns; each call must
// return stores over a fresh, empty, migrated database.
func Run(t *testing.T, newStores func(t *testing.T) Stores) {
	tests := map[string]func(t *testing.T, s Stores){
		"LaunchChargesOnePosting":         testLaunchChargesOnePosting,
		"RefusedLaunchWritesNothing":      testRefusedLaunchWritesNothing,
		"DailyLimitCountsEveryReplica":    testDailyLimitCountsEveryReplica,
		"SpendRulesCountLaunches":         testSpendRulesCountLaunches,
		"ClaimLifecycle":                  testClaimLifecycle,
		"StoppedClaimRefusesItsLaunch":    testStoppedClaimRefusesItsLaunch,
		"LapsedClaimFreesItsKey":          testLapsedClaimFreesItsKey,
		"CertifyAttemptsAreNumbered":      testCertifyAttemptsAreNumbered,
		"BatchIsScopedToItsOrganisation":  testBatchIsScopedToItsOrganisation,
		"RecordsAreFirstWins":             testRecordsAreFirstWins,
		"StatusMovesOnce":                 testStatusMovesOnce,
		"QuestionPricesAddUp":             testQuestionPricesAddUp,
		"FailedQuestionRefundedOnce":      testFailedQuestionRefundedOnce,
		"FailedBatchRefundedInFull":       testFailedBatchRefundedInFull,
		"RefundsNeverPassTheCharge":       testRefundsNeverPassTheCharge,
		"CancelRefundsPendingQuestions":   testCancelRefundsPendingQuestions,
		"CancelledBatchRecordsNothing":    testCancelledBatchRecordsNothing,
		"CancelRacesFinish":               testCancelRacesFinish,
		"CancelKeepsAnsweredQuestions":    testCancelKeepsAnsweredQuestions,
		"CancelRacesAnswer":               testCancelRacesAnswer,
		"QueuedQuestionsCountsWhatIsLeft": testQueuedQuestionsCountsWhatIsLeft,
	}
	for name, test := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			test(t, newStores(t))
		})
	}
}

var ctx = context.Background()

func newOrg(t *testing.T, s Stores, name string) *core.Org {
	t.Helper()
	org, _, err := s.Core.CreateOrg(ctx, &core.CreateOrgParams{Name: name})
	require.NoError(t, err)
	return org
}

func balance(t *testing.T, s Stores, orgID string) *core.Balance {
	t.Helper()
	b, err := s.Core.GetBalance(ctx, orgID)
	require.NoError(t, err)
	return b
}

func postings(t *testing.T, s Stores, orgID string) []*core.Posting {
	t.Helper()
	ps, err := s.Core.ListPostings(ctx, orgID)
	require.NoError(t, err)
	return ps
}

// uuid is a distinct, valid batch id for the test.
var uuidCount struct {
	sync.Mutex
	n int
}

func uuid() string {
	uuidCount.Lock()
	defer uuidCount.Unlock()
	uuidCount.n++
	return fmt.Sprintf("00000000-0000-4000-8000-%012d", uuidCount.n)
}

// launchParams is a launch of kind for org, of n light questions at price
// each (a certification: n questions for price in all).
func launchParams(org *core.Org, kind runs.Kind, n int, price core.Micros) *runs.LaunchParams {
	id := uuid()
	plan := &runs.Plan{Kind: kind, Model: "acme-panl", Form: runs.FormBuckets, Counts: map[runs.Bucket]int{runs.BucketLight: n},
		Tiers: []core.Tier{core.TierPlus}, Judges: runs.Judges, Repeats: 1, Protocol: runs.ProtocolPairwise}
	cost := price * core.Micros(n)
	if kind == runs.KindCertify {
		plan.Form, plan.Repeats, cost = runs.FormCertify, 2, price
	}
	b := &runs.Batch{
		ID: id, OrgID: org.ID, Kind: kind, Model: "acme-panl", ModeID: "acme-panl", ModeKey: "panl", ModeVersion: 1,
		ModeConfigHash: "abc123", Plan: plan, Seed: 7, BankVersion: "bank-1", Status: runs.StatusQueued, Billed: cost,
		Quote: &runs.Quote{Total: n, Cost: cost, Minutes: n, Buckets: map[runs.Bucket]runs.BucketQuote{
			runs.BucketLight: {Questions: n, PerQuestion: price, Cost: cost},
		}},
	}
	qs := make([]*runs.Question, n)
	for i := range qs {
		qs[i] = &runs.Question{BatchID: id, Index: i, Bucket: runs.BucketLight, Tier: core.TierPlus, QuestionID: fmt.Sprintf("q%03d", i)}
	}
	if err := runs.SharePrices(b, qs); err != nil {
		panic(err)
	}
	return &runs.LaunchParams{Batch: b, Questions: qs, DailyLimit: 100}
}

func hashOf(s string) []byte {
	h := sha256.Sum256([]byte(s))
	return h[:]
}

func testLaunchChargesOnePosting(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	before := balance(t, s, org.ID)
	p := launchParams(org, runs.KindTest, 4, 37_500)
	b, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	require.Equal(t, p.Batch.ID, b.ID)
	require.Equal(t, runs.StatusQueued, b.Status)
	require.Equal(t, runs.Progress{Total: 4}, b.Progress)
	require.Equal(t, map[runs.Bucket]runs.Progress{runs.BucketLight: {Total: 4}}, b.Buckets)
	require.Equal(t, core.Micros(150_000), b.Billed)
	require.Equal(t, p.Batch.Plan, b.Plan, "the plan as accepted is kept")
	require.Equal(t, p.Batch.Quote, b.Quote)
	require.Zero(t, b.Attempt, "a test run has no attempt number")
	require.Nil(t, b.StartedAt)
	require.False(t, b.CreatedAt.IsZero())

	after := balance(t, s, org.ID)
	require.Equal(t, before.Balance-150_000, after.Balance)
	require.Equal(t, before.TrialRemaining-150_000, after.TrialRemaining, "trial credit is spent first")
	require.Equal(t, before.Held, after.Held, "a launch holds nothing: it is charged")
	ps := postings(t, s, org.ID)
	last := ps[len(ps)-1]
	require.Len(t, ps, 2, "the trial grant, then the launch's one posting")
	require.Equal(t, core.PostingTestCharge, last.Kind)
	require.ElementsMatch(t, []core.Leg{
		{Account: core.AccountOrgBalance, OrgID: org.ID, Amount: -150_000},
		{Account: core.AccountRevenue, Amount: 150_000},
	}, last.Legs)

	qs, err := s.Batches.Questions(ctx, b.ID)
	require.NoError(t, err)
	require.Len(t, qs, 4)
	for i, q := range qs {
		require.Equal(t, i, q.Index)
		require.Equal(t, fmt.Sprintf("q%03d", i), q.QuestionID)
		require.Equal(t, runs.QuestionPending, q.State)
		require.Empty(t, q.Answers)
	}

	// A certification is its own posting kind.
	c := launchParams(org, runs.KindCertify, 3, core.CertificationPrice)
	_, err = s.Batches.Launch(ctx, c)
	require.ErrorIs(t, err, core.ErrInsufficientFunds, "$50 is more than the trial credit left")
	_, err = s.Core.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	_, err = s.Batches.Launch(ctx, c)
	require.NoError(t, err)
	ps = postings(t, s, org.ID)
	require.Equal(t, core.PostingCertifyCharge, ps[len(ps)-1].Kind)
}

func testRefusedLaunchWritesNothing(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	before, journal := balance(t, s, org.ID), postings(t, s, org.ID)
	p := launchParams(org, runs.KindTest, 2, core.USD(6)) // $12 of a $10 trial
	_, err := s.Batches.Launch(ctx, p)
	require.ErrorIs(t, err, core.ErrInsufficientFunds)
	require.Equal(t, before.Balance, balance(t, s, org.ID).Balance)
	require.Equal(t, journal, postings(t, s, org.ID), "no posting")
	_, err = s.Batches.Batch(ctx, org.ID, p.Batch.ID)
	require.ErrorIs(t, err, core.ErrNotFound, "no batch")
	_, err = s.Batches.Question(ctx, p.Batch.ID, 0)
	require.ErrorIs(t, err, core.ErrNotFound, "no questions")

	// A launch that costs nothing charges nothing, and is launched.
	free := launchParams(org, runs.KindTest, 2, 0)
	_, err = s.Batches.Launch(ctx, free)
	require.NoError(t, err)
	require.Equal(t, journal, postings(t, s, org.ID))
}

func testDailyLimitCountsEveryReplica(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	// Two launches at once against a limit of one, as two replicas
	// would: exactly one is launched and charged.
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() {
			p := launchParams(org, runs.KindTest, 1, 100_000)
			p.DailyLimit = 1
			_, errs[i] = s.Batches.Launch(ctx, p)
		})
	}
	wg.Wait()
	var launched, limited int
	for _, err := range errs {
		switch {
		case err == nil:
			launched++
		case errors.Is(err, runs.ErrDailyLimit):
			limited++
		default:
			t.Fatalf("launch: %v", err)
		}
	}
	require.Equal(t, 1, launched)
	require.Equal(t, 1, limited)
	require.Len(t, postings(t, s, org.ID), 2, "one charge")

	// The limits are per kind.
	c := launchParams(org, runs.KindCertify, 1, 100_000)
	c.DailyLimit = 1
	_, err := s.Batches.Launch(ctx, c)
	require.NoError(t, err)
}

func testSpendRulesCountLaunches(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	quota := core.Micros(250_000)
	p := launchParams(org, runs.KindTest, 2, 100_000)
	p.MonthlyQuota = &quota
	_, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	p = launchParams(org, runs.KindTest, 1, 100_000)
	p.MonthlyQuota = &quota
	_, err = s.Batches.Launch(ctx, p)
	require.ErrorIs(t, err, core.ErrQuotaExceeded, "the first launch's $0.20 counts toward the month's $0.25")

	// The first launch counts toward a call's hold too.
	adm, err := s.Core.Admit(ctx, &core.AdmitParams{OrgID: org.ID, RequestID: core.NewID("req"),
		Hold: core.PlaceHoldParams{OrgID: org.ID, Amount: 100_000, MonthlyQuota: &quota}})
	require.NoError(t, err)
	require.ErrorIs(t, adm.Refused, core.ErrQuotaExceeded)

	// An unverified organisation's allowance (the service passes it only
	// for those).
	unverified := newOrg(t, s, "Beta")
	p = launchParams(unverified, runs.KindTest, 3, 100_000)
	p.ActivationAllowance = 250_000
	_, err = s.Batches.Launch(ctx, p)
	require.ErrorIs(t, err, core.ErrVerificationRequired)
}

func testClaimLifecycle(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	claim := func(key, hash string, lease time.Duration) (*runs.LaunchClaim, string) {
		t.Helper()
		id := uuid()
		c, err := s.Batches.ClaimLaunch(ctx, &runs.ClaimLaunchParams{OrgID: org.ID, Key: key, Kind: runs.KindTest,
			RequestHash: hashOf(hash), BatchID: id, Lease: lease})
		require.NoError(t, err)
		return c, id
	}
	c, first := claim("k1", "body", time.Minute)
	require.True(t, c.Won)
	require.Equal(t, runs.ClaimInFlight, c.State)

	c, _ = claim("k1", "other body", time.Minute)
	require.False(t, c.Won)
	require.Equal(t, runs.ClaimInFlight, c.State, "the first attempt is still within its lease")
	require.Equal(t, hashOf("body"), c.RequestHash, "the holder's hash, for the caller to compare")
	require.Equal(t, first, c.BatchID)
	require.False(t, c.LockedUntil.IsZero())

	// Released after a refusal: the key is free again.
	require.NoError(t, s.Batches.ReleaseLaunch(ctx, org.ID, "k1", first))
	c, second := claim("k1", "body", time.Minute)
	require.True(t, c.Won)

	p := launchParams(org, runs.KindTest, 1, 1000)
	p.Batch.ID, p.Questions[0].BatchID, p.IdempotencyKey = second, second, "k1"
	_, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	require.NoError(t, s.Batches.ReleaseLaunch(ctx, org.ID, "k1", second), "a launched claim is not released")
	c, _ = claim("k1", "body", time.Minute)
	require.False(t, c.Won)
	require.Equal(t, runs.ClaimLaunched, c.State)
	require.Equal(t, second, c.BatchID)

	// An attempt past its lease without a launch stopped: retired for good.
	c, _ = claim("k2", "body", time.Microsecond)
	require.True(t, c.Won)
	c, _ = claim("k2", "body", time.Minute)
	require.False(t, c.Won)
	require.Equal(t, runs.ClaimStopped, c.State)
	c, _ = claim("k2", "body", time.Minute)
	require.Equal(t, runs.ClaimStopped, c.State)

	// Keys are the organisation's own.
	other := newOrg(t, s, "Beta")
	oc, err := s.Batches.ClaimLaunch(ctx, &runs.ClaimLaunchParams{OrgID: other.ID, Key: "k1", Kind: runs.KindTest,
		RequestHash: hashOf("body"), BatchID: uuid(), Lease: time.Minute})
	require.NoError(t, err)
	require.True(t, oc.Won)
}

func testStoppedClaimRefusesItsLaunch(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	journal := postings(t, s, org.ID)
	p := launchParams(org, runs.KindTest, 1, 100_000)
	p.IdempotencyKey = "slow"
	c, err := s.Batches.ClaimLaunch(ctx, &runs.ClaimLaunchParams{OrgID: org.ID, Key: "slow", Kind: runs.KindTest,
		RequestHash: hashOf("body"), BatchID: p.Batch.ID, Lease: time.Microsecond})
	require.NoError(t, err)
	require.True(t, c.Won)
	// A repeat finds the attempt past its lease and stops it; the attempt's
	// launch, arriving after, must not charge.
	c, err = s.Batches.ClaimLaunch(ctx, &runs.ClaimLaunchParams{OrgID: org.ID, Key: "slow", Kind: runs.KindTest,
		RequestHash: hashOf("body"), BatchID: uuid(), Lease: time.Minute})
	require.NoError(t, err)
	require.Equal(t, runs.ClaimStopped, c.State)
	_, err = s.Batches.Launch(ctx, p)
	require.ErrorIs(t, err, runs.ErrClaimLost)
	require.Equal(t, journal, postings(t, s, org.ID))
	_, err = s.Batches.Batch(ctx, org.ID, p.Batch.ID)
	require.ErrorIs(t, err, core.ErrNotFound)
}

// A claim with a lapse (a derived key's) holds its key while in flight and
// for the lapse after it launched or stopped; then the key is claimed
// again, for a new batch. Without a lapse it holds the key for good.
func testLapsedClaimFreesItsKey(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	claim := func(key string, lease, lapse time.Duration) (*runs.LaunchClaim, string) {
		t.Helper()
		id := uuid()
		c, err := s.Batches.ClaimLaunch(ctx, &runs.ClaimLaunchParams{OrgID: org.ID, Key: key, Kind: runs.KindTest,
			RequestHash: hashOf("body"), BatchID: id, Lease: lease, Lapse: lapse})
		require.NoError(t, err)
		return c, id
	}
	const lapse = 50 * time.Millisecond
	c, first := claim("derived", time.Minute, lapse)
	require.True(t, c.Won)
	time.Sleep(2 * lapse)
	c, _ = claim("derived", time.Minute, lapse)
	require.False(t, c.Won, "a claim in flight within its lease holds its key, whatever the lapse")
	require.Equal(t, runs.ClaimInFlight, c.State)
	require.Equal(t, first, c.BatchID)

	p := launchParams(org, runs.KindTest, 1, 1000)
	p.Batch.ID, p.Questions[0].BatchID, p.IdempotencyKey = first, first, "derived"
	_, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	c, _ = claim("derived", time.Minute, time.Hour)
	require.False(t, c.Won, "launched within the lapse")
	require.Equal(t, runs.ClaimLaunched, c.State)
	require.Equal(t, first, c.BatchID)
	c, _ = claim("derived", time.Minute, 0)
	require.False(t, c.Won, "no lapse: held for good")

	time.Sleep(2 * lapse)
	c, second := claim("derived", time.Minute, lapse)
	require.True(t, c.Won, "launched longer ago than the lapse: the key is free")
	require.Equal(t, runs.ClaimInFlight, c.State)
	c, _ = claim("derived", time.Minute, lapse)
	require.False(t, c.Won, "the new claim holds the key")
	require.Equal(t, second, c.BatchID)
	p = launchParams(org, runs.KindTest, 1, 1000)
	p.Batch.ID, p.Questions[0].BatchID, p.IdempotencyKey = second, second, "derived"
	_, err = s.Batches.Launch(ctx, p)
	require.NoError(t, err, "the new claim's launch moves it to launched")
	b, err := s.Batches.Batch(ctx, org.ID, first)
	require.NoError(t, err)
	require.Equal(t, first, b.ID, "the first batch stays")

	// A stopped claim lapses too.
	c, _ = claim("stopped", time.Microsecond, lapse)
	require.True(t, c.Won)
	c, _ = claim("stopped", time.Minute, lapse)
	require.Equal(t, runs.ClaimStopped, c.State)
	time.Sleep(2 * lapse)
	c, _ = claim("stopped", time.Minute, lapse)
	require.True(t, c.Won)
}

func testCertifyAttemptsAreNumbered(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	for want := 1; want <= 2; want++ {
		b, err := s.Batches.Launch(ctx, launchParams(org, runs.KindCertify, 2, 1000))
		require.NoError(t, err)
		require.Equal(t, want, b.Attempt)
	}
	p := launchParams(org, runs.KindCertify, 2, 1000)
	p.Batch.ModeVersion = 2
	b, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	require.Equal(t, 1, b.Attempt, "attempts are counted per mode version")
}

func testBatchIsScopedToItsOrganisation(t *testing.T, s Stores) {
	org, other := newOrg(t, s, "Acme"), newOrg(t, s, "Beta")
	p := launchParams(org, runs.KindTest, 1, 1000)
	_, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	_, err = s.Batches.Batch(ctx, other.ID, p.Batch.ID)
	require.ErrorIs(t, err, core.ErrNotFound)
	_, err = s.Batches.Batch(ctx, "", p.Batch.ID)
	require.ErrorIs(t, err, core.ErrNotFound)
	_, err = s.Batches.Batch(ctx, org.ID, uuid())
	require.ErrorIs(t, err, core.ErrNotFound)
	b, err := s.Batches.RunBatch(ctx, p.Batch.ID)
	require.NoError(t, err, "the jobs read any organisation's batch")
	require.Equal(t, org.ID, b.OrgID)
}

func testRecordsAreFirstWins(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	p := launchParams(org, runs.KindTest, 2, 1000)
	_, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	id := p.Batch.ID
	first := &runs.Answer{Text: "42", Engine: "acme-panl", TokensIn: 10, TokensOut: 3, Cost: 120, Latency: 1500 * time.Millisecond}
	q, err := s.Batches.RecordAnswer(ctx, id, 0, runs.SideMode, first)
	require.NoError(t, err)
	require.Equal(t, first, q.Answers[runs.SideMode])
	q, err = s.Batches.RecordAnswer(ctx, id, 0, runs.SideMode, &runs.Answer{Text: "41"})
	require.NoError(t, err)
	require.Equal(t, first, q.Answers[runs.SideMode], "the first answer stands")
	b, err := s.Batches.RunBatch(ctx, id)
	require.NoError(t, err)
	require.Zero(t, b.Progress.Answered, "answered once both sides are")

	// Both sides at once, as the executor asks them.
	var wg sync.WaitGroup
	for _, side := range []runs.Side{runs.SideBaseline, runs.SideBaseline, runs.SideMode} {
		wg.Go(func() {
			_, err := s.Batches.RecordAnswer(ctx, id, 1, side, &runs.Answer{Text: string(side)})
			require.NoError(t, err)
		})
	}
	_, err = s.Batches.RecordAnswer(ctx, id, 0, runs.SideBaseline, &runs.Answer{Text: "40"})
	require.NoError(t, err)
	wg.Wait()
	b, err = s.Batches.RunBatch(ctx, id)
	require.NoError(t, err)
	require.Equal(t, 2, b.Progress.Answered, "each question counted once")

	j := &runs.Judgment{BatchID: id, Index: 0, Judge: runs.JudgeNovaPro, Repeat: 1,
		Order:  []runs.Side{runs.SideBaseline, runs.SideMode},
		Ruling: runs.Ruling{Verdict: runs.VerdictMode, Detail: []byte(`{"why":"exact"}`), Cost: 50, Latency: time.Second}}
	require.NoError(t, s.Batches.RecordJudgment(ctx, j))
	again := *j
	again.Verdict = runs.VerdictBaseline
	require.NoError(t, s.Batches.RecordJudgment(ctx, &again))
	q, err = s.Batches.Question(ctx, id, 0)
	require.NoError(t, err)
	require.Len(t, q.Judgments, 1)
	require.Equal(t, runs.VerdictMode, q.Judgments[0].Verdict, "the first judgment stands")
	require.Equal(t, j.Order, q.Judgments[0].Order)
	require.JSONEq(t, `{"why":"exact"}`, string(q.Judgments[0].Detail))
	require.Equal(t, time.Second, q.Judgments[0].Latency)

	pr, err := s.Batches.FinishQuestion(ctx, id, 0, "")
	require.NoError(t, err)
	require.Equal(t, runs.Progress{Total: 2, Answered: 2, Judged: 1}, pr)
	pr, err = s.Batches.FinishQuestion(ctx, id, 0, "")
	require.NoError(t, err)
	require.Equal(t, 1, pr.Judged, "a question is finished once")
	pr, err = s.Batches.FinishQuestion(ctx, id, 1, "gave up")
	require.NoError(t, err)
	require.Equal(t, runs.Progress{Total: 2, Answered: 2, Judged: 1, Failed: 1}, pr)
	require.True(t, pr.Done())
	q, err = s.Batches.Question(ctx, id, 1)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionFailed, q.State)
	require.Equal(t, "gave up", q.Failure)
	b, err = s.Batches.Batch(ctx, org.ID, id)
	require.NoError(t, err)
	require.Equal(t, runs.Progress{Total: 2, Answered: 2, Judged: 1, Failed: 1}, b.Buckets[runs.BucketLight])
}

func testStatusMovesOnce(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	p := launchParams(org, runs.KindCertify, 1, 1000)
	_, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	id := p.Batch.ID
	moved, err := s.Batches.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusComplete, Result: []byte(`{}`)})
	require.NoError(t, err)
	require.False(t, moved, "a queued batch is not finished")

	require.NoError(t, s.Batches.StartBatch(ctx, id))
	require.NoError(t, s.Batches.StartBatch(ctx, id))
	b, err := s.Batches.RunBatch(ctx, id)
	require.NoError(t, err)
	require.Equal(t, runs.StatusRunning, b.Status)
	require.NotNil(t, b.StartedAt)
	started := *b.StartedAt

	cert := &runs.Certification{Verdict: runs.CertCertified, W: 0.61, L: 0.53, U: 0.69, ModeCertified: true,
		Gates: []runs.Gate{{Name: "valid_judgments", Passed: true}}}
	moved, err = s.Batches.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusComplete, Result: []byte(`{"w":0.61}`), Certification: cert})
	require.NoError(t, err)
	require.True(t, moved)
	moved, err = s.Batches.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusFailed, Failure: "late"})
	require.NoError(t, err)
	require.False(t, moved, "complete is final")
	b, err = s.Batches.RunBatch(ctx, id)
	require.NoError(t, err)
	require.Equal(t, runs.StatusComplete, b.Status)
	require.JSONEq(t, `{"w":0.61}`, string(b.Result))
	require.Equal(t, cert, b.Certification)
	require.Empty(t, b.Failure)
	require.Equal(t, started, *b.StartedAt)
	require.NotNil(t, b.FinishedAt)
}

// launched launches p and starts its batch, as its first job would.
func launched(t *testing.T, s Stores, p *runs.LaunchParams) string {
	t.Helper()
	_, err := s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	require.NoError(t, s.Batches.StartBatch(ctx, p.Batch.ID))
	return p.Batch.ID
}

func runBatch(t *testing.T, s Stores, id string) *runs.Batch {
	t.Helper()
	b, err := s.Batches.RunBatch(ctx, id)
	require.NoError(t, err)
	return b
}

func finish(t *testing.T, s Stores, id string, index int, failure string) runs.Progress {
	t.Helper()
	p, err := s.Batches.FinishQuestion(ctx, id, index, failure)
	require.NoError(t, err)
	return p
}

// judged records both answers to a question and finishes it judged.
func judged(t *testing.T, s Stores, id string, index int) runs.Progress {
	t.Helper()
	answer(t, s, id, index)
	return finish(t, s, id, index, "")
}

func answer(t *testing.T, s Stores, id string, index int) {
	t.Helper()
	for _, side := range []runs.Side{runs.SideMode, runs.SideBaseline} {
		_, err := s.Batches.RecordAnswer(ctx, id, index, side, &runs.Answer{Text: string(side)})
		require.NoError(t, err)
	}
}

func testQuestionPricesAddUp(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	_, err := s.Core.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	p := launchParams(org, runs.KindCertify, 150, core.CertificationPrice)
	_, err = s.Batches.Launch(ctx, p)
	require.NoError(t, err)
	qs, err := s.Batches.Questions(ctx, p.Batch.ID)
	require.NoError(t, err)
	var sum core.Micros
	for i, q := range qs {
		want := core.Micros(333_333)
		if i < 50 {
			want++
		}
		require.Equal(t, want, q.Price, "question %d", i)
		sum += q.Price
	}
	require.Equal(t, core.CertificationPrice, sum, "the $50 split exactly")

	// Prices that do not add up to the charge are refused, and write
	// nothing.
	journal := postings(t, s, org.ID)
	bad := launchParams(org, runs.KindTest, 2, 1000)
	bad.Questions[1].Price++
	_, err = s.Batches.Launch(ctx, bad)
	require.Error(t, err)
	require.Equal(t, journal, postings(t, s, org.ID))
}

// A question given up on is refunded its price once, however many times
// its job gives it up; the refund gives back the trial credit the charge
// spent, and what the spend rules count.
func testFailedQuestionRefundedOnce(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	quota := core.Micros(150_000)
	p := launchParams(org, runs.KindTest, 4, 37_500)
	p.MonthlyQuota = &quota
	id := launched(t, s, p)
	charged, trial := storetest.MoneyOf(t, s.Core, org.ID), balance(t, s, org.ID).TrialRemaining

	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, err := s.Batches.FinishQuestion(ctx, id, 0, "gave up")
			require.NoError(t, err)
		})
	}
	wg.Wait()
	storetest.RequireCharged(t, s.Core, org.ID, charged, core.PostingTestRefund, -37_500)
	require.Equal(t, trial+37_500, balance(t, s, org.ID).TrialRemaining, "the trial credit the charge spent comes back")
	b := runBatch(t, s, id)
	require.Equal(t, core.Micros(37_500), b.Refunded)
	require.Equal(t, runs.Progress{Total: 4, Failed: 1}, b.Progress)

	refunded := storetest.MoneyOf(t, s.Core, org.ID)
	require.Equal(t, 1, finish(t, s, id, 0, "").Failed, "a failed question stays failed")
	require.Equal(t, refunded, storetest.MoneyOf(t, s.Core, org.ID), "and is not refunded again")

	// The spend rules count what was paid in the end: $0.1125 of the
	// month's $0.15, so a $0.0375 launch fits.
	more := launchParams(org, runs.KindTest, 1, 37_500)
	more.MonthlyQuota = &quota
	_, err := s.Batches.Launch(ctx, more)
	require.NoError(t, err)
}

// A batch that fails is refunded whatever of its charge is left, in the
// move to failed, once.
func testFailedBatchRefundedInFull(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	id := launched(t, s, launchParams(org, runs.KindCertify, 3, 1000))
	charged := storetest.MoneyOf(t, s.Core, org.ID)
	qs, err := s.Batches.Questions(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []core.Micros{334, 333, 333}, []core.Micros{qs[0].Price, qs[1].Price, qs[2].Price})

	judged(t, s, id, 0)
	before := storetest.MoneyOf(t, s.Core, org.ID)
	finish(t, s, id, 1, "gave up")
	storetest.RequireCharged(t, s.Core, org.ID, before, core.PostingCertifyRefund, -333)
	judged(t, s, id, 2)

	// The scorer refused it: failed, and refunded the judged questions too.
	before = storetest.MoneyOf(t, s.Core, org.ID)
	moved, err := s.Batches.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusFailed, Failure: "the batch could not be scored"})
	require.NoError(t, err)
	require.True(t, moved)
	storetest.RequireCharged(t, s.Core, org.ID, before, core.PostingCertifyRefund, -667)
	require.Equal(t, charged.Balance+1000, balance(t, s, org.ID).Balance, "the whole charge back")
	require.Equal(t, core.Micros(1000), runBatch(t, s, id).Refunded)

	moved, err = s.Batches.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusFailed, Failure: "again"})
	require.NoError(t, err)
	require.False(t, moved)
	require.Len(t, postings(t, s, org.ID), len(before.Postings)+1, "refunded once")
}

// However a batch's questions end — judged, failed, cancelled — and
// whatever the batch does after, it is refunded no more than it was
// charged, and the organisation's money adds up.
func testRefundsNeverPassTheCharge(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	start := balance(t, s, org.ID)
	id := launched(t, s, launchParams(org, runs.KindTest, 4, 10_000))
	finish(t, s, id, 0, "gave up")
	finish(t, s, id, 1, "gave up")
	_, err := s.Batches.CancelBatch(ctx, org.ID, id)
	require.NoError(t, err)
	finish(t, s, id, 2, "gave up")
	moved, err := s.Batches.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusFailed, Failure: "late"})
	require.NoError(t, err)
	require.False(t, moved, "a cancelled batch is final")
	_, err = s.Batches.CancelBatch(ctx, org.ID, id)
	require.NoError(t, err)

	b := runBatch(t, s, id)
	require.Equal(t, b.Billed, b.Refunded)
	end := balance(t, s, org.ID)
	require.Equal(t, start.Balance, end.Balance)
	require.Equal(t, start.TrialRemaining, end.TrialRemaining)
	var charged, refunded core.Micros
	for _, p := range postings(t, s, org.ID) {
		for _, l := range p.Legs {
			if l.Account != core.AccountOrgBalance {
				continue
			}
			switch p.Kind {
			case core.PostingTestCharge:
				charged -= l.Amount
			case core.PostingTestRefund:
				refunded += l.Amount
			}
		}
	}
	require.Equal(t, core.Micros(40_000), charged)
	require.Equal(t, charged, refunded)
}

// Cancelling a batch cancels its pending questions and refunds their
// prices in one posting; questions judged stay paid, questions failed were
// refunded already. A repeat refunds nothing more.
func testCancelRefundsPendingQuestions(t *testing.T, s Stores) {
	org, other := newOrg(t, s, "Acme"), newOrg(t, s, "Beta")
	id := launched(t, s, launchParams(org, runs.KindTest, 4, 37_500))
	judged(t, s, id, 0)
	finish(t, s, id, 1, "gave up")
	before := storetest.MoneyOf(t, s.Core, org.ID)

	_, err := s.Batches.CancelBatch(ctx, other.ID, id)
	require.ErrorIs(t, err, core.ErrNotFound, "another organisation's batch")
	_, err = s.Batches.CancelBatch(ctx, org.ID, uuid())
	require.ErrorIs(t, err, core.ErrNotFound)
	require.Equal(t, before, storetest.MoneyOf(t, s.Core, org.ID))

	b, err := s.Batches.CancelBatch(ctx, org.ID, id)
	require.NoError(t, err)
	require.Equal(t, runs.StatusCancelled, b.Status)
	require.NotNil(t, b.FinishedAt)
	require.Equal(t, runs.Progress{Total: 4, Answered: 1, Judged: 1, Failed: 1, Cancelled: 2}, b.Progress)
	require.Equal(t, runs.Progress{Total: 4, Answered: 1, Judged: 1, Failed: 1, Cancelled: 2}, b.Buckets[runs.BucketLight])
	require.Equal(t, core.Micros(3*37_500), b.Refunded, "the failed question's and the two cancelled ones'")
	storetest.RequireCharged(t, s.Core, org.ID, before, core.PostingTestRefund, -2*37_500)
	qs, err := s.Batches.Questions(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []runs.QuestionState{runs.QuestionJudged, runs.QuestionFailed, runs.QuestionCancelled, runs.QuestionCancelled},
		[]runs.QuestionState{qs[0].State, qs[1].State, qs[2].State, qs[3].State})

	cancelled := storetest.MoneyOf(t, s.Core, org.ID)
	again, err := s.Batches.CancelBatch(ctx, org.ID, id)
	require.NoError(t, err)
	require.Equal(t, b, again, "a repeat answers the batch as it stands")
	require.Equal(t, cancelled, storetest.MoneyOf(t, s.Core, org.ID), "and refunds nothing more")

	// A queued batch is cancelled whole, never started.
	q := launchParams(org, runs.KindTest, 2, 37_500)
	_, err = s.Batches.Launch(ctx, q)
	require.NoError(t, err)
	before = storetest.MoneyOf(t, s.Core, org.ID)
	b, err = s.Batches.CancelBatch(ctx, org.ID, q.Batch.ID)
	require.NoError(t, err)
	require.Equal(t, runs.StatusCancelled, b.Status)
	require.Nil(t, b.StartedAt)
	storetest.RequireCharged(t, s.Core, org.ID, before, core.PostingTestRefund, -75_000)
	require.NoError(t, s.Batches.StartBatch(ctx, q.Batch.ID))
	require.Equal(t, runs.StatusCancelled, runBatch(t, s, q.Batch.ID).Status, "a cancelled batch does not start")

	// A batch whose every question is done is being scored, or finished:
	// nothing is left to cancel.
	done := launched(t, s, launchParams(org, runs.KindTest, 1, 37_500))
	judged(t, s, done, 0)
	before = storetest.MoneyOf(t, s.Core, org.ID)
	_, err = s.Batches.CancelBatch(ctx, org.ID, done)
	require.ErrorIs(t, err, runs.ErrBatchFinished)
	moved, err := s.Batches.FinishBatch(ctx, done, &runs.Outcome{Status: runs.StatusComplete, Result: []byte(`{}`)})
	require.NoError(t, err)
	require.True(t, moved)
	_, err = s.Batches.CancelBatch(ctx, org.ID, done)
	require.ErrorIs(t, err, runs.ErrBatchFinished)
	require.Equal(t, before, storetest.MoneyOf(t, s.Core, org.ID))
}

// A cancelled question records nothing more, whatever a job still running
// does.
func testCancelledBatchRecordsNothing(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	id := launched(t, s, launchParams(org, runs.KindTest, 2, 1000))
	_, err := s.Batches.CancelBatch(ctx, org.ID, id)
	require.NoError(t, err)
	after := storetest.MoneyOf(t, s.Core, org.ID)

	q, err := s.Batches.RecordAnswer(ctx, id, 0, runs.SideBaseline, &runs.Answer{Text: "baseline"})
	require.NoError(t, err)
	require.Equal(t, runs.QuestionCancelled, q.State)
	require.Nil(t, q.Answers[runs.SideBaseline], "no answer recorded")
	require.NoError(t, s.Batches.RecordJudgment(ctx, &runs.Judgment{BatchID: id, Index: 0, Judge: runs.JudgeNovaPro, Repeat: 1,
		Order: []runs.Side{runs.SideMode, runs.SideBaseline}, Ruling: runs.Ruling{Verdict: runs.VerdictMode}}))
	q, err = s.Batches.Question(ctx, id, 0)
	require.NoError(t, err)
	require.Empty(t, q.Judgments, "no judgment recorded")
	p := finish(t, s, id, 0, "")
	require.Equal(t, runs.Progress{Total: 2, Cancelled: 2}, p)
	finish(t, s, id, 1, "gave up")
	moved, err := s.Batches.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusComplete, Result: []byte(`{}`)})
	require.NoError(t, err)
	require.False(t, moved)
	b := runBatch(t, s, id)
	require.Equal(t, runs.StatusCancelled, b.Status)
	require.Nil(t, b.Result)
	require.Equal(t, after, storetest.MoneyOf(t, s.Core, org.ID))
}

// A question finishing as its batch is cancelled is either finished (and,
// judged, paid) or cancelled and refunded, never both: the batch's refund
// is exactly the prices of the questions that ended cancelled or failed.
func testCancelRacesFinish(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	_, err := s.Core.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	seen := map[runs.QuestionState]int{}
	for round := range 16 {
		failure := ""
		if round%2 == 1 {
			failure = "gave up"
		}
		id := launched(t, s, launchParams(org, runs.KindTest, 2, 1000))
		answer(t, s, id, 0)
		before := balance(t, s, org.ID)
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := s.Batches.FinishQuestion(ctx, id, 0, failure)
			require.NoError(t, err)
		})
		wg.Go(func() {
			_, err := s.Batches.CancelBatch(ctx, org.ID, id)
			require.NoError(t, err)
		})
		wg.Wait()
		b := runBatch(t, s, id)
		require.Equal(t, runs.StatusCancelled, b.Status)
		qs, err := s.Batches.Questions(ctx, id)
		require.NoError(t, err)
		require.Equal(t, runs.QuestionCancelled, qs[1].State)
		var refundable core.Micros
		for _, q := range qs {
			if q.State == runs.QuestionCancelled || q.State == runs.QuestionFailed {
				refundable += q.Price
			}
		}
		seen[qs[0].State]++
		require.Equal(t, refundable, b.Refunded, "round %d: question 0 %s", round, qs[0].State)
		require.Equal(t, before.Balance+refundable, balance(t, s, org.ID).Balance)
		require.Equal(t, 2, b.Progress.Judged+b.Progress.Failed+b.Progress.Cancelled)
	}
	t.Logf("question 0 ended: %v", seen)
}

// A cancel refunds only the questions nothing was answered to: a question
// with the mode's answer or the baseline's is finished and charged — it
// stays pending, takes its other answer and its judgments, and is judged
// (or, given up on, refunded then). A batch left with nothing unanswered to
// cancel is ErrBatchFinished, and runs to its end.
func testCancelKeepsAnsweredQuestions(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	p := launchParams(org, runs.KindTest, 5, 37_500)
	id := launched(t, s, p)
	judged(t, s, id, 0)
	_, err := s.Batches.RecordAnswer(ctx, id, 1, runs.SideMode, &runs.Answer{Text: "mode"})
	require.NoError(t, err)
	_, err = s.Batches.RecordAnswer(ctx, id, 2, runs.SideBaseline, &runs.Answer{Text: "baseline"})
	require.NoError(t, err)
	answer(t, s, id, 3)
	before := storetest.MoneyOf(t, s.Core, org.ID)

	b, err := s.Batches.CancelBatch(ctx, org.ID, id)
	require.NoError(t, err)
	require.Equal(t, runs.StatusCancelled, b.Status)
	require.Equal(t, core.Micros(37_500), b.Refunded, "only question 4, which had no answer")
	storetest.RequireCharged(t, s.Core, org.ID, before, core.PostingTestRefund, -37_500)
	require.Equal(t, runs.Progress{Total: 5, Answered: 2, Judged: 1, Cancelled: 1}, b.Progress)
	qs, err := s.Batches.Questions(ctx, id)
	require.NoError(t, err)
	require.Equal(t, []runs.QuestionState{runs.QuestionJudged, runs.QuestionPending, runs.QuestionPending,
		runs.QuestionPending, runs.QuestionCancelled},
		[]runs.QuestionState{qs[0].State, qs[1].State, qs[2].State, qs[3].State, qs[4].State})
	cancelled := storetest.MoneyOf(t, s.Core, org.ID)

	// The answered questions run to their end after the cancel.
	for _, i := range []int{1, 2} {
		_, err := s.Batches.RecordAnswer(ctx, id, i, runs.SideMode, &runs.Answer{Text: "mode"})
		require.NoError(t, err)
		q, err := s.Batches.RecordAnswer(ctx, id, i, runs.SideBaseline, &runs.Answer{Text: "baseline"})
		require.NoError(t, err)
		require.Len(t, q.Answers, 2, "question %d takes its other answer", i)
	}
	require.NoError(t, s.Batches.RecordJudgment(ctx, &runs.Judgment{BatchID: id, Index: 1, Judge: runs.JudgeNovaPro, Repeat: 1,
		Order: []runs.Side{runs.SideMode, runs.SideBaseline}, Ruling: runs.Ruling{Verdict: runs.VerdictMode}}))
	q, err := s.Batches.Question(ctx, id, 1)
	require.NoError(t, err)
	require.Len(t, q.Judgments, 1, "and its judgments")
	finish(t, s, id, 1, "")
	finish(t, s, id, 2, "")
	require.Equal(t, cancelled, storetest.MoneyOf(t, s.Core, org.ID), "judged after the cancel: charged, not refunded")
	progress := finish(t, s, id, 3, "gave up")
	storetest.RequireCharged(t, s.Core, org.ID, cancelled, core.PostingTestRefund, -37_500)
	require.Equal(t, runs.Progress{Total: 5, Answered: 4, Judged: 3, Failed: 1, Cancelled: 1}, progress)
	b = runBatch(t, s, id)
	require.Equal(t, runs.StatusCancelled, b.Status, "a cancelled batch stays cancelled")
	require.Equal(t, core.Micros(2*37_500), b.Refunded)
	moved, err := s.Batches.FinishBatch(ctx, id, &runs.Outcome{Status: runs.StatusComplete, Result: []byte(`{}`)})
	require.NoError(t, err)
	require.False(t, moved, "and is never scored")

	// Every question left is answered: nothing to cancel.
	all := launched(t, s, launchParams(org, runs.KindTest, 2, 37_500))
	judged(t, s, all, 0)
	_, err = s.Batches.RecordAnswer(ctx, all, 1, runs.SideMode, &runs.Answer{Text: "mode"})
	require.NoError(t, err)
	before = storetest.MoneyOf(t, s.Core, org.ID)
	_, err = s.Batches.CancelBatch(ctx, org.ID, all)
	require.ErrorIs(t, err, runs.ErrBatchFinished)
	require.Equal(t, before, storetest.MoneyOf(t, s.Core, org.ID))
	b = runBatch(t, s, all)
	require.Equal(t, runs.StatusRunning, b.Status)
	require.Equal(t, runs.Progress{Total: 2, Answered: 1, Judged: 1}, b.Progress)
}

// A question answered as its batch is cancelled is either answered — kept,
// and charged — or cancelled and refunded with no answer recorded, never
// both.
func testCancelRacesAnswer(t *testing.T, s Stores) {
	org := newOrg(t, s, "Acme")
	_, err := s.Core.AddFunds(ctx, &core.AddFundsParams{OrgID: org.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	seen := map[runs.QuestionState]int{}
	for round := range 16 {
		id := launched(t, s, launchParams(org, runs.KindTest, 2, 1000))
		before := balance(t, s, org.ID)
		var wg sync.WaitGroup
		wg.Go(func() {
			_, err := s.Batches.RecordAnswer(ctx, id, 0, runs.SideMode, &runs.Answer{Text: "mode"})
			require.NoError(t, err)
		})
		wg.Go(func() {
			_, err := s.Batches.CancelBatch(ctx, org.ID, id)
			require.NoError(t, err)
		})
		wg.Wait()
		b := runBatch(t, s, id)
		require.Equal(t, runs.StatusCancelled, b.Status)
		q, err := s.Batches.Question(ctx, id, 0)
		require.NoError(t, err)
		seen[q.State]++
		switch q.State {
		case runs.QuestionPending:
			require.NotNil(t, q.Answers[runs.SideMode], "round %d: kept because answered", round)
			require.Equal(t, core.Micros(1000), b.Refunded, "round %d: question 1 only", round)
		case runs.QuestionCancelled:
			require.Empty(t, q.Answers, "round %d: cancelled, and no answer recorded", round)
			require.Equal(t, core.Micros(2000), b.Refunded, "round %d", round)
		default:
			t.Fatalf("round %d: question 0 %s", round, q.State)
		}
		require.Equal(t, before.Balance+b.Refunded, balance(t, s, org.ID).Balance)
	}
	t.Logf("question 0 ended: %v", seen)
}

// The questions waiting to be worked are each organisation's questions of
// unfinished batches that are neither judged nor given up on, counted by
// organisation; a finished batch's count nothing, and an organisation with
// none waiting is absent.
func testQueuedQuestionsCountsWhatIsLeft(t *testing.T, s Stores) {
	queued := func() runs.Waiting {
		t.Helper()
		w, err := s.Batches.QueuedQuestions(ctx)
		require.NoError(t, err)
		return w
	}
	require.Empty(t, queued())
	a, b := newOrg(t, s, "Acme"), newOrg(t, s, "Beta")
	pa, pb := launchParams(a, runs.KindTest, 3, 1000), launchParams(b, runs.KindCertify, 2, 1000)
	for _, p := range []*runs.LaunchParams{pa, pb} {
		_, err := s.Batches.Launch(ctx, p)
		require.NoError(t, err)
	}
	require.Equal(t, runs.Waiting{a.ID: 3, b.ID: 2}, queued(), "both organisations' questions")

	require.NoError(t, s.Batches.StartBatch(ctx, pa.Batch.ID))
	for _, side := range []runs.Side{runs.SideMode, runs.SideBaseline} {
		_, err := s.Batches.RecordAnswer(ctx, pa.Batch.ID, 0, side, &runs.Answer{Text: string(side)})
		require.NoError(t, err)
	}
	require.Equal(t, runs.Waiting{a.ID: 3, b.ID: 2}, queued(), "an answered question is still waiting for its judges")
	_, err := s.Batches.FinishQuestion(ctx, pa.Batch.ID, 0, "")
	require.NoError(t, err)
	_, err = s.Batches.FinishQuestion(ctx, pa.Batch.ID, 1, "gave up")
	require.NoError(t, err)
	require.Equal(t, runs.Waiting{a.ID: 1, b.ID: 2}, queued(), "a judged and a failed question are not waiting")

	_, err = s.Batches.FinishQuestion(ctx, pa.Batch.ID, 2, "gave up")
	require.NoError(t, err)
	moved, err := s.Batches.FinishBatch(ctx, pa.Batch.ID, &runs.Outcome{Status: runs.StatusComplete, Result: []byte(`{}`)})
	require.NoError(t, err)
	require.True(t, moved)
	require.Equal(t, runs.Waiting{b.ID: 2}, queued(), "the queued certification's two")
}
