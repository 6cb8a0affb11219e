package deliberate

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
)

// Caller makes one engine call. *providers.Providers satisfies it. A
// provider-side failure is a SeatAnswer whose Error is set; a Go error means
// the call could not be made (or ctx ended).
//
// orgID is the organisation whose own credentials a seat call may use; it
// is "" on staff calls, which run on the service's credentials. The
// answer's Source says which credential served the call ("" counts as
// core.SourceService).
type Caller interface {
	Call(ctx context.Context, engineID, orgID string, req *core.SeatRequest) (*core.SeatAnswer, error)
}

// Classifier classifies a question. classify.Heuristic satisfies it.
type Classifier interface {
	Classify(ctx context.Context, messages []core.Message) (*classify.Result, error)
}

// Errors Run returns besides ctx.Err().
var (
	// ErrModeUnavailable means no seat of the mode's row could run: every
	// primary and every backup failed.
	ErrModeUnavailable = errors.New("deliberate: no seat of the mode could run")
	// ErrUpstream means the deliberation failed for another reason.
	ErrUpstream = errors.New("deliberate: the deliberation failed upstream")
)

// Config configures an Engine.
type Config struct {
	// Catalog holds the engines the modes name; their prices cost each call.
	// Required.
	Catalog *core.Catalog
	// Caller makes the engine calls. Required.
	Caller Caller
	// Judge is the judging protocol. Required.
	Judge core.Protocol
	// Fallback is the deterministic classifier used when the mode's
	// classifier engine fails or is not configured. Defaults to
	// classify.Heuristic{}.
	Fallback Classifier
	// HedgeAfter is the shortest time a primary runs before its backup is
	// started beside it (a hedge); an engine whose recent answers are slower
	// is given until its recent percentile (the mode's hedge_percentile)
	// instead. Zero derives it per mode: half the straggler deadline when
	// the mode has a quorum and a straggler deadline, otherwise off;
	// negative turns hedging off. Defaults to 0 (derived).
	HedgeAfter time.Duration
	// SeatMaxTokens caps every answer (seats, judge, synthesis). Defaults to
	// 2048.
	SeatMaxTokens int
	// CountTokens counts a conversation's tokens, for the projected costs
	// that plan a deliberation and stop its critique rounds (the bill uses
	// the tokens providers report). It must be safe for concurrent use.
	// Defaults to a token per four bytes of content plus four per message:
	// a projection needs no more, and a real tokenizer (internal/tokens)
	// would tokenize every prompt of every call again.
	CountTokens func([]core.Message) int
	// Seed returns the seed of each deliberation's shuffles. Defaults to a
	// crypto-random seed.
	Seed func() int64
	// Now reads the clock for call and round timestamps. Defaults to
	// time.Now.
	Now func() time.Time
}

// WithDefaults returns the config with every unset field defaulted.
func (c Config) WithDefaults() Config {
	if c.Fallback == nil {
		c.Fallback = classify.Heuristic{}
	}
	if c.SeatMaxTokens == 0 {
		c.SeatMaxTokens = 2048
	}
	if c.CountTokens == nil {
		c.CountTokens = approxTokens
	}
	if c.Seed == nil {
		c.Seed = cryptoSeed
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

func (c *Config) validate() error {
	switch {
	case c.Catalog == nil:
		return errors.New("deliberate: Catalog is required")
	case c.Caller == nil:
		return errors.New("deliberate: Caller is required")
	case c.Judge == nil:
		return errors.New("deliberate: Judge is required")
	case c.SeatMaxTokens < 0:
		return errors.New("deliberate: SeatMaxTokens cannot be negative")
	}
	return nil
}

func cryptoSeed() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails
	return int64(binary.LittleEndian.Uint64(b[:]))
}

// Engine runs deliberations. It is safe for concurrent use.
type Engine struct {
	cfg Config
	// lat holds each engine's recent answer latencies (*latencies by
	// engine id), which set how long its primaries run before a hedge.
	lat sync.Map
	// outs holds each engine's recent output tokens per kind of call
	// (*outputs by outputKey), which project the cost of its next answers.
	outs sync.Map
}

// New returns an Engine, or an error naming the missing field.
func New(cfg Config) (*Engine, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	return &Engine{cfg: cfg}, nil
}

// Request is one deliberation to run.
type Request struct {
	// Mode is the mode called. Required.
	Mode *core.Mode
	// Tier selects the mode's row of seats.
	Tier core.Tier
	// Messages is the caller's conversation; its last user message is the
	// question.
	Messages []core.Message
	// OrgID is the paying organisation, whose own provider credentials
	// seat calls may use; "" for none.
	OrgID     string
	RequestID string
	// Budget is the most real cost (core.CallCost summed over every call,
	// the classifier's included) the deliberation may spend: no critique
	// round starts whose projection, with the synthesis after it, would
	// take the spending past the lower of Budget and the mode's
	// CostCeiling; the result then finishes FinishCostCap. 0 means the call
	// sets no budget. The call service derives it from the call's ceiling
	// with core.CostBudget. The first round always runs: a caller refuses a
	// budget below Plan.MinCost before executing.
	Budget core.Micros
	// Observe, when set, is told each step the deliberation reaches (see
	// Stage), on the goroutine that reached it: it must return at once,
	// never block, and be safe for concurrent use. It changes nothing the
	// deliberation does or costs. Defaults to nil: nobody is told.
	Observe func(Progress)
}

// run is the state of one deliberation.
type run struct {
	e     *Engine
	req   *Request
	hedge time.Duration // the hedge delay's floor; 0 for no hedging
	pct   float64       // the percentile of an engine's latencies that hedges it
	// promptTokens and questionTokens are the plan's (see Plan).
	promptTokens, questionTokens int
	mu                           sync.Mutex
	calls                        []Call
}

// newRun starts the state of a deliberation of req, hedged per its mode.
func (e *Engine) newRun(req *Request) *run {
	r := &run{e: e, req: req}
	r.hedgeFor(req.Mode)
	return r
}

// call makes one engine call and records it. It returns the answer, or the
// failure's class as the reason (OutcomeCancelled when ctx ended).
//
// Only seat calls (a seat's primary, backup or hedge) name the organisation
// to the Caller, so that they may run on its own provider credentials
// (bring-your-own-key); staff calls — judge, synthesis, classifier — name
// none and always run on the service's.
//
// It fills in c, which the caller made for this call alone, and records a
// copy: taking c by value would put a second copy in the caller's frame,
// which stays on the stack while the call waits.
func (r *run) call(ctx context.Context, c *Call, sreq *core.SeatRequest) (*core.SeatAnswer, Outcome) {
	now := r.e.cfg.Now
	org := ""
	if c.Seat != "" {
		org = r.req.OrgID
	}
	c.Started = now()
	ans, err := r.e.cfg.Caller.Call(ctx, c.Engine, org, sreq)
	c.Ended = now()
	c.Source = core.SourceService
	if ans != nil && ans.Source != "" {
		c.Source = ans.Source
	}
	switch {
	case err != nil && ctx.Err() != nil:
		c.Outcome = OutcomeCancelled
	case err != nil:
		c.Outcome = Outcome(core.ErrorAdapterFailed)
		var pe *core.ProviderError
		if errors.As(err, &pe) {
			c.Outcome = Outcome(pe.Class)
		}
	case ans == nil:
		c.Outcome = Outcome(core.ErrorMalformed)
	case ans.Error != nil:
		c.Outcome = Outcome(ans.Error.Class)
		if ctx.Err() != nil {
			c.Outcome = OutcomeCancelled
		}
	default:
		c.Outcome = OutcomeOK
		c.Finish = ans.Finish
		c.Content = ans.Text
	}
	if ans != nil {
		c.InputTokens, c.OutputTokens, c.ReasoningTokens = ans.InputTokens, ans.OutputTokens, ans.ReasoningTokens
	}
	if c.Outcome == OutcomeOK && c.Ended.After(c.Started) {
		r.e.latencyOf(c.Engine).add(c.Ended.Sub(c.Started))
	}
	if c.Outcome == OutcomeOK {
		kind := c.Role
		if c.Seat != "" {
			kind = kindSeat
		}
		r.e.outputsOf(c.Engine, kind).add(c.OutputTokens)
	}
	c.Cost = core.CallCost(c.InputTokens, c.OutputTokens, r.e.engine(c.Engine))
	r.mu.Lock()
	r.record(c)
	r.mu.Unlock()
	if c.Outcome != OutcomeOK {
		return nil, c.Outcome
	}
	return ans, ""
}

// record appends a copy of c to the run's calls. r.mu is held. Inlined,
// the append's copy of c would sit in call's frame while it waits.
//
//go:noinline
func (r *run) record(c *Call) { r.calls = append(r.calls, *c) }

// spent sums the cost of the calls recorded so far, and of those of round n.
func (r *run) spent(n int) (all, round core.Micros) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.calls {
		all += c.Cost
		if c.Round == n && c.Role != RoleClassifier && c.Role != RoleSynthesis {
			round += c.Cost
		}
	}
	return all, round
}

// staffCall asks a staff role one prompt: its primary, the backup on
// failure or as a hedge beside a slow primary. It returns the answer, the
// engine that gave it, and the reason when none did.
func (r *run) staffCall(ctx context.Context, role string, round int, sreq *core.SeatRequest) (*core.SeatAnswer, string, string) {
	s, ok := r.req.Mode.Deliberation.Staff[role]
	if !ok || s.Engine == "" {
		return nil, "", "no " + role + " engine is configured"
	}
	primary := &Call{Role: role, Round: round, Engine: s.Engine}
	var backup *Call
	if s.Backup != "" {
		backup = &Call{Role: role, Round: round, Engine: s.Backup, Original: s.Engine, Fallback: true}
	}
	rr := r.race(ctx, primary, backup, sreq, r.hedge)
	if rr.win != nil {
		return rr.win, rr.engine, ""
	}
	reason := s.Engine + " failed: " + string(rr.primaryWhy)
	if rr.primaryWhy == "" {
		reason = s.Engine + " was cancelled"
	}
	if backup != nil && rr.backupWhy != "" {
		reason += "; backup " + s.Backup + " failed: " + string(rr.backupWhy)
	}
	return nil, "", reason
}

// hedgeFor sets the run's hedging from its mode: the delay's floor is
// Config.HedgeAfter when set, otherwise half the straggler deadline of a mode
// with a quorum; the percentile is the mode's, or DefaultHedgePercentile.
func (r *run) hedgeFor(mode *core.Mode) {
	h := r.e.cfg.HedgeAfter
	d := mode.Deliberation
	if h == 0 && d.Quorum > 0 && d.StragglerDeadline > 0 {
		h = d.StragglerDeadline / 2
	}
	r.hedge = max(h, 0)
	r.pct = d.HedgePercentile
	if r.pct <= 0 || r.pct > 100 {
		r.pct = DefaultHedgePercentile
	}
}

// question is the last user message.
func question(msgs []core.Message) string {
	q := ""
	for _, m := range msgs {
		if m.Role == core.RoleUser {
			q = m.Content
		}
	}
	return q
}

const classifierSystem = `You classify how hard a question is for a panel of language models. Reply with one JSON object only:
{"score":0.0,"depth":"light|medium|deep","task_type":"arithmetic|lookup|formatting|verbatim|code|creative|analysis|judgement|open_question","hallucination_risk":"low|medium|high"}
score runs from 0 (trivial, one checkable answer) to 1 (hardest: informed opinions differ). Depth is light under 0.35, medium under 0.65, deep above.`

// classify classifies the question with the mode's classifier staff engine,
// asked for JSON {score, depth, task_type, hallucination_risk}; on any
// failure or unreadable reply it falls back to Config.Fallback. It returns
// the classification (whose By is the engine's id or the fallback's) and,
// when the engine failed, why.
func (r *run) classify(ctx context.Context) (*classify.Result, string, error) {
	fb := func(why string) (*classify.Result, string, error) {
		res, err := r.e.cfg.Fallback.Classify(ctx, r.req.Messages)
		if err != nil {
			if ctx.Err() != nil {
				return nil, "", ctx.Err()
			}
			return nil, "", fmt.Errorf("%w: classifying the question: %v", ErrUpstream, err)
		}
		return res, why, nil
	}
	s, ok := r.req.Mode.Deliberation.Staff[RoleClassifier]
	if !ok || s.Engine == "" {
		return fb("")
	}
	var text strings.Builder
	for _, m := range r.req.Messages {
		text.WriteString(m.Role + ": " + m.Content + "\n")
	}
	sreq := &core.SeatRequest{
		System:     classifierSystem,
		Messages:   []core.Message{{Role: core.RoleUser, Content: "Classify this conversation's last question.\n\n" + text.String()}},
		MaxTokens:  256,
		JSONOutput: true,
	}
	ans, by, why := r.staffCall(ctx, RoleClassifier, 0, sreq)
	if ctx.Err() != nil {
		return nil, "", ctx.Err()
	}
	if ans == nil {
		return fb(why)
	}
	res, ok := parseClassification(ans.Text)
	if !ok {
		return fb(by + " replied without the expected JSON")
	}
	res.By = by
	if h, err := r.e.cfg.Fallback.Classify(ctx, r.req.Messages); err == nil {
		res.Value = h.Value // the engine does not judge a panel's value
	}
	return res, "", nil
}

// Execute runs a plan: the express lane's one seat, or the panel's rounds,
// judged, with critique rounds while the mode's policy, the judge and the
// budget (Request.Budget, the mode's CostCeiling) allow, then synthesis.
// The Result carries the plan's classification, and its Calls begin with
// the plan's classifier calls. When ctx ends it returns ctx.Err() and no
// Result; nothing it started outlives it. On ErrModeUnavailable or
// ErrUpstream it also returns the partial Result, whose Calls account for
// what the failed deliberation consumed. It is safe for concurrent use;
// execute a plan at most once.
func (e *Engine) Execute(ctx context.Context, p *Plan) (*Result, error) {
	if p == nil || p.Request.Mode == nil {
		return nil, fmt.Errorf("%w: no plan or mode", ErrUpstream)
	}
	req := &p.Request
	row := req.Mode.Deliberation.Seats[req.Tier]
	if len(row) == 0 {
		return nil, fmt.Errorf("%w: mode %q has no seats for tier %q", ErrModeUnavailable, req.Mode.ID, req.Tier)
	}
	r := e.newRun(req)
	// Room for the plan's calls and the lane's usual ones: the express
	// seat; or each seat and the judge each round, and the synthesis. A
	// backup or hedge grows the slice once. Growing it call by call copied
	// every record four times over; room for every backup as well held
	// twice the records a deliberation uses.
	room := 1
	if p.Lane != core.LaneExpress {
		room = (len(row)+1)*max(p.MaxRounds, 1) + 1
	}
	r.calls = append(make([]Call, 0, len(p.Calls)+room), p.Calls...)
	r.promptTokens, r.questionTokens = p.promptTokens, p.questionTokens
	res := &Result{
		Finish: FinishStop, Classification: p.Classification, Substitutions: []Substitution{},
		StaffUnavailable: slices.Clone(p.StaffUnavailable),
	}
	var err error
	if p.Lane == core.LaneExpress {
		err = r.express(ctx, row[0], res)
	} else {
		err = r.panel(ctx, row, p.MaxRounds, res)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	r.finish(res)
	if err != nil {
		return res, err
	}
	return res, nil
}

// Run plans one deliberation and executes the plan (Plan, then Execute),
// for a caller that checks nothing in between. When ctx ends it returns
// ctx.Err() and no Result. On ErrModeUnavailable or ErrUpstream it also
// returns the partial Result of a deliberation that started, whose Calls
// account for what it consumed. It is safe for concurrent use.
func (e *Engine) Run(ctx context.Context, req *Request) (*Result, error) {
	p, err := e.Plan(ctx, req)
	if err != nil {
		return nil, err
	}
	return e.Execute(ctx, p)
}

// finish fills what is summed from the calls.
func (r *run) finish(res *Result) {
	r.mu.Lock()
	calls := append([]Call(nil), r.calls...)
	r.mu.Unlock()
	sort.SliceStable(calls, func(i, j int) bool { return calls[i].Started.Before(calls[j].Started) })
	res.Calls = calls
	seen := map[string]bool{}
	var staff []string
	// Seat engines in seat order, primary before backup.
	bySeat := map[string][]string{}
	for _, c := range calls {
		res.Usage.PromptTokens += c.InputTokens
		res.Usage.CompletionTokens += c.OutputTokens
		res.Usage.ReasoningTokens += c.ReasoningTokens
		res.Cost += c.Cost
		if c.Outcome == Outcome(core.ErrorEgressRefused) {
			continue // never left the service
		}
		if c.Seat != "" {
			bySeat[c.Seat] = appendOnce(bySeat[c.Seat], c.Engine)
		} else {
			staff = append(staff, c.Engine)
		}
	}
	seats := make([]string, 0, len(bySeat))
	for s := range bySeat {
		seats = append(seats, s)
	}
	sort.Slice(seats, func(i, j int) bool { return seatNumber(seats[i]) < seatNumber(seats[j]) })
	for _, s := range seats {
		for _, id := range bySeat[s] {
			if !seen[id] {
				seen[id] = true
				res.Engines = append(res.Engines, id)
			}
		}
	}
	for _, id := range staff {
		if !seen[id] {
			seen[id] = true
			res.Engines = append(res.Engines, id)
		}
	}
}

// appendOnce appends engine unless list holds it.
func appendOnce(list []string, engine string) []string {
	for _, x := range list {
		if x == engine {
			return list
		}
	}
	return append(list, engine)
}

func seatNumber(role string) int {
	var n int
	_, _ = fmt.Sscanf(role, "seat-%d", &n)
	return n
}

func seatRole(i int) string { return fmt.Sprintf("seat-%d", i+1) }

// express runs the express lane: the first seat alone, no judge, no
// synthesis.
func (r *run) express(ctx context.Context, seat core.Seat, res *Result) error {
	res.Lane = core.LaneExpress
	res.BestSeatJudgedBy = JudgedByExpressLane
	res.Seats = 1
	seats := []*seatState{{role: seatRole(0), seat: seat}}
	r.req.observe(Progress{Stage: StageRoundStarted, Round: 1, Seats: 1})
	rd, outs, err := r.round(ctx, 1, seats, r.firstPrompt, 0, r.hedge)
	if err != nil {
		return err
	}
	res.Rounds = append(res.Rounds, rd)
	r.account(outs, res)
	o := outs[0]
	if !o.answered {
		return fmt.Errorf("%w: the express lane's seat failed: %s", ErrModeUnavailable, o.reason)
	}
	res.SeatsAnswered = 1
	res.Answer = o.text
	if o.finish == core.FinishLength {
		res.Finish = FinishLength
	}
	res.BestSeat = core.BestSeat{Seat: o.role, ModelUsed: o.engine, Content: o.text}
	res.BestSeatRationale = fmt.Sprintf("The question scored %.3g, under the mode's express threshold of %.3g, so %s answered alone.",
		res.Classification.Score, r.req.Mode.Deliberation.ExpressThreshold, o.role)
	return nil
}

// account records a round's substitutions and unavailable seats.
func (r *run) account(outs []*seatOutcome, res *Result) {
	for _, o := range outs {
		if o.sub != nil && !hasSub(res.Substitutions, *o.sub) {
			res.Substitutions = append(res.Substitutions, *o.sub)
		}
		if o.closedBy == ClosedByUnavailable {
			res.SeatsUnavailable = append(res.SeatsUnavailable, core.Unavailable{Role: o.role, Reason: o.reason})
		}
	}
}

func hasSub(list []Substitution, s Substitution) bool {
	for _, x := range list {
		if x.Seat == s.Seat && x.Used == s.Used {
			return true
		}
	}
	return false
}

// panel runs up to maxRounds of the seats' rounds, judging each, then
// synthesis.
func (r *run) panel(ctx context.Context, row []core.Seat, maxRounds int, res *Result) error {
	d := r.req.Mode.Deliberation
	res.Lane = core.LanePanel
	res.Seats = len(row)
	seats := make([]*seatState, len(row))
	for i, s := range row {
		seats[i] = &seatState{role: seatRole(i), seat: s}
	}
	hedge := r.hedge
	quorum := d.Quorum
	seed := r.e.cfg.Seed()

	var final []*seatOutcome
	var judg *judged
	for n := 1; n <= maxRounds; n++ {
		var live []*seatState
		for _, s := range seats {
			if !s.gone {
				live = append(live, s)
			}
		}
		if n > 1 {
			if judg != nil && judg.converged != nil && *judg.converged {
				break
			}
			if !r.critiqueFits(n-1, live, final) {
				res.Finish = FinishCostCap
				break
			}
		}
		prompt := r.firstPrompt
		if n > 1 {
			prev := final
			prompt = func(s *seatState) []core.Message { return r.critiquePrompt(s, prev) }
		}
		q := quorum
		if q > len(live) {
			q = len(live)
		}
		r.req.observe(Progress{Stage: StageRoundStarted, Round: n, Seats: len(live)})
		rd, outs, err := r.round(ctx, n, live, prompt, q, hedge)
		if err != nil {
			return err
		}
		r.account(outs, res)
		answered := answeredOf(outs)
		if n == 1 && len(answered) == 0 {
			res.Rounds = append(res.Rounds, rd)
			if allUnavailable(outs) {
				return fmt.Errorf("%w: %s", ErrModeUnavailable, reasons(outs))
			}
			return fmt.Errorf("%w: no seat answered: %s", ErrUpstream, reasons(outs))
		}
		if len(answered) == 0 {
			// A critique round nobody answered: the previous round stands.
			res.Rounds = append(res.Rounds, rd)
			break
		}
		j, err := r.judge(ctx, n, answered, seed+int64(n), res)
		if err != nil {
			return err
		}
		r.req.observe(Progress{Stage: StageJudged, Round: n, Seats: len(live), Answered: len(answered)})
		rd.Judgment = j.summary()
		_, rd.Cost = r.spent(n)
		res.Rounds = append(res.Rounds, rd)
		final, judg = answered, j
		if n == 1 {
			res.DivergenceFirstRound = j.divergence
		}
	}

	keepJudgment(res, final, judg)
	return r.synthesise(ctx, res, final, judg.best, seed)
}

// keepJudgment records in res what the last round's judgment found of the
// final answers.
func keepJudgment(res *Result, final []*seatOutcome, judg *judged) {
	res.SeatsAnswered = len(final)
	res.DivergenceFinalRound = judg.divergence
	res.Converged = judg.converged
	if judg.factualConflict {
		f := "factual_conflict"
		res.RemainingFriction = &f
	}
	res.ContestedPassage = judg.passage
	best := judg.best
	res.BestSeat = core.BestSeat{Seat: best.role, ModelUsed: best.engine, JudgeScore: judg.bestScore, Content: best.text}
	res.BestSeatJudgedBy = judg.by
	res.BestSeatRationale = judg.rationale(len(res.Rounds))
}

// synthesise writes the panel's one answer from the final answers; when the
// synthesis engine gives none, the best seat's answer stands in for it.
func (r *run) synthesise(ctx context.Context, res *Result, final []*seatOutcome, best *seatOutcome, seed int64) error {
	r.req.observe(Progress{Stage: StageSynthesising, Round: len(res.Rounds)})
	ans, _, why := r.staffCall(ctx, RoleSynthesis, len(res.Rounds), r.synthesisPrompt(final, seed))
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if ans != nil {
		res.Answer = ans.Text
		if ans.Finish == core.FinishLength {
			res.Finish = FinishLength
		}
		return nil
	}
	res.StaffUnavailable = append(res.StaffUnavailable, core.Unavailable{Role: RoleSynthesis, Reason: why + "; the best seat's answer was returned"})
	res.Answer = best.text
	if best.finish == core.FinishLength {
		res.Finish = FinishLength
	}
	return nil
}

func answeredOf(outs []*seatOutcome) []*seatOutcome {
	var a []*seatOutcome
	for _, o := range outs {
		if o.answered {
			a = append(a, o)
		}
	}
	return a
}

func allUnavailable(outs []*seatOutcome) bool {
	for _, o := range outs {
		if o.closedBy != ClosedByUnavailable {
			return false
		}
	}
	return true
}

func reasons(outs []*seatOutcome) string {
	var parts []string
	for _, o := range outs {
		if o.reason != "" {
			parts = append(parts, o.role+": "+o.reason)
		}
	}
	return strings.Join(parts, "; ")
}

// firstPrompt is the caller's conversation as it came.
func (r *run) firstPrompt(*seatState) []core.Message { return r.req.Messages }

// critiquePrompt shows a seat its own previous answer and the others',
// labelled without engine names, and asks it to reconsider.
func (r *run) critiquePrompt(s *seatState, prev []*seatOutcome) []core.Message {
	msgs := append([]core.Message(nil), r.req.Messages...)
	var own string
	var b strings.Builder
	b.Grow(len(critiqueHead) + answersLen(prev) + len(critiqueTail))
	b.WriteString(critiqueHead)
	label := 0
	for _, o := range prev {
		if o.role == s.role {
			own = o.text
			continue
		}
		writeAnswer(&b, label, o.text)
		label++
	}
	b.WriteString(critiqueTail)
	if own != "" {
		msgs = append(msgs, core.Message{Role: core.RoleAssistant, Content: own})
	}
	return append(msgs, core.Message{Role: core.RoleUser, Content: b.String()})
}

// The critique prompt's fixed text, before and after the other answers.
const (
	critiqueHead = "Other members of the panel answered the same question. Their answers follow.\n"
	critiqueTail = "\n[End of answers]\nReconsider your answer in the light of theirs: keep what holds up, correct what does not, and give your full revised answer."
)

// synthesisTail ends the synthesis prompt, after the answers.
const synthesisTail = "\n[End of answers]\nWrite the one answer."

// answerFrame is what writeAnswer adds around an answer's text.
const answerFrame = len("\n[Answer A]\n\n")

// writeAnswer writes the answer labelled A, B, … for label 0, 1, … as the
// critique and synthesis prompts show it.
func writeAnswer(b *strings.Builder, label int, text string) {
	b.WriteString("\n[Answer ")
	b.WriteRune('A' + rune(label))
	b.WriteString("]\n")
	b.WriteString(text)
	b.WriteByte('\n')
}

// answersLen is an upper bound on what writeAnswer writes for outs: the
// prompts size their builders once with it rather than regrowing them.
func answersLen(outs []*seatOutcome) int {
	n := 0
	for _, o := range outs {
		n += answerFrame + len(o.text)
	}
	return n
}

const synthesisSystem = `You write the panel's one answer. Several independent answers to the question follow. Combine what is correct and well argued in them into a single, self-contained answer to the question. Do not mention the panel, the answers or their labels.`

// synthesisPrompt gives the synthesis engine the question and the final
// round's answers, shuffled and labelled.
func (r *run) synthesisPrompt(final []*seatOutcome, seed int64) *core.SeatRequest {
	order := shuffled(len(final), seed^0x5eed)
	q := question(r.req.Messages)
	var b strings.Builder
	b.Grow(len("Question:\n\n") + len(q) + answersLen(final) + len(synthesisTail))
	b.WriteString("Question:\n")
	b.WriteString(q)
	b.WriteString("\n")
	for k, i := range order {
		writeAnswer(&b, k, final[i].text)
	}
	b.WriteString(synthesisTail)
	return &core.SeatRequest{System: synthesisSystem, Messages: []core.Message{{Role: core.RoleUser, Content: b.String()}}, MaxTokens: r.e.cfg.SeatMaxTokens}
}

// shuffled is a seeded permutation of 0..n-1 (a splitmix64-driven
// Fisher–Yates, so the order is reproducible from the seed).
func shuffled(n int, seed int64) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	x := uint64(seed)
	next := func() uint64 {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		return z ^ (z >> 31)
	}
	for i := n - 1; i > 0; i-- {
		j := int(next() % uint64(i+1))
		p[i], p[j] = p[j], p[i]
	}
	return p
}

// round3 rounds to three decimals.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }
