package deliberate

import (
	"context"
	"fmt"
	"sync"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
)

// Plan is a deliberation decided before any seat fires: how the question
// was classified, the lane it takes, how many rounds it may run, and what
// its first round is expected to cost. Engine.Plan makes it and
// Engine.Execute runs it; execute a Plan at most once (each execution
// bills its classifier calls again). The estimate
// endpoint stops at the Plan, so that an estimate and a real call classify
// a question alike: the same classifier engine, the same fallback, the same
// score, depth and task type.
type Plan struct {
	// Request is the deliberation planned, copied from Plan's argument.
	// Execute runs it as it stands when called. Only Budget is meant to be
	// set between Plan and Execute: a call's budget depends on the
	// surcharge of the classified depth, known only once planned.
	Request Request
	// Classification is how hard the question was judged to be. Its By is
	// the basis of the classification: the classifier engine that answered,
	// or "heuristic" when the deterministic fallback classified.
	Classification Classification
	// Value is the verdict on whether a panel is worth it for the
	// question. It is always the fallback's: a classifier engine is not
	// asked for it.
	Value classify.Value
	// Lane is core.LaneExpress when the mode has an express threshold and
	// the question scores under it, otherwise core.LanePanel.
	Lane core.Lane
	// MaxRounds is the most rounds the deliberation may run: the mode's
	// MaxRounds when its critique policy applies to the question, else 1
	// (always 1 on the express lane).
	MaxRounds int
	// RoundCost is the projected real cost of the first round (see
	// "Projected cost" in the package doc): on the panel lane every seat's
	// primary answering the prompt plus one judge call reading the answers;
	// on the express lane its one seat's call.
	RoundCost core.Micros
	// MinCost is the least real cost the question needs: RoundCost on the
	// panel lane — one round, without the classifier's call (already made
	// and in Calls) or the synthesis; 0 on the express lane, which is
	// priced by the mode's express surcharge: that price is the caller's
	// concern. A caller refuses a call whose budget (core.CostBudget) is
	// below MinCost before executing it; core.CeilingFor(MinCost,
	// surcharge) is the lowest ceiling that can answer the question.
	MinCost core.Micros
	// Calls are the classifier's engine calls (none when the mode has no
	// classifier engine). Execute's Result.Calls include them, so that the
	// bill and the receipt count them.
	Calls []Call
	// StaffUnavailable holds the classifier when its engine failed or
	// replied unreadably and the fallback classified; Execute's Result
	// carries it on.
	StaffUnavailable []core.Unavailable

	// promptTokens and questionTokens are Config.CountTokens of the
	// conversation and of its last user message: the input the
	// projections start from.
	promptTokens, questionTokens int
}

// Plan classifies the request's question with the mode's classifier
// engine (Config.Fallback when it fails or none is configured), chooses the
// lane, and projects the first round's cost. No seat fires. When ctx ends
// it returns ctx.Err(); it returns ErrModeUnavailable when the mode has no
// seats for the request's tier, and ErrUpstream when the question could not
// be classified at all. It is safe for concurrent use.
func (e *Engine) Plan(ctx context.Context, req *Request) (*Plan, error) {
	if req == nil || req.Mode == nil {
		return nil, fmt.Errorf("%w: no request or mode", ErrUpstream)
	}
	row := req.Mode.Deliberation.Seats[req.Tier]
	if len(row) == 0 {
		return nil, fmt.Errorf("%w: mode %q has no seats for tier %q", ErrModeUnavailable, req.Mode.ID, req.Tier)
	}
	r := e.newRun(req)
	cls, why, err := r.classify(ctx)
	if err != nil {
		return nil, err
	}
	p := &Plan{
		Request: *req,
		Classification: Classification{Score: cls.Score, Depth: cls.Depth, TaskType: cls.TaskType,
			HallucinationRisk: cls.HallucinationRisk, By: cls.By},
		Value:          cls.Value,
		Lane:           core.LanePanel,
		MaxRounds:      1,
		Calls:          r.calls,
		promptTokens:   e.cfg.CountTokens(req.Messages),
		questionTokens: e.cfg.CountTokens([]core.Message{{Role: core.RoleUser, Content: question(req.Messages)}}),
	}
	if why != "" {
		p.StaffUnavailable = []core.Unavailable{{Role: RoleClassifier, Reason: why + "; the heuristic classified"}}
	}
	d := req.Mode.Deliberation
	if d.ExpressThreshold > 0 && cls.Score < d.ExpressThreshold {
		p.Lane = core.LaneExpress
		p.RoundCost = core.CallCost(p.promptTokens, e.expectedOutput(row[0].Engine, kindSeat), e.engine(row[0].Engine))
		req.observe(Progress{Stage: StageClassified, Depth: cls.Depth, Lane: p.Lane})
		return p, nil
	}
	p.MaxRounds = d.Rounds(cls.Depth)
	outs := 0
	for _, s := range row {
		out := e.expectedOutput(s.Engine, kindSeat)
		p.RoundCost += core.CallCost(p.promptTokens, out, e.engine(s.Engine))
		outs += out
	}
	p.RoundCost += e.projectStaff(d, RoleJudge, p.questionTokens+outs)
	p.MinCost = p.RoundCost
	req.observe(Progress{Stage: StageClassified, Depth: cls.Depth, Lane: p.Lane})
	return p, nil
}

// instructionTokens is what a judge, critique or synthesis prompt is
// projected to add, in tokens, around the question and the answers it
// carries: its instructions and labels.
const instructionTokens = 300

// DefaultOutputTokens is the output, in tokens, projected for an engine's
// answer in a role (seat, judge, synthesis) until the engine has answered
// outputMinSamples times in that role; from then on its mean over its last
// outputWindow answers there is projected instead. Either is capped at
// Config.SeatMaxTokens.
const DefaultOutputTokens = 512

const (
	// outputWindow is how many recent answers an engine's expected output
	// is averaged over.
	outputWindow = 64
	// outputMinSamples is how many answers an engine needs in a role before
	// its own mean replaces DefaultOutputTokens.
	outputMinSamples = 8
	// kindSeat is the output record of seat answers (a seat's primary,
	// backup or hedge); staff records are keyed by their role.
	kindSeat = "seat"
)

// outputKey names one engine's output record in one kind of call.
type outputKey struct{ engine, kind string }

// outputs is one engine's recent output token counts in one kind of call.
type outputs struct {
	mu   sync.Mutex
	ring [outputWindow]int
	n    int // answers ever recorded
	sum  int // of the ring
}

func (o *outputs) add(tokens int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	i := o.n % outputWindow
	o.sum += tokens - o.ring[i]
	o.ring[i] = tokens
	o.n++
}

// mean is the ring's mean, rounded up; false with too few answers.
func (o *outputs) mean() (int, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.n < outputMinSamples {
		return 0, false
	}
	k := min(o.n, outputWindow)
	return (o.sum + k - 1) / k, true
}

// outputsOf is the engine's record for kind, created on first use.
func (e *Engine) outputsOf(engineID, kind string) *outputs {
	key := outputKey{engineID, kind}
	if o, ok := e.outs.Load(key); ok {
		return o.(*outputs)
	}
	o, _ := e.outs.LoadOrStore(key, &outputs{})
	return o.(*outputs)
}

// expectedOutput is the output projected for an engine's answer in a kind
// of call (see DefaultOutputTokens).
func (e *Engine) expectedOutput(engineID, kind string) int {
	out, ok := e.outputsOf(engineID, kind).mean()
	if !ok {
		out = DefaultOutputTokens
	}
	return min(out, e.cfg.SeatMaxTokens)
}

// unpriced stands in for an engine the catalog does not hold: calls to it
// cost nothing (core.CallCost of a zero-priced engine).
var unpriced = &core.Engine{}

// engine is the catalog's engine, or unpriced.
func (e *Engine) engine(id string) *core.Engine {
	if eng, ok := e.cfg.Catalog.Engine(id); ok {
		return eng
	}
	return unpriced
}

// projectStaff projects one call of a staff role's primary engine that
// reads inTokens of question and answers plus instructionTokens and writes
// its expected output; 0 when the mode has no engine in the role.
func (e *Engine) projectStaff(d core.Deliberation, role string, inTokens int) core.Micros {
	s, ok := d.Staff[role]
	if !ok || s.Engine == "" {
		return 0
	}
	return core.CallCost(inTokens+instructionTokens, e.expectedOutput(s.Engine, role), e.engine(s.Engine))
}

// projectCritique projects a critique round after prev, the answers of the
// round before, and the synthesis after it. Each live seat rereads the
// conversation and every previous answer (its own as an assistant turn,
// the others labelled) plus instructions, on the engine it would run
// (the backup once its primary failed), and writes as much as it did last
// round (its expected output when it did not answer); one judge call and
// the synthesis read the question and those answers.
func (r *run) projectCritique(live []*seatState, prev []*seatOutcome) (round, synthesis core.Micros) {
	read := 0
	wrote := map[string]int{}
	for _, o := range prev {
		read += o.outTokens
		wrote[o.role] = o.outTokens
	}
	outs := 0
	for _, s := range live {
		id := s.seat.Engine
		if s.primaryDown && s.seat.Backup != "" {
			id = s.seat.Backup
		}
		out, ok := wrote[s.role]
		if !ok {
			out = r.e.expectedOutput(id, kindSeat)
		}
		round += core.CallCost(r.promptTokens+read+instructionTokens, out, r.e.engine(id))
		outs += out
	}
	d := r.req.Mode.Deliberation
	round += r.e.projectStaff(d, RoleJudge, r.questionTokens+outs)
	synthesis = r.e.projectStaff(d, RoleSynthesis, r.questionTokens+outs)
	return round, synthesis
}

// limit is the most real cost the deliberation may spend: the lower of the
// mode's cost ceiling and the call's budget, ignoring either when it is 0;
// 0 when neither is set.
func (r *run) limit() core.Micros {
	ceiling, budget := r.req.Mode.Deliberation.CostCeiling, r.req.Budget
	switch {
	case ceiling <= 0:
		return max(budget, 0)
	case budget <= 0:
		return ceiling
	}
	return min(ceiling, budget)
}

// critiqueFits reports whether a critique round after round n — and the
// synthesis that follows it — fits the deliberation's limit, counting
// everything spent so far (the classifier included). A round that fits but
// leaves no room for the synthesis would end over the limit all the same.
func (r *run) critiqueFits(n int, live []*seatState, prev []*seatOutcome) bool {
	limit := r.limit()
	if limit <= 0 {
		return true
	}
	spent, _ := r.spent(n)
	round, synthesis := r.projectCritique(live, prev)
	return spent+round+synthesis <= limit
}

// approxTokens is Config.CountTokens's default: a token per four bytes of
// each message's content, rounded up, plus four per message for its role and
// framing — the simulated provider's count, and within a few per cent of a
// real tokenizer on English prose.
func approxTokens(messages []core.Message) int {
	n := 0
	for _, m := range messages {
		n += (len(m.Content)+3)/4 + 4
	}
	return n
}
