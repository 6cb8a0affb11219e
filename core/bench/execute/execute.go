// Package execute runs the questions of a benchmark batch for real: the
// mode's answer through the deliberation engine, the baseline's through one
// call of one engine, each judge's ruling through the batch's judging
// protocol (core.Protocol) on the judge's engine, and the finished batch's
// figures and verdict through core/bench. It implements the Answerer,
// Panel and Scorer of core/bench/runs; the run executor there keeps every
// answer and ruling once, whatever runs twice.
//
// Everything runs on the service's own keys, billed to nobody: the batch
// was charged up front. docs/tests.md describes a run; docs/judging.md the
// judges' prompts and replies.
package execute

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/bank"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/deliberate"
)

// Versions reads the released versions of organisations' modes;
// core.ModeStore is one.
type Versions interface {
	ModeVersion(ctx context.Context, modeID string, version int) (*core.ModeVersion, error)
}

// Deliberator plans and runs a deliberation; *deliberate.Engine is one.
type Deliberator interface {
	Plan(ctx context.Context, req *deliberate.Request) (*deliberate.Plan, error)
	Execute(ctx context.Context, p *deliberate.Plan) (*deliberate.Result, error)
}

// item is the bank's question a batch question names.
func item(q *runs.Question) (bank.Item, error) {
	it, err := bank.Lookup(q.QuestionID)
	if err != nil {
		return bank.Item{}, fmt.Errorf("question %s: %w", q.QuestionID, err)
	}
	return it, nil
}

// modeOf is the mode version the batch runs.
func modeOf(ctx context.Context, v Versions, b *runs.Batch) (*core.Mode, error) {
	mv, err := v.ModeVersion(ctx, b.ModeID, b.ModeVersion)
	if err != nil {
		return nil, fmt.Errorf("mode %s version %d: %w", b.ModeID, b.ModeVersion, err)
	}
	m := *mv.Mode
	m.Version = mv.Version
	return &m, nil
}

// ModeAnswerer answers with the batch's mode version, deliberated at the
// question's tier exactly as a call would be.
type ModeAnswerer struct {
	Versions Versions
	Engine   Deliberator
}

var _ runs.Answerer = (*ModeAnswerer)(nil)

// Answer implements runs.Answerer.
func (a *ModeAnswerer) Answer(ctx context.Context, r *runs.AnswerRequest) (*runs.Answer, error) {
	it, err := item(r.Question)
	if err != nil {
		return nil, err
	}
	m, err := modeOf(ctx, a.Versions, r.Batch)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	plan, err := a.Engine.Plan(ctx, &deliberate.Request{Mode: m, Tier: r.Question.Tier,
		Messages:  []core.Message{{Role: core.RoleUser, Content: it.Question}},
		RequestID: fmt.Sprintf("%s-%d-mode", r.Batch.ID, r.Question.Index)})
	if err != nil {
		return nil, err
	}
	res, err := a.Engine.Execute(ctx, plan)
	if err != nil {
		return nil, err
	}
	out := &runs.Answer{Text: res.Answer, Engine: m.ID, Cost: res.Cost, Latency: time.Since(start)}
	for _, c := range res.Calls {
		out.TokensIn += c.InputTokens
		out.TokensOut += c.OutputTokens
	}
	return out, nil
}

// BaselineAnswerer answers with the batch's pre-registered baseline: one
// call of the best single engine among the mode's seats at the question's
// tier (Baseline), at production settings.
type BaselineAnswerer struct {
	Versions Versions
	Catalog  *core.Catalog
	Caller   deliberate.Caller
}

var _ runs.Answerer = (*BaselineAnswerer)(nil)

// Baseline is the engine a mode is compared with at tier: of the engines
// seated in the mode's row for tier, the one of the highest tier, then the
// highest output price, then the lowest id — the most capable single seat
// the mode itself trusts, chosen by a rule fixed before any answer is seen.
func Baseline(m *core.Mode, tier core.Tier, engines map[string]*core.Engine) (*core.Engine, error) {
	var best *core.Engine
	for _, s := range m.Deliberation.Seats[tier] {
		e, ok := engines[s.Engine]
		if !ok {
			continue
		}
		if best == nil || better(e, best) {
			best = e
		}
	}
	if best == nil {
		return nil, fmt.Errorf("mode %s has no seat engine at tier %s", m.ID, tier)
	}
	return best, nil
}

// BaselineTier is the tier whose row the baseline is drawn from: the
// question's own, or with punch_up the next tier above it at which the mode
// seats engines (the question's own when there is none above).
func BaselineTier(m *core.Mode, tier core.Tier, punchUp bool) core.Tier {
	if !punchUp {
		return tier
	}
	for _, t := range core.Tiers {
		if t.Rank() > tier.Rank() && len(m.Deliberation.Seats[t]) > 0 {
			return t
		}
	}
	return tier
}

func better(a, b *core.Engine) bool {
	if a.MaxTier.Rank() != b.MaxTier.Rank() {
		return a.MaxTier.Rank() > b.MaxTier.Rank()
	}
	if a.OutputPerMTok != b.OutputPerMTok {
		return a.OutputPerMTok > b.OutputPerMTok
	}
	return a.ID < b.ID
}

// Answer implements runs.Answerer.
func (a *BaselineAnswerer) Answer(ctx context.Context, r *runs.AnswerRequest) (*runs.Answer, error) {
	it, err := item(r.Question)
	if err != nil {
		return nil, err
	}
	m, err := modeOf(ctx, a.Versions, r.Batch)
	if err != nil {
		return nil, err
	}
	e, err := Baseline(m, BaselineTier(m, r.Question.Tier, r.Batch.Plan.PunchUp), a.Catalog.Engines())
	if err != nil {
		return nil, err
	}
	start := time.Now()
	ans, err := a.Caller.Call(ctx, e.ID, "", &core.SeatRequest{Model: e.Model,
		Messages: []core.Message{{Role: core.RoleUser, Content: it.Question}}})
	if err != nil {
		return nil, err
	}
	if ans.Error != nil {
		return nil, fmt.Errorf("baseline %s: %s", e.ID, ans.Error.Message)
	}
	return &runs.Answer{Text: ans.Text, Engine: e.ID, TokensIn: ans.InputTokens, TokensOut: ans.OutputTokens,
		Cost: core.CallCost(ans.InputTokens, ans.OutputTokens, e), Latency: time.Since(start)}, nil
}

// Panel asks the batch's judges for their rulings under its protocol.
type Panel struct {
	Catalog *core.Catalog
	Caller  deliberate.Caller
	// Protocols are the judging protocols by name (pairwise, plurality).
	Protocols map[runs.Protocol]core.Protocol
	// Engines are the judges' engines by judge name (the configuration's
	// judges block).
	Engines map[runs.Judge]string
	// Health, when set, records whether each judge call was answered.
	Health *Health

	once sync.Once
	anon *Anonymiser // built from Catalog on first use
}

var _ runs.Panel = (*Panel)(nil)

// anonymiser is the panel's one Anonymiser.
func (p *Panel) anonymiser() *Anonymiser {
	p.once.Do(func() { p.anon = NewAnonymiser(p.Catalog) })
	return p.anon
}

// ruling is what a Ruling's Detail keeps of a judgment.
type ruling struct {
	Engine        string `json:"engine"`
	PromptVersion string `json:"prompt_version"`
	Attempts      int    `json:"attempts"`
	Reply         string `json:"reply"`
	// SelfReferences counts, by side (mode, baseline), the self-references
	// the Anonymiser stripped from that answer before the judge saw it.
	SelfReferences map[runs.Side]int `json:"self_references"`
}

// Judge implements runs.Panel. The answers are anonymised (self-references
// stripped, whitespace and markdown normalised; the protocol labels them by
// position only) and shown in r.Order; a verifiable item's
// reference answer is in the prompt. A reply the protocol cannot read is
// asked for once more; a second unreadable reply is a missing judgment.
func (p *Panel) Judge(ctx context.Context, r *runs.JudgeRequest) (*runs.Ruling, error) {
	proto, ok := p.Protocols[r.Batch.Plan.Protocol]
	if !ok {
		return nil, fmt.Errorf("no judging protocol %q", r.Batch.Plan.Protocol)
	}
	engineID, ok := p.Engines[r.Judge]
	if !ok {
		return nil, fmt.Errorf("no engine for judge %q", r.Judge)
	}
	e, ok := p.Catalog.Engine(engineID)
	if !ok {
		return nil, fmt.Errorf("judge %q: no engine %q", r.Judge, engineID)
	}
	it, err := item(r.Question)
	if err != nil {
		return nil, err
	}
	task := &core.JudgeTask{Question: it.Question, Seed: seed(r)}
	if it.Kind == bank.Verifiable {
		task.Reference = it.Answer
	}
	detail := ruling{Engine: e.ID, SelfReferences: map[runs.Side]int{}}
	for _, side := range r.Order {
		a, ok := r.Answers[side]
		if !ok {
			return nil, fmt.Errorf("question %d has no %s answer", r.Question.Index, side)
		}
		text, stripped := p.anonymiser().Anonymise(a.Text)
		detail.SelfReferences[side] = stripped
		task.Answers = append(task.Answers, core.JudgeAnswer{ID: string(side), Text: text})
	}
	plan, err := proto.Plan(ctx, task)
	if err != nil {
		return nil, err
	}
	if len(plan.Prompts) != 1 {
		return nil, fmt.Errorf("protocol %q planned %d prompts, not one", r.Batch.Plan.Protocol, len(plan.Prompts))
	}
	prompt := plan.Prompts[0]
	zero := 0.0
	out := &runs.Ruling{Verdict: runs.VerdictMissing}
	detail.PromptVersion = firstLine(prompt.System)
	start := time.Now()
	for attempt := 1; attempt <= 2; attempt++ {
		ans, err := p.Caller.Call(ctx, e.ID, "", &core.SeatRequest{Model: e.Model, System: prompt.System,
			Messages: []core.Message{{Role: core.RoleUser, Content: prompt.User}}, Temperature: &zero, JSONOutput: prompt.JSONOutput})
		if p.Health != nil && ctx.Err() == nil {
			p.Health.Record(e.ID, err == nil && ans != nil && ans.Error == nil)
		}
		if err != nil {
			return nil, err
		}
		detail.Attempts = attempt
		if ans.Error != nil {
			return nil, fmt.Errorf("judge %s: %s", e.ID, ans.Error.Message)
		}
		out.Cost += core.CallCost(ans.InputTokens, ans.OutputTokens, e)
		detail.Reply = ans.Text
		scores, err := proto.Score(ctx, &core.JudgeVerdicts{Task: *task,
			Verdicts: []core.JudgeVerdict{{PromptID: prompt.ID, Judge: string(r.Judge), Text: ans.Text}}})
		if err != nil {
			return nil, err
		}
		if scores.Unreadable == 0 {
			out.Verdict = verdictOf(scores)
			break
		}
	}
	out.Latency = time.Since(start)
	if out.Detail, err = json.Marshal(detail); err != nil {
		return nil, err
	}
	return out, nil
}

// verdictOf reads a protocol's scores of the mode's and the baseline's
// answers: the higher wins; equal scores are a tie.
func verdictOf(s *core.JudgeScores) runs.Verdict {
	m, b := s.Scores[string(runs.SideMode)], s.Scores[string(runs.SideBaseline)]
	switch {
	case m > b:
		return runs.VerdictMode
	case b > m:
		return runs.VerdictBaseline
	}
	return runs.VerdictTie
}

// seed is the judge task's seed: the same for every attempt at one
// judgment, different across judgments.
func seed(r *runs.JudgeRequest) int64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%d/%s/%d", r.Batch.ID, r.Question.Index, r.Judge, r.Repeat)
	return int64(h.Sum64() >> 1)
}

// normalise is the Anonymiser's last step: line endings and
// trailing spaces evened out, runs of blank lines cut to one, so that
// layout alone does not tell the answers apart.
func normalise(s string) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	out := make([]string, 0, len(lines))
	blank := false
	for _, l := range lines {
		l = strings.TrimRight(l, " \t")
		if l == "" {
			if blank {
				continue
			}
			blank = true
		} else {
			blank = false
		}
		out = append(out, l)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// Scorer scores a finished batch with core/bench.
type Scorer struct {
	Catalog *core.Catalog
	// Engines are the judges' engines by judge name, whose families the
	// leave-one-judge-out and self-preference figures group by.
	Engines map[runs.Judge]string
	// Config is the certification's thresholds; zero means the defaults.
	Config bench.Config
}

var _ runs.Scorer = (*Scorer)(nil)

// Score implements runs.Scorer.
func (s *Scorer) Score(_ context.Context, b *runs.Batch, questions []*runs.Question) (*runs.Scored, error) {
	run, err := s.Run(b, questions)
	if err != nil {
		return nil, err
	}
	rep, err := bench.Score(run, s.Config)
	if err != nil {
		return nil, err
	}
	out := &runs.Scored{}
	if out.Result, err = json.Marshal(rep); err != nil {
		return nil, err
	}
	if b.Kind == runs.KindCertify {
		out.Certification = certification(rep)
	}
	return out, nil
}

// Run is the batch as core/bench reads it: every question drawn, every
// judgment stored. Failed questions count as drawn, with no judgments.
func (s *Scorer) Run(b *runs.Batch, questions []*runs.Question) (*bench.Run, error) {
	kind := bench.KindTest
	if b.Kind == runs.KindCertify {
		kind = bench.KindCertify
	}
	run := &bench.Run{Kind: kind, Protocol: bench.Protocol(b.Plan.Protocol), Attempt: b.Attempt,
		Repeats: b.Plan.Repeats, Questions: []bench.Question{}, Judgments: []bench.Judgment{},
		Provenance: bench.Provenance{QuestionSeed: fmt.Sprint(b.Seed), BankVersion: b.BankVersion}}
	if run.Protocol == bench.Plurality {
		run.Answers = 2
	}
	for _, j := range b.Plan.Judges {
		id, ok := s.Engines[j]
		if !ok {
			return nil, fmt.Errorf("no engine for judge %q", j)
		}
		e, ok := s.Catalog.Engine(id)
		if !ok {
			return nil, fmt.Errorf("judge %q: no engine %q", j, id)
		}
		run.Judges = append(run.Judges, bench.Judge{ID: string(j), Family: e.Family})
	}
	for i, q := range questions {
		it, err := item(q)
		if err != nil {
			return nil, err
		}
		bq := bench.Question{Bucket: bench.Bucket(q.Bucket), Template: it.Template()}
		mode, base := q.Answers[runs.SideMode], q.Answers[runs.SideBaseline]
		if mode != nil && base != nil {
			bq.ModeLength, bq.BaselineLength = len(mode.Text), len(base.Text)
			if it.Kind == bank.Verifiable {
				bq.Verifiable, bq.ModeCorrect, bq.BaselineCorrect = true, it.Check(mode.Text), it.Check(base.Text)
			}
			if run.Provenance.BaselineID == "" {
				run.Provenance.BaselineID = base.Engine
			}
		}
		run.Questions = append(run.Questions, bq)
		for _, j := range q.Judgments {
			if run.Provenance.JudgePromptVersion == "" {
				var d ruling
				if json.Unmarshal(j.Detail, &d) == nil {
					run.Provenance.JudgePromptVersion = d.PromptVersion
				}
			}
			bj, err := judgmentOf(i, j, run.Protocol)
			if err != nil {
				return nil, err
			}
			run.Judgments = append(run.Judgments, bj)
		}
	}
	return run, nil
}

// judgmentOf is one stored judgment as core/bench reads it.
func judgmentOf(question int, j *runs.Judgment, p bench.Protocol) (bench.Judgment, error) {
	out := bench.Judgment{Question: question, Judge: string(j.Judge), Repeat: j.Repeat}
	for pos, side := range j.Order {
		switch side {
		case runs.SideMode:
			out.ModePosition = pos + 1
		case runs.SideBaseline:
			out.BaselinePosition = pos + 1
		}
	}
	if out.ModePosition == 0 {
		return out, errors.New("a judgment whose order has no mode answer")
	}
	if p == bench.Plurality {
		switch j.Verdict {
		case runs.VerdictMode:
			out.Vote = out.ModePosition
		case runs.VerdictBaseline:
			out.Vote = out.BaselinePosition
		case runs.VerdictMissing:
			out.Outcome = bench.Missing
		}
		return out, nil
	}
	out.BaselinePosition = 0
	switch j.Verdict {
	case runs.VerdictMode:
		out.Outcome = bench.ModeWin
	case runs.VerdictBaseline:
		out.Outcome = bench.BaselineWin
	case runs.VerdictTie:
		out.Outcome = bench.Tie
	default:
		out.Outcome = bench.Missing
	}
	return out, nil
}

// certification is a report's verdict as a certify batch keeps it.
func certification(rep *bench.Report) *runs.Certification {
	c := &runs.Certification{Verdict: runs.CertVerdict(rep.Verdict), W: float64(rep.W), L: float64(rep.Lower), U: float64(rep.Upper)}
	for _, g := range rep.Gates {
		var parts []string
		for _, ch := range g.Checks {
			if !ch.Passed {
				parts = append(parts, fmt.Sprintf("%s %s %v %s %v", ch.Figure, ch.Subject, ch.Value, ch.Op, ch.Threshold))
			}
		}
		c.Gates = append(c.Gates, runs.Gate{Name: g.ID + " " + g.Name, Passed: g.Passed, Detail: strings.Join(parts, "; ")})
	}
	return c
}

// Bank is the embedded question bank (core/bench/bank) as the launch
// service draws from it: its current version, and the seeded stratified
// draw.
type Bank struct{}

var _ runs.Bank = Bank{}

// Version implements runs.Bank.
func (Bank) Version() string { return bank.Version }

// Draw implements runs.Bank.
func (Bank) Draw(seed int64, counts map[runs.Bucket]int) ([]runs.DrawnQuestion, error) {
	items, err := bank.Draw(bank.Version, uint64(seed), bank.Counts{Light: counts[runs.BucketLight],
		Medium: counts[runs.BucketMedium], Hard: counts[runs.BucketHard]})
	if err != nil {
		return nil, err
	}
	out := make([]runs.DrawnQuestion, len(items))
	for i, it := range items {
		out[i] = runs.DrawnQuestion{ID: it.ID, Bucket: runs.Bucket(it.Bucket)}
	}
	return out, nil
}
