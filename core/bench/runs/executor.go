package runs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"slices"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/telemetry"
)

// Answerer answers one question of a batch for one side: the mode's
// answerer runs the batch's mode version at the question's tier, the
// baseline's the single-engine baseline. An implementation runs on the
// service's own keys and takes none of the organisation's concurrency
// slots (runs are not interactive calls), and bills nothing: the launch
// was charged up front. An error is retried (the question's job runs
// again), up to the job's last attempt, after which the question fails.
type Answerer interface {
	Answer(ctx context.Context, r *AnswerRequest) (*Answer, error)
}

// AnswerRequest is one side's question.
type AnswerRequest struct {
	// Batch names the mode version (ModeID, ModeVersion, ModeConfigHash)
	// and the plan (PunchUp).
	Batch *Batch
	// Question names the bank's question (QuestionID), its Bucket and the
	// Tier to answer at.
	Question *Question
	Side     Side
}

// Panel asks one judge for its ruling on one question in one repeat,
// under the batch's judging protocol. A reply the judge got wrong even
// after the panel's own retry is a ruling of VerdictMissing, kept as a
// missing judgment; an error is retried as an Answerer's is.
type Panel interface {
	Judge(ctx context.Context, r *JudgeRequest) (*Ruling, error)
}

// JudgeRequest is one judgment to make.
type JudgeRequest struct {
	Batch    *Batch // Plan.Protocol is the judging protocol
	Question *Question
	Judge    Judge
	Repeat   int
	// Order is the order the judge reads the answers in: Answer 1 is
	// Order[0]'s (see Order).
	Order []Side
	// Answers are the recorded answers, by side.
	Answers map[Side]*Answer
}

// Scorer scores a batch whose every question is done: the figures of the
// run (win rate, its interval, per bucket and per judge, …) as JSON, and
// for a certification the verdict. Questions that failed are passed with
// State QuestionFailed and no judgments to count. An error is retried; on
// the last attempt of the job that finishes the batch, it fails the batch.
type Scorer interface {
	Score(ctx context.Context, b *Batch, questions []*Question) (*Scored, error)
}

// Scored is a Scorer's answer.
type Scored struct {
	// Result is the run's figures: a JSON object.
	Result json.RawMessage
	// Certification is the verdict; required for a certification, nil for
	// a test run.
	Certification *Certification
}

// Certifier records a passed certification in the mode's lifecycle;
// core.ModeStore is one.
type Certifier interface {
	RecordCertified(ctx context.Context, modeID string, version int) (*core.AuthoredMode, error)
}

// ExecutorDeps are the parts an Executor calls. Every one is required.
type ExecutorDeps struct {
	Store     RunStore
	Mode      Answerer
	Baseline  Answerer
	Panel     Panel
	Scorer    Scorer
	Certifier Certifier
	// Logger defaults to a logger that discards.
	Logger *slog.Logger
	// Telemetry traces each question job, its answers and its judgments
	// (docs/observability.md). Defaults to none.
	Telemetry telemetry.Telemetry
}

// Executor runs batches' questions: a durable job per question calls
// RunQuestion, and AbandonQuestion once its last attempt failed. It keeps
// no state of its own: everything is in the RunStore, so a question's job
// may run twice, or be picked up by another replica after this one died,
// and each answer and judgment is still recorded once. It is safe for
// concurrent use.
type Executor struct {
	d ExecutorDeps
}

// NewExecutor returns an Executor, or an error naming what is missing.
func NewExecutor(d ExecutorDeps) (*Executor, error) {
	if d.Store == nil || d.Mode == nil || d.Baseline == nil || d.Panel == nil || d.Scorer == nil || d.Certifier == nil {
		return nil, errors.New("runs: Store, Mode, Baseline, Panel, Scorer and Certifier are required")
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	return &Executor{d: d}, nil
}

// RunQuestion runs question index of the batch to its end: whatever of its
// two answers and its judgments (each judge × each repeat) is not recorded
// yet is asked for and recorded; then the question is done. The job that
// finishes the batch's last question scores the batch and completes it. A
// batch already complete or failed is left alone. A cancelled batch keeps
// the questions that had an answer when it was cancelled (they are
// charged): those are still run to their end, judged, though the batch is
// never scored. A question cancelled while its job runs records nothing
// more (the store records answers and judgments of pending questions
// only), and its job stops once it sees so, without an error.
func (e *Executor) RunQuestion(ctx context.Context, batchID string, index int) error {
	b, err := e.d.Store.RunBatch(ctx, batchID)
	if err != nil {
		return fmt.Errorf("reading batch %s: %w", batchID, err)
	}
	if b.Status.Final() && b.Status != StatusCancelled {
		return nil
	}
	if b.Status == StatusQueued {
		if err := e.d.Store.StartBatch(ctx, batchID); err != nil {
			return fmt.Errorf("starting batch %s: %w", batchID, err)
		}
	}
	ctx, span := e.d.Telemetry.Start(e.d.Telemetry.BatchContext(ctx, batchID), "run_question "+string(b.Kind), trace.SpanKindConsumer,
		telemetry.BatchID.String(batchID), telemetry.Question.Int(index), semconv.GenAIWorkflowName(b.ModeID))
	defer span.End()
	q, err := e.d.Store.Question(ctx, batchID, index)
	if err != nil {
		return fmt.Errorf("reading question %d of batch %s: %w", index, batchID, err)
	}
	if q.State == QuestionPending {
		if q, err = e.answer(ctx, b, q); err != nil {
			return err
		}
		if q.State == QuestionCancelled {
			return nil
		}
		if err := e.judge(ctx, b, q); err != nil {
			return err
		}
		if _, err := e.d.Store.FinishQuestion(ctx, batchID, index, ""); err != nil {
			return fmt.Errorf("finishing question %d of batch %s: %w", index, batchID, err)
		}
	}
	return e.finishIfDone(ctx, batchID, false)
}

// AbandonQuestion gives up on a question whose job's last attempt failed
// with cause: the question fails (unless it is done already, or cancelled)
// and is refunded its price, and when it was the batch's last, the batch is
// finished — complete with the questions that were judged, or failed (and
// refunded in full) when none was, or when it cannot be scored. A question
// a cancelled batch kept is given up on alike; the batch stays cancelled.
func (e *Executor) AbandonQuestion(ctx context.Context, batchID string, index int, cause error) error {
	b, err := e.d.Store.RunBatch(ctx, batchID)
	if err != nil {
		return fmt.Errorf("reading batch %s: %w", batchID, err)
	}
	if b.Status.Final() && b.Status != StatusCancelled {
		return nil
	}
	why := "the question could not be run"
	if cause != nil {
		why += ": " + cause.Error()
	}
	if _, err := e.d.Store.FinishQuestion(ctx, batchID, index, why); err != nil {
		return fmt.Errorf("failing question %d of batch %s: %w", index, batchID, err)
	}
	return e.finishIfDone(ctx, batchID, true)
}

// answer records whichever of the question's two answers is missing,
// asking both sides at once, and returns the question as stored: when two
// runs answered, the first answer recorded is the one judged.
func (e *Executor) answer(ctx context.Context, b *Batch, q *Question) (*Question, error) {
	sides := []struct {
		side Side
		a    Answerer
	}{{SideMode, e.d.Mode}, {SideBaseline, e.d.Baseline}}
	var wg sync.WaitGroup
	errs := make([]error, len(sides))
	for i, s := range sides {
		if q.Answers[s.side] != nil {
			continue
		}
		wg.Go(func() {
			what := fmt.Sprintf("answering question %d of batch %s (%s)", q.Index, b.ID, s.side)
			errs[i] = e.guard(ctx, b, q, what, func() error {
				ctx, span := e.d.Telemetry.Start(ctx, "answer "+string(s.side), trace.SpanKindInternal, telemetry.Question.Int(q.Index))
				a, err := s.a.Answer(ctx, &AnswerRequest{Batch: b, Question: q, Side: s.side})
				endAnswerSpan(span, a, err)
				switch {
				case err != nil:
					return fmt.Errorf("%s: %w", what, err)
				case a == nil:
					return fmt.Errorf("%s: no answer", what)
				}
				if _, err := e.d.Store.RecordAnswer(ctx, b.ID, q.Index, s.side, a); err != nil {
					return fmt.Errorf("recording the %s answer to question %d of batch %s: %w", s.side, q.Index, b.ID, err)
				}
				return nil
			})
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return e.d.Store.Question(ctx, b.ID, q.Index)
}

// judge records every judgment the question lacks, asking for them at
// once.
func (e *Executor) judge(ctx context.Context, b *Batch, q *Question) error {
	type made struct {
		judge  Judge
		repeat int
	}
	have := map[made]bool{}
	for _, j := range q.Judgments {
		have[made{j.Judge, j.Repeat}] = true
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	for _, judge := range b.Plan.Judges {
		for repeat := 1; repeat <= b.Plan.Repeats; repeat++ {
			if have[made{judge, repeat}] {
				continue
			}
			wg.Go(func() {
				what := fmt.Sprintf("judging question %d of batch %s (%s, repeat %d)", q.Index, b.ID, judge, repeat)
				err := e.guard(ctx, b, q, what, func() error { return e.judgeOnce(ctx, b, q, judge, repeat) })
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// guard runs f, one step of a question that runs on a goroutine of its
// own, and turns a panic in it into that step's error: a bug in an
// answerer, a judge or the anonymiser then fails the attempt, which River
// retries (and gives up on after its last), instead of ending the process
// and every job it was running. The panic is logged here, once, with the
// batch, the question and the stack, which the error does not carry;
// River keeps the error with the attempt.
func (e *Executor) guard(ctx context.Context, b *Batch, q *Question, what string, f func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			e.d.Logger.ErrorContext(ctx, "a benchmark question's step panicked", slog.String("batch_id", b.ID),
				slog.Int("question", q.Index), slog.String("step", what), slog.String("panic", fmt.Sprint(v)),
				slog.String("stack", string(debug.Stack())))
			err = fmt.Errorf("%s: panicked: %v", what, v)
		}
	}()
	return f()
}

func (e *Executor) judgeOnce(ctx context.Context, b *Batch, q *Question, judge Judge, repeat int) error {
	order := Order(b.Seed, b.Progress.Total, q.Index, judge, repeat)
	ctx, span := e.d.Telemetry.Start(ctx, "judge "+string(judge), trace.SpanKindInternal,
		telemetry.Question.Int(q.Index), telemetry.Judge.String(string(judge)), attribute.Int("conclave.repeat", repeat))
	r, err := e.d.Panel.Judge(ctx, &JudgeRequest{Batch: b, Question: q, Judge: judge, Repeat: repeat, Order: order, Answers: q.Answers})
	endJudgeSpan(span, r, err)
	switch {
	case err != nil:
		return fmt.Errorf("judging question %d of batch %s (%s, repeat %d): %w", q.Index, b.ID, judge, repeat, err)
	case r == nil || !r.Verdict.Valid():
		return fmt.Errorf("judging question %d of batch %s (%s, repeat %d): the panel gave no verdict", q.Index, b.ID, judge, repeat)
	}
	j := &Judgment{BatchID: b.ID, Index: q.Index, Judge: judge, Repeat: repeat, Order: order, Ruling: *r}
	if err := e.d.Store.RecordJudgment(ctx, j); err != nil {
		return fmt.Errorf("recording a judgment of question %d of batch %s: %w", q.Index, b.ID, err)
	}
	return nil
}

// finishIfDone finishes the batch once every question is done: scored and
// complete, or failed when no question was judged. A cancelled batch is
// final, and left alone. final is set on a
// question's last attempt: a scorer's error then fails the batch rather
// than being retried.
func (e *Executor) finishIfDone(ctx context.Context, batchID string, final bool) error {
	b, err := e.d.Store.RunBatch(ctx, batchID)
	if err != nil {
		return fmt.Errorf("reading batch %s: %w", batchID, err)
	}
	if b.Status.Final() || !b.Progress.Done() {
		return nil
	}
	if b.Progress.Judged == 0 {
		return e.finish(ctx, b, &Outcome{Status: StatusFailed, Failure: "every question failed: none could be answered and judged"})
	}
	qs, err := e.d.Store.Questions(ctx, batchID)
	if err != nil {
		return fmt.Errorf("reading the questions of batch %s: %w", batchID, err)
	}
	scored, err := e.d.Scorer.Score(ctx, b, qs)
	if err == nil && b.Kind == KindCertify && scored.Certification == nil {
		err = errors.New("the scorer gave a certification no verdict")
	}
	if err != nil {
		if final {
			e.d.Logger.ErrorContext(ctx, "a batch could not be scored", slog.String("batch_id", batchID), slog.String("error", err.Error()))
			return e.finish(ctx, b, &Outcome{Status: StatusFailed, Failure: "the batch could not be scored"})
		}
		return fmt.Errorf("scoring batch %s: %w", batchID, err)
	}
	o := &Outcome{Status: StatusComplete, Result: scored.Result}
	if b.Kind == KindCertify {
		c := *scored.Certification
		c.ModeCertified, c.RecordRefusal = false, ""
		if c.Verdict == CertCertified {
			if err := e.record(ctx, b, &c); err != nil {
				return err
			}
		}
		o.Certification = &c
	}
	return e.finish(ctx, b, o)
}

// record records a certified verdict as the mode's certified version. A
// refusal of the mode's lifecycle (its listing taken down meanwhile, say)
// is kept in the certification; a failure to reach the store is retried.
func (e *Executor) record(ctx context.Context, b *Batch, c *Certification) error {
	_, err := e.d.Certifier.RecordCertified(ctx, b.ModeID, b.ModeVersion)
	var refusal *core.Error
	switch {
	case err == nil:
		c.ModeCertified = true
	case errors.As(err, &refusal):
		c.RecordRefusal = refusal.Message
	default:
		return fmt.Errorf("recording version %d of %s as certified: %w", b.ModeVersion, b.ModeID, err)
	}
	return nil
}

func (e *Executor) finish(ctx context.Context, b *Batch, o *Outcome) error {
	if _, err := e.d.Store.FinishBatch(ctx, b.ID, o); err != nil {
		return fmt.Errorf("finishing batch %s: %w", b.ID, err)
	}
	return nil
}

// Order is the order judge reads question index's two answers in, in
// repeat (from 1), for a batch of total questions drawn with seed. It
// depends on nothing else, so a question judged again reads them alike.
//
// In repeat 1 half of each judge's questions show the mode's answer first,
// chosen at random: questions are ranked by a permutation drawn from the
// seed, and judge j (its place in Judges) sees the mode first on the
// questions whose rank has j's parity, so the three judges alternate too.
// Repeat 2 swaps repeat 1's order, which cancels a judge's position bias
// exactly; repeat 3 takes a fresh random order.
func Order(seed int64, total, index int, judge Judge, repeat int) []Side {
	j := slices.Index(Judges, judge)
	var modeFirst bool
	switch repeat {
	case 1, 2:
		rank := index
		if total > index {
			rank = rand.New(rand.NewPCG(uint64(seed), 0)).Perm(total)[index]
		}
		modeFirst = (rank+j)%2 == 0
		if repeat == 2 {
			modeFirst = !modeFirst
		}
	default:
		r := rand.New(rand.NewPCG(uint64(seed), uint64(index)<<16|uint64(j+1)<<8|uint64(repeat)))
		modeFirst = r.IntN(2) == 0
	}
	if modeFirst {
		return []Side{SideMode, SideBaseline}
	}
	return []Side{SideBaseline, SideMode}
}

// endAnswerSpan ends an answer's span with what answered and what it cost.
func endAnswerSpan(span trace.Span, a *Answer, err error) {
	if span.IsRecording() {
		if a != nil {
			span.SetAttributes(attribute.String("conclave.engine", a.Engine), telemetry.CostRealUSD.Float64(a.Cost.Float()),
				semconv.GenAIUsageInputTokens(a.TokensIn), semconv.GenAIUsageOutputTokens(a.TokensOut))
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// endJudgeSpan ends a judgment's span with its verdict and cost.
func endJudgeSpan(span trace.Span, r *Ruling, err error) {
	if span.IsRecording() {
		if r != nil {
			span.SetAttributes(attribute.String("conclave.verdict", string(r.Verdict)), telemetry.CostRealUSD.Float64(r.Cost.Float()))
		}
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}
