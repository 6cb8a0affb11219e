package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/storetest"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// The benchmark questions' jobs, run by real River clients on a real
// database through runs.Executor. The answerers, the judge panel and the
// scorer are the small doubles below (their real implementations are other
// packages'); what is tested is the orchestration: every answer and
// judgment recorded once, whatever runs a question's job twice or dies in
// the middle of it, and the batch finished and scored once.

// asked counts what the doubles were asked, by question.
type asked struct {
	mu        sync.Mutex
	answers   map[string]int // "index/side"
	judgments map[string]int // "index/judge/repeat"
}

func newAsked() *asked { return &asked{answers: map[string]int{}, judgments: map[string]int{}} }

func (a *asked) add(m map[string]int, key string) {
	a.mu.Lock()
	m[key]++
	a.mu.Unlock()
}

func (a *asked) count(m map[string]int, key string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return m[key]
}

// answerer answers every question, but those fail refuses (it is set
// before any job runs).
type answerer struct {
	asked *asked
	fail  func(r *runs.AnswerRequest) error
	// hold, when set (before any job runs), answers in its stead, with the
	// job's context.
	hold func(ctx context.Context, r *runs.AnswerRequest) error
}

func (a *answerer) Answer(ctx context.Context, r *runs.AnswerRequest) (*runs.Answer, error) {
	a.asked.add(a.asked.answers, fmt.Sprintf("%d/%s", r.Question.Index, r.Side))
	if a.hold != nil {
		return nil, a.hold(ctx, r)
	}
	if a.fail != nil {
		if err := a.fail(r); err != nil {
			return nil, err
		}
	}
	return &runs.Answer{Text: fmt.Sprintf("%s's answer to %s", r.Side, r.Question.QuestionID), Engine: string(r.Side),
		TokensIn: 20, TokensOut: 40, Cost: 300, Latency: 2 * time.Second}, nil
}

// panel rules for the mode on even questions and a tie on odd ones; fail,
// when set (before any job runs), refuses a judgment with an error.
type panel struct {
	asked *asked
	fail  func(r *runs.JudgeRequest) error
}

func (p *panel) Judge(_ context.Context, r *runs.JudgeRequest) (*runs.Ruling, error) {
	p.asked.add(p.asked.judgments, fmt.Sprintf("%d/%s/%d", r.Question.Index, r.Judge, r.Repeat))
	if r.Answers[runs.SideMode] == nil || r.Answers[runs.SideBaseline] == nil || len(r.Order) != 2 {
		return nil, errors.New("judged without both answers")
	}
	if p.fail != nil {
		if err := p.fail(r); err != nil {
			return nil, err
		}
	}
	v := runs.VerdictMode
	if r.Question.Index%2 == 1 {
		v = runs.VerdictTie
	}
	return &runs.Ruling{Verdict: v, Detail: json.RawMessage(`{"rubric":"test"}`), Cost: 100, Latency: time.Second}, nil
}

// scorer scores W, the mean of the valid judgments (mode 1, tie ½,
// baseline 0), and certifies at W ≥ 0.5.
type scorer struct{ calls sync.Map }

func (s *scorer) Score(_ context.Context, b *runs.Batch, qs []*runs.Question) (*runs.Scored, error) {
	n, _ := s.calls.LoadOrStore(b.ID, new(int))
	*n.(*int)++
	var sum float64
	var judgments, judged int
	for _, q := range qs {
		if q.State != runs.QuestionJudged {
			continue
		}
		judged++
		for _, j := range q.Judgments {
			switch j.Verdict {
			case runs.VerdictMode:
				sum++
			case runs.VerdictTie:
				sum += 0.5
			}
			judgments++
		}
	}
	w := sum / float64(judgments)
	res, _ := json.Marshal(map[string]any{"w": w, "questions": judged, "judgments": judgments})
	out := &runs.Scored{Result: res}
	if b.Kind == runs.KindCertify {
		v := runs.CertNotCertified
		if w >= 0.5 {
			v = runs.CertCertified
		}
		out.Certification = &runs.Certification{Verdict: v, W: w, L: w - 0.1, U: w + 0.1,
			Gates: []runs.Gate{{Name: "valid_judgments", Passed: true}}}
	}
	return out, nil
}

type benchBundle struct {
	*testBundle
	batches *pgstore.Batches
	asked   *asked
	mode    *answerer
	base    *answerer
	panel   *panel
	scorer  *scorer
	exec    *runs.Executor
	modeID  string
}

func setupBench(t *testing.T) *benchBundle {
	t.Helper()
	b := setup(t)
	q, err := NewQuestionQueue(b.pool, 2)
	require.NoError(t, err)
	bb := &benchBundle{testBundle: b, batches: pgstore.NewBatches(b.pool, q), asked: newAsked(), scorer: &scorer{}}
	bb.mode, bb.base, bb.panel = &answerer{asked: bb.asked}, &answerer{asked: bb.asked}, &panel{asked: bb.asked}
	bb.exec, err = runs.NewExecutor(runs.ExecutorDeps{Store: bb.batches, Mode: bb.mode, Baseline: bb.base,
		Panel: bb.panel, Scorer: bb.scorer, Certifier: b.store})
	require.NoError(t, err)
	return bb
}

// listedMode saves, releases and lists an organisation's mode, approved at
// version 1, and releases a version 2: the version a certification of the
// mode as its owner names it runs.
func (b *benchBundle) listedMode(t *testing.T, orgID string) *core.AuthoredMode {
	t.Helper()
	ctx := b.ctx
	surcharge := core.Micros(50_000)
	mode := &core.Mode{Key: "panl", Name: "Panel", Deliberation: core.Deliberation{
		Seats: map[core.Tier][]core.Seat{core.TierPlus: {{Engine: "sim/atlas"}}}, Critique: core.CritiqueNever, MaxRounds: 1,
	}, Pricing: core.Pricing{Surcharge: &surcharge}}
	save := func(m *core.AuthoredMode) *core.AuthoredMode {
		p := &core.SaveModeDraft{OrgID: orgID, Name: "Panel", Ticker: "PANL", Spec: json.RawMessage(`{}`), Validated: true}
		if m != nil {
			p.ModeID = m.ID
		}
		m, err := b.store.SaveModeDraft(ctx, p)
		require.NoError(t, err)
		_, err = b.store.ReleaseMode(ctx, &core.ReleaseMode{OrgID: orgID, ModeID: m.ID, Revision: m.DraftRevision, Mode: mode, ConfigHash: "h"})
		require.NoError(t, err)
		m, err = b.store.AuthoredMode(ctx, orgID, m.ID)
		require.NoError(t, err)
		return m
	}
	m := save(nil)
	m, err := b.store.ChangeListing(ctx, orgID, m.ID, core.ModeAction{Kind: core.ActionRequestListing, ListingRevision: m.ListingRevision})
	require.NoError(t, err)
	m, err = b.store.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, Version: 1, ListingRevision: m.ListingRevision})
	require.NoError(t, err)
	b.modeID = m.ID
	return save(m)
}

var batchIDs atomic.Int64

// newBatchID is a batch id no other batch of the test process has.
func newBatchID() string { return fmt.Sprintf("6e3a0000-0000-4000-8000-%012d", batchIDs.Add(1)) }

// launch launches a batch of kind with n medium questions, judges and
// repeats, as the run service would, and returns its id.
func (b *benchBundle) launch(t *testing.T, orgID string, kind runs.Kind, n, repeats int, judges ...runs.Judge) string {
	t.Helper()
	return b.launchID(t, newBatchID(), orgID, kind, n, repeats, judges...)
}

// launchID is launch of a batch whose id is given.
func (b *benchBundle) launchID(t *testing.T, id, orgID string, kind runs.Kind, n, repeats int, judges ...runs.Judge) string {
	t.Helper()
	plan := &runs.Plan{Kind: kind, Model: "acme-panl", Form: runs.FormBuckets, Counts: map[runs.Bucket]int{runs.BucketMedium: n},
		Tiers: []core.Tier{core.TierPlus}, Judges: judges, Repeats: repeats, Protocol: runs.ProtocolPairwise}
	qs := make([]*runs.Question, n)
	for i := range qs {
		qs[i] = &runs.Question{BatchID: id, Index: i, Bucket: runs.BucketMedium, Tier: core.TierPlus, QuestionID: fmt.Sprintf("q%d", i)}
	}
	modeID := b.modeID
	if modeID == "" {
		modeID = "acme-panl"
	}
	price := core.Micros(100 * n)
	bt := &runs.Batch{
		ID: id, OrgID: orgID, Kind: kind, Model: "acme-panl", ModeID: modeID, ModeKey: "panl", ModeVersion: 2,
		ModeConfigHash: "h", Plan: plan, Seed: 11, BankVersion: "test", Billed: price, Quote: &runs.Quote{Total: n, Cost: price,
			Buckets: map[runs.Bucket]runs.BucketQuote{runs.BucketMedium: {Questions: n, PerQuestion: 100, Cost: price}}},
	}
	require.NoError(t, runs.SharePrices(bt, qs))
	_, err := b.batches.Launch(b.ctx, &runs.LaunchParams{DailyLimit: 10, Questions: qs, Batch: bt})
	require.NoError(t, err)
	return id
}

func (b *benchBundle) batch(t *testing.T, id string) *runs.Batch {
	t.Helper()
	bt, err := b.batches.RunBatch(b.ctx, id)
	require.NoError(t, err)
	return bt
}

// requireJudgedOnce checks that every question of the batch holds one
// judgment per judge and repeat.
func (b *benchBundle) requireJudgedOnce(t *testing.T, id string, judges, repeats int) {
	t.Helper()
	qs, err := b.batches.Questions(b.ctx, id)
	require.NoError(t, err)
	for _, q := range qs {
		require.Equal(t, runs.QuestionJudged, q.State, "question %d", q.Index)
		require.Len(t, q.Judgments, judges*repeats, "question %d", q.Index)
		require.Len(t, q.Answers, 2)
	}
}

// A test run's questions, worked by a River client, judge every question
// once per judge and repeat; the last one scores the batch, which
// completes.
func TestBenchQuestionsCompleteABatch(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	id := b.launch(t, org, runs.KindTest, 6, 2, runs.JudgeNovaPro, runs.JudgeMistralLarge)
	b.runner(t, Config{Questions: b.exec, BenchWorkers: 3})

	require.Eventually(t, func() bool { return b.batch(t, id).Status == runs.StatusComplete }, 30*time.Second, 50*time.Millisecond)
	bt := b.batch(t, id)
	require.Equal(t, runs.Progress{Total: 6, Answered: 6, Judged: 6}, bt.Progress)
	require.NotNil(t, bt.StartedAt)
	require.NotNil(t, bt.FinishedAt)
	require.JSONEq(t, `{"w":0.75,"questions":6,"judgments":24}`, string(bt.Result))
	require.Nil(t, bt.Certification)
	b.requireJudgedOnce(t, id, 2, 2)
	for i := range 6 {
		require.Equal(t, 1, b.asked.count(b.asked.answers, fmt.Sprintf("%d/mode", i)))
		require.Equal(t, 1, b.asked.count(b.asked.answers, fmt.Sprintf("%d/baseline", i)))
	}
	require.Eventually(t, func() bool { return b.completed(t, BenchQuestionArgs{}.Kind()) == 6 }, 10*time.Second, 50*time.Millisecond)
}

// A question's job run twice at once, and once more after, records each
// answer and each judgment once and finishes the question once.
func TestAQuestionRunTwiceIsJudgedOnce(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	id := b.launch(t, org, runs.KindTest, 2, 3, runs.Judges...)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = b.exec.RunQuestion(b.ctx, id, 0) })
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	require.NoError(t, b.exec.RunQuestion(b.ctx, id, 0))

	q, err := b.batches.Question(b.ctx, id, 0)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionJudged, q.State)
	require.Len(t, q.Judgments, 9, "three judges × three repeats, each once")
	bt := b.batch(t, id)
	require.Equal(t, runs.Progress{Total: 2, Answered: 1, Judged: 1}, bt.Progress, "the question counted once")
	require.Equal(t, runs.StatusRunning, bt.Status)
	for _, j := range q.Judgments {
		require.Equal(t, runs.Order(bt.Seed, 2, 0, j.Judge, j.Repeat), j.Order, "the order the judge read is the one kept")
	}
	// The third run found the question done and asked nothing.
	require.LessOrEqual(t, b.asked.count(b.asked.answers, "0/mode"), 2)

	require.NoError(t, b.exec.RunQuestion(b.ctx, id, 1))
	bt = b.batch(t, id)
	require.Equal(t, runs.StatusComplete, bt.Status)
	n, _ := b.scorer.calls.Load(id)
	require.Equal(t, 1, *n.(*int), "scored once")
	require.NoError(t, b.exec.RunQuestion(b.ctx, id, 1), "a question of a complete batch is left alone")
}

// A replica dies in the middle of a question: its answers and one judgment
// are recorded, and River's row is left running. Another replica's River
// client rescues the job, asks only for what is missing, and the batch
// completes.
func TestAReplicaKilledMidRunLeavesTheBatchToAnother(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	id := b.launch(t, org, runs.KindTest, 3, 2, runs.JudgeNovaPro, runs.JudgeLlama4Maverick)

	// The first replica: answers question 0, gets one judgment, and its
	// process is gone before the next.
	died := errors.New("the replica's process was killed")
	var mu sync.Mutex
	judged := 0
	dying := &panel{asked: newAsked(), fail: func(*runs.JudgeRequest) error {
		mu.Lock()
		defer mu.Unlock()
		if judged == 1 {
			return died
		}
		judged++
		return nil
	}}
	first, err := runs.NewExecutor(runs.ExecutorDeps{Store: b.batches, Mode: b.mode, Baseline: b.base,
		Panel: dying, Scorer: b.scorer, Certifier: b.store})
	require.NoError(t, err)
	require.ErrorIs(t, first.RunQuestion(b.ctx, id, 0), died)
	q, err := b.batches.Question(b.ctx, id, 0)
	require.NoError(t, err)
	require.Len(t, q.Answers, 2)
	require.Len(t, q.Judgments, 1)
	kept := q.Judgments[0]
	// River's row, as the dead replica left it: running, attempted an hour
	// ago.
	_, err = b.pool.Exec(b.ctx, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '1 hour',
		attempted_by = '{dead-replica}' WHERE kind = 'bench_question' AND args->>'batch_id' = $1 AND (args->>'index')::int = 0`, id)
	require.NoError(t, err)
	answered := b.asked.count(b.asked.answers, "0/mode")

	// The second replica.
	b.runner(t, Config{Questions: b.exec, BenchWorkers: 2})
	require.Eventually(t, func() bool { return b.batch(t, id).Status == runs.StatusComplete }, 60*time.Second, 100*time.Millisecond)
	b.requireJudgedOnce(t, id, 2, 2)
	require.Equal(t, answered, b.asked.count(b.asked.answers, "0/mode"), "question 0 was not answered again")
	require.Zero(t, b.asked.count(b.asked.judgments, fmt.Sprintf("0/%s/%d", kept.Judge, kept.Repeat)),
		"the judgment kept was not asked for again")
	q, err = b.batches.Question(b.ctx, id, 0)
	require.NoError(t, err)
	for _, j := range q.Judgments {
		if j.Judge == kept.Judge && j.Repeat == kept.Repeat {
			require.Equal(t, kept.Ruling, j.Ruling)
		}
	}
}

// A question whose job fails on its last attempt is given up on; the batch
// still completes with the others. A batch none of whose questions could
// be run fails.
func TestAQuestionGivenUpOnStillFinishesItsBatch(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	id, none := newBatchID(), newBatchID()
	outage := errors.New("the provider is down")
	b.mode.fail = func(r *runs.AnswerRequest) error {
		if r.Batch.ID == none || r.Question.Index == 2 {
			return outage
		}
		return nil
	}
	b.launchID(t, id, org, runs.KindTest, 3, 1, runs.JudgeNovaPro)
	b.runner(t, Config{Questions: b.exec})
	require.Eventually(t, func() bool { return b.batch(t, id).Status.Final() }, 60*time.Second, 100*time.Millisecond)
	bt := b.batch(t, id)
	require.Equal(t, runs.StatusComplete, bt.Status)
	require.Equal(t, runs.Progress{Total: 3, Answered: 2, Judged: 2, Failed: 1}, bt.Progress)
	require.Equal(t, 2, b.asked.count(b.asked.answers, "2/mode"), "two attempts, as the queue was told")
	q, err := b.batches.Question(b.ctx, id, 2)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionFailed, q.State)
	require.Contains(t, q.Failure, "the provider is down")

	b.launchID(t, none, org, runs.KindTest, 1, 1, runs.JudgeNovaPro)
	require.Eventually(t, func() bool { return b.batch(t, none).Status.Final() }, 60*time.Second, 100*time.Millisecond)
	bt = b.batch(t, none)
	require.Equal(t, runs.StatusFailed, bt.Status)
	require.Contains(t, bt.Failure, "every question failed")
	require.Nil(t, bt.Result)
}

// A certification whose verdict is certified records the version it ran as
// the mode's certified version; one that is not leaves it.
func TestACertifiedVerdictRecordsTheVersion(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	m := b.listedMode(t, org)
	require.Equal(t, 1, m.CertifiedVersion)
	require.Equal(t, 2, m.LatestVersion)

	id := b.launch(t, org, runs.KindCertify, 2, 2, runs.Judges...)
	for i := range 2 {
		require.NoError(t, b.exec.RunQuestion(b.ctx, id, i))
	}
	bt := b.batch(t, id)
	require.Equal(t, runs.StatusComplete, bt.Status)
	require.Equal(t, 1, bt.Attempt)
	require.Equal(t, runs.CertCertified, bt.Certification.Verdict)
	require.True(t, bt.Certification.ModeCertified)
	m, err := b.store.AuthoredMode(b.ctx, org, m.ID)
	require.NoError(t, err)
	require.Equal(t, 2, m.CertifiedVersion, "version 2 is now the certified one")

	// A listing taken down before the verdict: the verdict stands, the
	// lifecycle's refusal is kept beside it.
	_, err = b.store.ReviewListing(b.ctx, m.ID, core.ModeAction{Kind: core.ActionDelist, ListingRevision: m.ListingRevision})
	require.NoError(t, err)
	again := b.launch(t, org, runs.KindCertify, 2, 1, runs.JudgeNovaPro)
	for i := range 2 {
		require.NoError(t, b.exec.RunQuestion(b.ctx, again, i))
	}
	bt = b.batch(t, again)
	require.Equal(t, 2, bt.Attempt)
	require.Equal(t, runs.CertCertified, bt.Certification.Verdict)
	require.False(t, bt.Certification.ModeCertified)
	require.NotEmpty(t, bt.Certification.RecordRefusal)
}

// A question whose job's last attempt died with its process is discarded by
// River's rescuer without Work returning; the sweep gives it up, so that
// its batch still finishes, and gives up nothing else.
func TestTheSweepGivesUpAQuestionWhoseJobDied(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	id := newBatchID()
	b.launchID(t, id, org, runs.KindTest, 3, 1, runs.JudgeNovaPro)
	// Question 0 runs; question 1's job died on its last attempt; question
	// 2's job is still waiting to run.
	require.NoError(t, b.exec.RunQuestion(b.ctx, id, 0))
	b.discardJob(t, id, 1)

	before := storetest.MoneyOf(t, b.store, org)
	n, err := SweepQuestions(b.ctx, b.pool, b.exec)
	require.NoError(t, err)
	require.Equal(t, 1, n, "only the question whose job died")
	q, err := b.batches.Question(b.ctx, id, 1)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionFailed, q.State)
	require.Contains(t, q.Failure, "died with its process")
	require.Positive(t, q.Price)
	storetest.RequireCharged(t, b.store, org, before, core.PostingTestRefund, -q.Price)
	require.Equal(t, q.Price, b.batch(t, id).Refunded, "the question given up is refunded its price")
	before = storetest.MoneyOf(t, b.store, org)
	q, err = b.batches.Question(b.ctx, id, 2)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionPending, q.State, "a question whose job is still to run is left to it")
	n, err = SweepQuestions(b.ctx, b.pool, b.exec)
	require.NoError(t, err)
	require.Zero(t, n, "a question given up is not given up again")
	require.Equal(t, before, storetest.MoneyOf(t, b.store, org), "nor refunded again")

	require.NoError(t, b.exec.RunQuestion(b.ctx, id, 2))
	bt := b.batch(t, id)
	require.Equal(t, runs.StatusComplete, bt.Status, "the batch finishes without the dead question")
	require.Equal(t, runs.Progress{Total: 3, Answered: 2, Judged: 2, Failed: 1}, bt.Progress)
}

// Cancelling a batch cancels its questions' jobs: a job still waiting is
// never worked, and the one in the middle of its question has its context
// cancelled, so that a cancelled run stops asking providers.
func TestCancellingABatchCancelsItsJobs(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	started, stopped := make(chan int, 3), make(chan error, 3)
	b.mode.hold = func(ctx context.Context, r *runs.AnswerRequest) error {
		started <- r.Question.Index
		<-ctx.Done()
		stopped <- ctx.Err()
		return ctx.Err()
	}
	// Neither side answers before the cancel: a question with an answer
	// would be kept, and run to its end.
	b.base.hold = func(ctx context.Context, _ *runs.AnswerRequest) error {
		<-ctx.Done()
		return ctx.Err()
	}
	id := b.launch(t, org, runs.KindTest, 3, 1, runs.JudgeNovaPro)
	b.runner(t, Config{Questions: b.exec, BenchWorkers: 1})
	var first int
	select {
	case first = <-started:
	case <-time.After(time.Minute):
		t.Fatal("no question started")
	}

	_, err := b.batches.CancelBatch(b.ctx, org, id)
	require.NoError(t, err)
	select {
	case err := <-stopped:
		require.ErrorIs(t, err, context.Canceled, "the running question's context is cancelled")
	case <-time.After(time.Minute):
		t.Fatal("the running question was not stopped")
	}
	jobStates := func() map[string]int {
		rows, err := b.pool.Query(b.ctx, `SELECT state::text, count(*)::int FROM river_job
			WHERE kind = 'bench_question' AND args->>'batch_id' = $1 GROUP BY state`, id)
		require.NoError(t, err)
		out := map[string]int{}
		for rows.Next() {
			var st string
			var n int
			require.NoError(t, rows.Scan(&st, &n))
			out[st] = n
		}
		require.NoError(t, rows.Err())
		return out
	}
	require.Eventually(t, func() bool { return jobStates()["cancelled"] == 3 }, time.Minute, 50*time.Millisecond,
		"every job cancelled: %v", jobStates())
	for i := range 3 {
		if i != first {
			require.Zero(t, b.asked.count(b.asked.answers, fmt.Sprintf("%d/mode", i)), "question %d never asked", i)
		}
	}
	bt := b.batch(t, id)
	require.Equal(t, runs.StatusCancelled, bt.Status)
	require.Equal(t, 3, bt.Progress.Cancelled)
}

// A cancel keeps the questions that have an answer, and their jobs: the one
// in the middle of its question (its baseline answered, its mode's answer
// still coming) is not cancelled and runs to its end, judged; the jobs of
// the questions nothing was answered to are cancelled and never worked.
func TestACancelLeavesAnAnsweredQuestionsJobToFinish(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	started, release := make(chan int, 1), make(chan struct{})
	var once sync.Once
	b.mode.fail = func(r *runs.AnswerRequest) error {
		once.Do(func() {
			started <- r.Question.Index
			<-release
		})
		return nil
	}
	id := b.launch(t, org, runs.KindTest, 3, 1, runs.JudgeNovaPro)
	b.runner(t, Config{Questions: b.exec, BenchWorkers: 1})
	var first int
	select {
	case first = <-started:
	case <-time.After(time.Minute):
		t.Fatal("no question started")
	}
	require.Eventually(t, func() bool {
		q, err := b.batches.Question(b.ctx, id, first)
		require.NoError(t, err)
		return q.Answers[runs.SideBaseline] != nil
	}, time.Minute, 20*time.Millisecond, "the baseline answers question %d", first)

	before := storetest.MoneyOf(t, b.store, org)
	bt, err := b.batches.CancelBatch(b.ctx, org, id)
	require.NoError(t, err)
	require.Equal(t, runs.StatusCancelled, bt.Status)
	require.Equal(t, 2, bt.Progress.Cancelled)
	storetest.RequireCharged(t, b.store, org, before, core.PostingTestRefund, -200)
	close(release)

	require.Eventually(t, func() bool { return b.batch(t, id).Progress.Judged == 1 }, time.Minute, 50*time.Millisecond,
		"question %d is judged after the cancel", first)
	q, err := b.batches.Question(b.ctx, id, first)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionJudged, q.State)
	require.Len(t, q.Judgments, 1)
	var states []string
	require.Eventually(t, func() bool {
		rows, err := b.pool.Query(b.ctx, `SELECT (args->>'index')::int, state::text FROM river_job
			WHERE kind = 'bench_question' AND args->>'batch_id' = $1 ORDER BY 1`, id)
		require.NoError(t, err)
		states = states[:0]
		for rows.Next() {
			var i int
			var st string
			require.NoError(t, rows.Scan(&i, &st))
			states = append(states, st)
		}
		require.NoError(t, rows.Err())
		return len(states) == 3 && states[first] == "completed"
	}, time.Minute, 50*time.Millisecond)
	for i, st := range states {
		if i != first {
			require.Equal(t, "cancelled", st, "question %d's job", i)
			require.Zero(t, b.asked.count(b.asked.answers, fmt.Sprintf("%d/mode", i)), "question %d never asked", i)
		}
	}
	bt = b.batch(t, id)
	require.Equal(t, runs.StatusCancelled, bt.Status, "a cancelled batch stays cancelled")
	require.Equal(t, runs.Progress{Total: 3, Answered: 1, Judged: 1, Cancelled: 2}, bt.Progress)
	require.Nil(t, bt.Result, "and is never scored")
	require.Equal(t, core.Micros(200), bt.Refunded)
}

// A question a cancel kept (it had an answer) whose job then died on its
// last attempt is given up by the sweep, as in a running batch, and
// refunded its price.
func TestTheSweepGivesUpAKeptQuestionOfACancelledBatch(t *testing.T) {
	t.Parallel()
	b := setupBench(t)
	org := b.org(t, "Acme", 0)
	id := b.launch(t, org, runs.KindTest, 2, 1, runs.JudgeNovaPro)
	require.NoError(t, b.batches.StartBatch(b.ctx, id))
	_, err := b.batches.RecordAnswer(b.ctx, id, 0, runs.SideBaseline, &runs.Answer{Text: "baseline"})
	require.NoError(t, err)
	_, err = b.batches.CancelBatch(b.ctx, org, id)
	require.NoError(t, err)
	b.discardJob(t, id, 0)

	before := storetest.MoneyOf(t, b.store, org)
	n, err := SweepQuestions(b.ctx, b.pool, b.exec)
	require.NoError(t, err)
	require.Equal(t, 1, n)
	q, err := b.batches.Question(b.ctx, id, 0)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionFailed, q.State)
	storetest.RequireCharged(t, b.store, org, before, core.PostingTestRefund, -q.Price)
	bt := b.batch(t, id)
	require.Equal(t, runs.StatusCancelled, bt.Status)
	require.Equal(t, runs.Progress{Total: 2, Failed: 1, Cancelled: 1}, bt.Progress)
	require.Equal(t, bt.Billed, bt.Refunded)
}

// discardJob marks the job of question index of batch id discarded, as
// River's rescuer leaves a job whose last attempt died with its process.
func (b *benchBundle) discardJob(t *testing.T, id string, index int) {
	t.Helper()
	tag, err := b.pool.Exec(b.ctx, `UPDATE river_job SET state = 'discarded', finalized_at = now()
		WHERE kind = 'bench_question' AND args->>'batch_id' = $1 AND (args->>'index')::int = $2`, id, index)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
}
