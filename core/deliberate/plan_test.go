package deliberate

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// testBundle is an engine on a fake caller, and the catalog it prices from:
// every engine costs $1 per million input tokens and $2 per million output
// tokens, and the fake answers every call with 10 tokens in and 5 out, so
// each call costs 20 micro-dollars.
type testBundle struct {
	cat    *core.Catalog
	caller *fakeCaller
	e      *Engine
}

// promptTokens is what the bundle's engine counts for any conversation.
const promptTokens = 40

func setup(t *testing.T, answers map[string]string) *testBundle {
	t.Helper()
	var engines []core.Engine
	for _, id := range []string{"x/alpha", "x/beta", "x/judge", "x/synth", "x/clf"} {
		engines = append(engines, core.Engine{ID: id, Family: "x", MaxTier: core.TierPro, Adapter: "openai",
			InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000})
	}
	cat, err := core.NewCatalog(engines, nil)
	require.NoError(t, err)
	fc := &fakeCaller{got: map[string][]*core.SeatRequest{}, answers: map[string]string{
		"x/alpha": "Position one.", "x/beta": "Position two.", "x/judge": "{}", "x/synth": "The one answer.",
	}}
	for k, v := range answers {
		fc.answers[k] = v
	}
	e, err := New(Config{Catalog: cat, Caller: fc, Judge: firstProtocol{}, Seed: func() int64 { return 3 },
		CountTokens: func([]core.Message) int { return promptTokens }})
	require.NoError(t, err)
	return &testBundle{cat: cat, caller: fc, e: e}
}

// twoSeats is a mode of two seats, a judge and a synthesis engine whose
// critique runs on every question for up to three rounds.
func twoSeats(edit func(*core.Deliberation)) *core.Mode {
	d := core.Deliberation{
		Seats:    map[core.Tier][]core.Seat{core.TierPlus: {{Engine: "x/alpha"}, {Engine: "x/beta"}}},
		Staff:    map[string]core.Staff{"judge": {Engine: "x/judge"}, "synthesis": {Engine: "x/synth"}},
		Critique: core.CritiqueAlways, MaxRounds: 3,
	}
	if edit != nil {
		edit(&d)
	}
	return &core.Mode{ID: "m", Deliberation: d}
}

const scheduler = "Should we rewrite the scheduler?"

func ask(mode *core.Mode, budget core.Micros) *Request {
	return &Request{Mode: mode, Tier: core.TierPlus, Budget: budget,
		Messages: []core.Message{{Role: core.RoleUser, Content: scheduler}}}
}

// The judge (firstProtocol) never finds the seats converged, so only the
// rounds, the mode's ceiling and the call's budget end the critique. Each
// round's two seats and judge cost 60 micro-dollars.
func TestBudgetStopsCritique(t *testing.T) {
	t.Parallel()
	const oneRound = 3 * 20
	tests := []struct {
		name            string
		ceiling, budget core.Micros
		rounds          int
		finish          string
	}{
		{"neither: every round runs", 0, 0, 3, FinishStop},
		{"an ample budget", 0, 1_000_000, 3, FinishStop},
		{"a budget fitting one round", 0, oneRound, 1, FinishCostCap},
		{"a budget fitting one round under an ample ceiling", 1_000_000, oneRound + 10, 1, FinishCostCap},
		{"the mode's ceiling under an ample budget", oneRound, 1_000_000, 1, FinishCostCap},
		{"the mode's ceiling alone", oneRound, 0, 1, FinishCostCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			mode := twoSeats(func(d *core.Deliberation) { d.CostCeiling = tt.ceiling })
			res, err := b.e.Run(context.Background(), ask(mode, tt.budget))
			require.NoError(t, err)
			require.Len(t, res.Rounds, tt.rounds)
			require.Equal(t, tt.finish, res.Finish)
			require.Equal(t, "The one answer.", res.Answer, "a shorter deliberation still gives a real answer")
			require.Equal(t, core.Micros(20*(3*tt.rounds+1)), res.Cost, "rounds and the synthesis")
			for _, rd := range res.Rounds {
				require.Equal(t, core.Micros(oneRound), rd.Cost)
			}
		})
	}
}

func TestPlanProjectsTheFirstRound(t *testing.T) {
	t.Parallel()
	price := &core.Engine{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}
	seat := core.CallCost(promptTokens, DefaultOutputTokens, price)
	// The judge reads the question and both answers, plus its instructions.
	judge := core.CallCost(promptTokens+2*DefaultOutputTokens+instructionTokens, DefaultOutputTokens, price)
	tests := []struct {
		name      string
		mode      *core.Mode
		lane      core.Lane
		maxRounds int
		roundCost core.Micros
		minCost   core.Micros
	}{
		{"panel: two seats and the judge", twoSeats(nil), core.LanePanel, 3, 2*seat + judge, 2*seat + judge},
		{"panel without a judge", twoSeats(func(d *core.Deliberation) { delete(d.Staff, "judge") }), core.LanePanel, 3, 2 * seat, 2 * seat},
		{"critique only on deep questions", twoSeats(func(d *core.Deliberation) { d.Critique = core.CritiqueDeep }), core.LanePanel, 1, 2*seat + judge, 2*seat + judge},
		// The express price is the mode's express surcharge, the caller's
		// concern: the question needs no real cost beyond it.
		{"express: one seat, no minimum", twoSeats(func(d *core.Deliberation) { d.ExpressThreshold = 0.99 }), core.LaneExpress, 1, seat, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			p, err := b.e.Plan(context.Background(), ask(tt.mode, 0))
			require.NoError(t, err)
			require.Equal(t, tt.lane, p.Lane)
			require.Equal(t, tt.maxRounds, p.MaxRounds)
			require.Equal(t, tt.roundCost, p.RoundCost)
			require.Equal(t, tt.minCost, p.MinCost)
			require.Empty(t, b.caller.got, "no seat fires while planning")
			require.Empty(t, p.Calls)
		})
	}
}

// A plan's classification is the one the deliberation runs on and reports:
// the classifier engine is asked once, and its call is in the result.
func TestPlanThenExecute(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{
		"x/clf": `{"score":0.72,"depth":"deep","task_type":"judgement","hallucination_risk":"low"}`,
	})
	mode := twoSeats(func(d *core.Deliberation) {
		d.Staff["classifier"] = core.Staff{Engine: "x/clf"}
		d.Critique, d.MaxRounds = core.CritiqueDeep, 2
	})
	ctx := context.Background()
	p, err := b.e.Plan(ctx, ask(mode, 0))
	require.NoError(t, err)
	want := Classification{Score: 0.72, Depth: core.DepthDeep, TaskType: "judgement", HallucinationRisk: "low", By: "x/clf"}
	require.Equal(t, want, p.Classification)
	require.Equal(t, "heuristic", p.Value.Basis, "the fallback judges a panel's value")
	require.Equal(t, 2, p.MaxRounds, "deep: critique runs")
	require.Len(t, p.Calls, 1)
	require.Empty(t, p.StaffUnavailable)

	res, err := b.e.Execute(ctx, p)
	require.NoError(t, err)
	require.Equal(t, want, res.Classification)
	require.Len(t, b.caller.got["x/clf"], 1, "executing does not classify again")
	require.Equal(t, RoleClassifier, res.Calls[0].Role)
	require.Equal(t, "x/clf", res.Calls[0].Engine)
	require.Len(t, res.Rounds, 2)
	require.Equal(t, core.Micros(20*(1+3+3+1)), res.Cost, "the classifier, two rounds and the synthesis")

	again, err := b.e.Run(ctx, ask(mode, 0))
	require.NoError(t, err)
	require.Equal(t, want, again.Classification, "Run plans the same way")
}

func TestPlanRefusesAModeWithoutSeats(t *testing.T) {
	t.Parallel()
	b := setup(t, map[string]string{"x/clf": `{"score":0.5}`})
	mode := twoSeats(func(d *core.Deliberation) { d.Staff["classifier"] = core.Staff{Engine: "x/clf"} })
	_, err := b.e.Plan(context.Background(), &Request{Mode: mode, Tier: core.TierPro})
	require.ErrorIs(t, err, ErrModeUnavailable)
	require.Empty(t, b.caller.got, "nothing is classified for a tier the mode cannot seat")
	_, err = b.e.Plan(context.Background(), nil)
	require.ErrorIs(t, err, ErrUpstream)
	_, err = b.e.Execute(context.Background(), nil)
	require.ErrorIs(t, err, ErrUpstream)
}

func TestOutputsMean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		add    []int
		mean   int
		enough bool
	}{
		{"none", nil, 0, false},
		{"too few", []int{100, 100, 100, 100, 100, 100, 100}, 0, false},
		{"enough", []int{100, 100, 100, 100, 100, 100, 100, 101}, 101, true}, // 100.125 rounds up
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var o outputs
			for _, n := range tt.add {
				o.add(n)
			}
			mean, ok := o.mean()
			require.Equal(t, tt.enough, ok)
			require.Equal(t, tt.mean, mean)
		})
	}
	t.Run("the oldest leave the window", func(t *testing.T) {
		t.Parallel()
		var o outputs
		for range outputWindow {
			o.add(1000)
		}
		for range outputWindow {
			o.add(10)
		}
		mean, ok := o.mean()
		require.True(t, ok)
		require.Equal(t, 10, mean)
	})
}

// Once an engine has answered often enough, its own mean output replaces
// the default in projections.
func TestProjectionLearnsOutputs(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	mode := twoSeats(func(d *core.Deliberation) { d.Critique = core.CritiqueNever })
	for range outputMinSamples {
		_, err := b.e.Run(context.Background(), ask(mode, 0))
		require.NoError(t, err)
	}
	p, err := b.e.Plan(context.Background(), ask(mode, 0))
	require.NoError(t, err)
	price := &core.Engine{InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000}
	// The fake writes 5 tokens a call.
	want := 2*core.CallCost(promptTokens, 5, price) + core.CallCost(promptTokens+2*5+instructionTokens, 5, price)
	require.Equal(t, want, p.RoundCost)
}
