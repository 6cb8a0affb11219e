package deliberatetest_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
)

// A question the heuristic classifies as medium, so it takes the panel.
const openQ = "Should we migrate our billing monolith to microservices this year, given a team of eight engineers?"

// split makes the three seats disagree on every round: s2 says no.
const split = ` [[sim@s1: answer="Yes: split the billing service first. Conclusion: yes"]]` +
	` [[sim@s2: answer="No: keep the monolith and modularise it. Conclusion: no"]]` +
	` [[sim@s3: answer="Yes, but only after the audit. Conclusion: yes"]]`

// checkAccounting holds every call's cost to its engine's prices (integer
// math, rounded up), and the result's totals to the sum of its calls.
func checkAccounting(t *testing.T, res *deliberate.Result) {
	t.Helper()
	var usage deliberate.Usage
	var cost core.Micros
	for _, c := range res.Calls {
		eng, ok := shared.catalog.Engine(c.Engine)
		require.True(t, ok, c.Engine)
		want := (int64(c.InputTokens)*int64(eng.InputPerMTok) + int64(c.OutputTokens)*int64(eng.OutputPerMTok) + 999_999) / 1_000_000
		require.Equal(t, core.Micros(want), c.Cost, "call %s %s", c.Role, c.Engine)
		require.False(t, c.Ended.Before(c.Started))
		if c.Outcome == deliberate.OutcomeOK {
			require.Positive(t, c.InputTokens, "call %s %s", c.Role, c.Engine)
			require.Positive(t, c.OutputTokens, "call %s %s", c.Role, c.Engine)
		} else {
			require.Empty(t, c.Content)
		}
		usage.PromptTokens += c.InputTokens
		usage.CompletionTokens += c.OutputTokens
		usage.ReasoningTokens += c.ReasoningTokens
		cost += c.Cost
	}
	require.Equal(t, usage, res.Usage)
	require.Equal(t, cost, res.Cost)
}

// calls lists the result's calls as "role engine outcome", in start order
// within each round where order is fixed; sorted for comparison.
func callsOf(res *deliberate.Result) map[string]int {
	m := map[string]int{}
	for _, c := range res.Calls {
		m[c.Role+" "+c.Engine+" "+string(c.Outcome)]++
	}
	return m
}

func TestExpressLane(t *testing.T) {
	t.Parallel()
	res, err := run(t, newEngine(t, nil), testMode(nil), "What is 2 + 2?")
	require.NoError(t, err)
	require.Equal(t, core.LaneExpress, res.Lane)
	require.Equal(t, "2 + 2 = 4.", res.Answer)
	require.Equal(t, deliberate.FinishStop, res.Finish)
	require.Nil(t, res.Converged)
	require.Equal(t, deliberate.JudgedByExpressLane, res.BestSeatJudgedBy)
	require.Equal(t, core.BestSeat{Seat: "seat-1", ModelUsed: "sim/s1", Content: res.Answer}, res.BestSeat)
	require.Equal(t, "heuristic", res.Classification.By)
	require.Equal(t, core.DepthLight, res.Classification.Depth)
	require.Equal(t, 1, res.Seats)
	require.Equal(t, 1, res.SeatsAnswered)
	require.Equal(t, []string{"sim/s1"}, res.Engines)
	require.Empty(t, res.Substitutions)
	require.Len(t, res.Rounds, 1)
	require.Nil(t, res.Rounds[0].Judgment)
	require.Equal(t, map[string]int{"seat-1 sim/s1 ok": 1}, callsOf(res))
	require.Nil(t, res.DivergenceFirstRound)
	checkAccounting(t, res)
}

func TestPanelConvergesInOneRound(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.ExpressThreshold = 0 })
	res, err := run(t, newEngine(t, nil), mode, "What is 17 * 23?")
	require.NoError(t, err)
	require.Equal(t, core.LanePanel, res.Lane)
	require.Equal(t, deliberate.FinishStop, res.Finish)
	require.NotNil(t, res.Converged)
	require.True(t, *res.Converged)
	require.Len(t, res.Rounds, 1, "convergence stops critique early")
	require.Equal(t, deliberate.JudgedByLLM, res.BestSeatJudgedBy)
	require.Equal(t, 3, res.Seats)
	require.Equal(t, 3, res.SeatsAnswered)
	require.Nil(t, res.RemainingFriction)
	require.Contains(t, res.Answer, "391")
	require.Equal(t, []string{"sim/s1", "sim/s2", "sim/s3", "sim/judge", "sim/synth"}, res.Engines)
	require.Equal(t, map[string]int{
		"seat-1 sim/s1 ok": 1, "seat-2 sim/s2 ok": 1, "seat-3 sim/s3 ok": 1, "judge sim/judge ok": 1, "synthesis sim/synth ok": 1,
	}, callsOf(res))
	require.NotNil(t, res.BestSeat.JudgeScore)
	require.GreaterOrEqual(t, *res.BestSeat.JudgeScore, 0.8)
	require.Equal(t, res.DivergenceFirstRound, res.DivergenceFinalRound)
	for _, c := range res.Calls {
		require.NotContains(t, c.Content, "sim/", "no engine name reaches an answer")
	}
	checkAccounting(t, res)
}

func TestDisagreementRunsCritiqueRound(t *testing.T) {
	t.Parallel()
	res, err := run(t, newEngine(t, nil), testMode(nil), openQ+split)
	require.NoError(t, err)
	require.Equal(t, core.LanePanel, res.Lane)
	require.Len(t, res.Rounds, 2)
	require.NotNil(t, res.Converged)
	require.False(t, *res.Converged)
	require.NotNil(t, res.DivergenceFirstRound)
	require.NotNil(t, res.DivergenceFinalRound)
	require.Positive(t, *res.DivergenceFinalRound)
	require.NotNil(t, res.ContestedPassage)
	require.Equal(t, "seat-2", res.ContestedPassage.Seat)
	require.Contains(t, "No: keep the monolith and modularise it. Conclusion: no", res.ContestedPassage.Quote)
	require.Nil(t, res.RemainingFriction, "a difference of opinion is not a factual conflict")
	require.Equal(t, deliberate.JudgedByLLM, res.BestSeatJudgedBy)
	require.NotEqual(t, "seat-2", res.BestSeat.Seat)
	require.Equal(t, map[string]int{
		"seat-1 sim/s1 ok": 2, "seat-2 sim/s2 ok": 2, "seat-3 sim/s3 ok": 2, "judge sim/judge ok": 2, "synthesis sim/synth ok": 1,
	}, callsOf(res))
	for _, rd := range res.Rounds {
		require.Equal(t, deliberate.RoundAllAnswered, rd.Closed)
		require.NotNil(t, rd.Judgment)
		require.Positive(t, rd.Cost)
	}
	// The critique round showed each seat the others' answers, labelled
	// without engine names: the synthesis call saw the answers too.
	require.NotContains(t, res.Answer, "sim/")
	require.NotContains(t, res.BestSeatRationale, "sim/")
	checkAccounting(t, res)
}

func TestQuorumClosesOnStraggler(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) {
		d.Critique = core.CritiqueNever
		d.Quorum = 2
		d.StragglerDeadline = 100 * time.Millisecond
	})
	start := time.Now()
	res, err := run(t, newEngine(t, nil), mode, openQ+" [[sim@s3: delay=300s]] [[sim@b3: delay=300s]]")
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second, "the straggler (3 s) was not waited for")
	require.Len(t, res.Rounds, 1)
	rd := res.Rounds[0]
	require.Equal(t, deliberate.RoundQuorum, rd.Closed)
	require.Equal(t, deliberate.SeatTurn{Seat: "seat-3", Engine: "sim/s3", ClosedBy: deliberate.ClosedByQuorum, Hedged: true}, rd.Seats[2])
	require.True(t, rd.Seats[0].Answered)
	require.Equal(t, deliberate.ClosedByAnswered, rd.Seats[1].ClosedBy)
	require.Equal(t, 3, res.Seats)
	require.Equal(t, 2, res.SeatsAnswered)
	require.Empty(t, res.SeatsUnavailable, "a straggler is not unavailable")
	require.Equal(t, map[string]int{
		"seat-1 sim/s1 ok": 1, "seat-2 sim/s2 ok": 1, "seat-3 sim/s3 cancelled": 1, "hedge sim/b3 cancelled": 1,
		"judge sim/judge ok": 1, "synthesis sim/synth ok": 1,
	}, callsOf(res))
	for _, c := range res.Calls {
		if c.Outcome == deliberate.OutcomeCancelled {
			require.Zero(t, c.InputTokens+c.OutputTokens, "a cancelled call reports no tokens it did not consume")
			require.Zero(t, c.Cost)
		}
	}
	require.Equal(t, []string{"sim/s1", "sim/s2", "sim/s3", "sim/b3", "sim/judge", "sim/synth"}, res.Engines)
	checkAccounting(t, res)
}

func TestHedgeWins(t *testing.T) {
	t.Parallel()
	e := newEngine(t, func(c *deliberate.Config) { c.HedgeAfter = 50 * time.Millisecond })
	mode := testMode(func(d *core.Deliberation) { d.Critique = core.CritiqueNever })
	start := time.Now()
	res, err := run(t, e, mode, openQ+" [[sim@s1: delay=300s]]")
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second)
	seat := res.Rounds[0].Seats[0]
	require.Equal(t, deliberate.SeatTurn{Seat: "seat-1", Engine: "sim/b1", Answered: true, ClosedBy: deliberate.ClosedByAnswered, Hedged: true, Finish: core.FinishStop}, seat)
	require.Equal(t, []deliberate.Substitution{{Seat: "seat-1", Original: "sim/s1", Used: "sim/b1", Reason: "hedged: the primary had not answered in time"}}, res.Substitutions)
	require.Equal(t, 3, res.SeatsAnswered)
	var hedge *deliberate.Call
	for i, c := range res.Calls {
		if c.Role == deliberate.RoleHedge {
			hedge = &res.Calls[i]
		}
	}
	require.NotNil(t, hedge)
	require.Equal(t, "sim/s1", hedge.Original)
	require.True(t, hedge.Fallback)
	require.Equal(t, deliberate.OutcomeOK, hedge.Outcome)
	require.Equal(t, 1, callsOf(res)["seat-1 sim/s1 cancelled"])
	checkAccounting(t, res)
}

func TestBackupOnPrimaryError(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.Critique = core.CritiqueNever })
	res, err := run(t, newEngine(t, nil), mode, openQ+" [[sim@s2: error=overloaded]]")
	require.NoError(t, err)
	require.Equal(t, []deliberate.Substitution{{Seat: "seat-2", Original: "sim/s2", Used: "sim/b2", Reason: "the primary failed: overloaded"}}, res.Substitutions)
	require.Equal(t, 3, res.SeatsAnswered)
	require.Empty(t, res.SeatsUnavailable)
	require.Equal(t, map[string]int{
		"seat-1 sim/s1 ok": 1, "seat-2 sim/s2 overloaded": 1, "seat-2 sim/b2 ok": 1, "seat-3 sim/s3 ok": 1,
		"judge sim/judge ok": 1, "synthesis sim/synth ok": 1,
	}, callsOf(res))
	require.Equal(t, []string{"sim/s1", "sim/s2", "sim/b2", "sim/s3", "sim/judge", "sim/synth"}, res.Engines)
	for _, c := range res.Calls {
		if c.Engine == "sim/b2" {
			require.Equal(t, "sim/s2", c.Original)
			require.True(t, c.Fallback)
		}
	}
	checkAccounting(t, res)
}

func TestSeatUnavailable(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.Critique = core.CritiqueNever })
	res, err := run(t, newEngine(t, nil), mode, openQ+" [[sim@s3: error=overloaded]] [[sim@b3: error=auth_refused]]")
	require.NoError(t, err)
	require.Equal(t, []core.Unavailable{{Role: "seat-3", Reason: "sim/s3 failed (overloaded); backup sim/b3 failed (auth_refused)"}}, res.SeatsUnavailable)
	require.Equal(t, 3, res.Seats)
	require.Equal(t, 2, res.SeatsAnswered)
	require.Empty(t, res.Substitutions)
	require.Equal(t, deliberate.ClosedByUnavailable, res.Rounds[0].Seats[2].ClosedBy)
	checkAccounting(t, res)
}

func TestJudgeFallsBackToHeuristic(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.Critique = core.CritiqueNever })
	res, err := run(t, newEngine(t, nil), mode, openQ+" [[sim@judge: error=overloaded]] [[sim@judgeb: error=rate_limited]]")
	require.NoError(t, err)
	require.Equal(t, deliberate.JudgedByHeuristic, res.BestSeatJudgedBy)
	require.Nil(t, res.Converged, "no judge read the round")
	require.Nil(t, res.DivergenceFinalRound)
	require.Equal(t, []core.Unavailable{{Role: "judge", Reason: "sim/judge failed: overloaded; backup sim/judgeb failed: rate_limited; the heuristic chose the best seat"}}, res.StaffUnavailable)
	j := res.Rounds[0].Judgment
	require.Equal(t, deliberate.JudgedByHeuristic, j.By)
	require.Len(t, j.Scores, 3)
	for _, s := range j.Scores {
		require.LessOrEqual(t, s, j.Scores[res.BestSeat.Seat], "the medoid has the highest mean similarity")
	}
	require.Contains(t, res.BestSeatRationale, res.BestSeat.Seat)
	checkAccounting(t, res)
}

func TestSynthesisFallsBackToBestSeat(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.Critique = core.CritiqueNever })
	res, err := run(t, newEngine(t, nil), mode, openQ+" [[sim@synth: error=overloaded]] [[sim@synthb: error=bad_request]]")
	require.NoError(t, err)
	require.Equal(t, []core.Unavailable{{Role: "synthesis", Reason: "sim/synth failed: overloaded; backup sim/synthb failed: bad_request; the best seat's answer was returned"}}, res.StaffUnavailable)
	var best string
	for _, c := range res.Calls {
		if c.Role == res.BestSeat.Seat {
			best = c.Content
		}
	}
	require.NotEmpty(t, best)
	require.Equal(t, best, res.Answer)
	require.Equal(t, deliberate.FinishStop, res.Finish)
	checkAccounting(t, res)
}

func TestCostCapStopsCritique(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.CostCeiling = 1 })
	res, err := run(t, newEngine(t, nil), mode, openQ+split)
	require.NoError(t, err)
	require.Equal(t, deliberate.FinishCostCap, res.Finish)
	require.Len(t, res.Rounds, 1)
	require.False(t, *res.Converged)
	require.NotEmpty(t, res.Answer)
	checkAccounting(t, res)
}

// A call's budget that fits one round stops the critique the mode would
// run: a real answer from a shorter deliberation, finishing cost_cap.
func TestBudgetStopsCritique(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.MaxRounds = 3 })
	full, err := run(t, newEngine(t, nil), mode, openQ+split)
	require.NoError(t, err)
	require.Len(t, full.Rounds, 3, "the seats never converge")
	require.Equal(t, deliberate.FinishStop, full.Finish)

	e := newEngine(t, nil)
	p := plan(t, e, mode, openQ+split)
	require.Equal(t, core.LanePanel, p.Lane)
	require.Equal(t, 3, p.MaxRounds)
	require.Positive(t, p.MinCost)
	p.Request.Budget = full.Rounds[0].Cost
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.Execute(ctx, p)
	require.NoError(t, err)
	require.Equal(t, deliberate.FinishCostCap, res.Finish)
	require.Len(t, res.Rounds, 1)
	require.Equal(t, full.Rounds[0].Cost, res.Rounds[0].Cost)
	require.False(t, *res.Converged)
	require.Equal(t, 1, callsOf(res)["synthesis sim/synth ok"], "the shorter deliberation is still synthesised")
	require.NotEmpty(t, res.Answer)
	require.Less(t, res.Cost, full.Cost)
	checkAccounting(t, res)
}

func TestSynthesisCutOffIsLength(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.Critique = core.CritiqueNever })
	res, err := run(t, newEngine(t, nil), mode, openQ+" [[sim@synth: finish=length]]")
	require.NoError(t, err)
	require.Equal(t, deliberate.FinishLength, res.Finish)
	checkAccounting(t, res)
}

func TestModeUnavailable(t *testing.T) {
	t.Parallel()
	res, err := run(t, newEngine(t, nil), testMode(nil), openQ+" [[sim: error=overloaded]]")
	require.ErrorIs(t, err, deliberate.ErrModeUnavailable)
	require.NotNil(t, res, "the partial result accounts for the failed calls")
	require.Len(t, res.SeatsUnavailable, 3)
	require.Len(t, res.Calls, 6)
	checkAccounting(t, res)
}

func TestCancelMidRound(t *testing.T) {
	t.Parallel()
	e := newEngine(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	res, err := e.Run(ctx, &deliberate.Request{Mode: testMode(nil), Tier: core.TierPlus,
		Messages: []core.Message{{Role: core.RoleUser, Content: openQ + " [[sim: delay=300s]]"}}})
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, res)
	require.Less(t, time.Since(start), time.Second, "cancellation ends the round at once")
}

func TestCancelWhilePlanning(t *testing.T) {
	t.Parallel()
	e := newEngine(t, nil)
	mode := testMode(func(d *core.Deliberation) { d.Staff["classifier"] = core.Staff{Engine: "sim/clf"} })
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	p, err := e.Plan(ctx, request(mode, openQ+" [[sim@clf: delay=300s]]"))
	require.ErrorIs(t, err, context.Canceled)
	require.Nil(t, p)
	require.Less(t, time.Since(start), time.Second, "cancellation ends the classifier's call at once")
}

func TestClassifier(t *testing.T) {
	t.Parallel()
	e := newEngine(t, nil)
	mode := testMode(func(d *core.Deliberation) { d.Staff["classifier"] = core.Staff{Engine: "sim/clf"} })

	// The simulated engine answers the classifier's prompt, on the
	// heuristic's scale.
	res := plan(t, e, mode, openQ).Classification
	require.Equal(t, "sim/clf", res.By)
	require.Equal(t, core.DepthMedium, res.Depth)
	require.Equal(t, classify.TaskJudgement, res.TaskType)

	res = plan(t, e, mode, openQ+` [[sim@clf: answer={"score":0.91,"depth":"deep","task_type":"judgement","hallucination_risk":"low"}]]`).Classification
	require.Equal(t, "sim/clf", res.By)
	require.Equal(t, 0.91, res.Score)
	require.Equal(t, core.DepthDeep, res.Depth)
	require.Equal(t, "judgement", res.TaskType)
	require.Equal(t, "low", res.HallucinationRisk)

	// In a run, a classifier engine that fails or replies without the JSON
	// is reported unavailable, and the heuristic classifies.
	for _, tc := range []struct{ directive, outcome, reason string }{
		{`[[sim@clf: answer="It looks easy."]]`, "ok", "sim/clf replied without the expected JSON"},
		{`[[sim@clf: error=overloaded]]`, "overloaded", "sim/clf failed: overloaded"},
	} {
		out, err := run(t, e, mode, "What is 2 + 2? "+tc.directive)
		require.NoError(t, err)
		require.Equal(t, "heuristic", out.Classification.By)
		require.Equal(t, []core.Unavailable{{Role: "classifier", Reason: tc.reason + "; the heuristic classified"}}, out.StaffUnavailable)
		require.Equal(t, 1, callsOf(out)["classifier sim/clf "+tc.outcome])
		require.Equal(t, deliberate.RoleClassifier, out.Calls[0].Role)
		checkAccounting(t, out)
	}
}

// An estimate plans and stops; a call plans and executes the plan. Both
// classify a question alike, the call's classifier is asked once, and its
// result — what the receipt records — carries the plan's classification,
// lane and classifier call.
func TestPlanThenExecute(t *testing.T) {
	t.Parallel()
	mode := testMode(func(d *core.Deliberation) { d.Staff["classifier"] = core.Staff{Engine: "sim/clf"} })
	for _, tc := range []struct {
		q    string
		lane core.Lane
	}{{openQ, core.LanePanel}, {"What is 2 + 2?", core.LaneExpress}} {
		e := newEngine(t, nil)
		estimate := plan(t, e, mode, tc.q)
		p := plan(t, e, mode, tc.q)
		require.Equal(t, estimate.Classification, p.Classification, tc.q)
		require.Equal(t, "sim/clf", p.Classification.By)
		require.Equal(t, tc.lane, p.Lane)
		require.Len(t, p.Calls, 1)

		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		res, err := e.Execute(ctx, p)
		cancel()
		require.NoError(t, err, tc.q)
		require.Equal(t, p.Classification, res.Classification)
		require.Equal(t, p.Lane, res.Lane)
		require.Equal(t, p.Calls[0], res.Calls[0])
		require.Equal(t, 1, callsOf(res)["classifier sim/clf ok"])
		require.Empty(t, res.StaffUnavailable)
		checkAccounting(t, res)
	}
}

func TestConfigValidation(t *testing.T) {
	t.Parallel()
	_, err := deliberate.New(deliberate.Config{})
	require.Error(t, err)
	require.True(t, strings.Contains(err.Error(), "Catalog"))
	require.False(t, errors.Is(err, deliberate.ErrUpstream))
}

func TestSlowJudgeIsHedged(t *testing.T) {
	t.Parallel()
	e := newEngine(t, func(c *deliberate.Config) { c.HedgeAfter = 50 * time.Millisecond })
	mode := testMode(func(d *core.Deliberation) { d.Critique = core.CritiqueNever })
	start := time.Now()
	res, err := run(t, e, mode, openQ+" [[sim@judge: delay=300s]]")
	require.NoError(t, err)
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, deliberate.JudgedByLLM, res.BestSeatJudgedBy)
	require.Empty(t, res.StaffUnavailable)
	require.Equal(t, map[string]int{
		"seat-1 sim/s1 ok": 1, "seat-2 sim/s2 ok": 1, "seat-3 sim/s3 ok": 1,
		"judge sim/judge cancelled": 1, "judge sim/judgeb ok": 1, "synthesis sim/synth ok": 1,
	}, callsOf(res))
	for _, c := range res.Calls {
		if c.Engine == "sim/judgeb" {
			require.True(t, c.Hedged)
			require.True(t, c.Fallback)
			require.Equal(t, "sim/judge", c.Original)
		}
	}
	checkAccounting(t, res)
}

// TestSynthesisLiftThroughTheEngine: the simulator recognises the engine's
// own critique and synthesis prompts. A revision keeps its engine's
// quality, and the panel's answer is worth the mean of the final round's
// answers plus the configured lift — the truth a test run of the mode is
// measured against.
func TestSynthesisLiftThroughTheEngine(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// s2 always breaks from the panel's conclusion, so a critique round runs.
	prov, err := startProviders(ctx, shared.catalog, sim.Config{TimeScale: timeScale,
		Engines: map[string]sim.EngineProfile{"s2": {Dissent: 1}}, Quality: sim.QualityConfig{SynthesisLift: 0.75}})
	require.NoError(t, err)
	t.Cleanup(func() { prov.Stop(context.Background()) })
	e, err := deliberate.New(deliberate.Config{Catalog: shared.catalog, Caller: prov, Judge: direct.New(), Seed: func() int64 { return 42 }})
	require.NoError(t, err)
	res, err := run(t, e, testMode(func(d *core.Deliberation) { d.ExpressThreshold = 0 }), openQ)
	require.NoError(t, err)
	require.Len(t, res.Rounds, 2, "a critique round ran")
	srv := prov.Simulator()

	synth, ok := srv.Answer(res.Answer)
	require.True(t, ok)
	require.Equal(t, sim.KindSynthesis, synth.Kind)
	require.Equal(t, "synth", synth.Engine)

	first := map[string]float64{} // engine → quality of its answer
	var final []float64
	for _, c := range res.Calls {
		if !strings.HasPrefix(c.Role, "seat-") || c.Outcome != deliberate.OutcomeOK {
			continue
		}
		rec, ok := srv.Answer(c.Content)
		require.True(t, ok, "%s round %d", c.Role, c.Round)
		switch c.Round {
		case 1:
			require.Equal(t, sim.KindAnswer, rec.Kind)
			first[c.Engine] = rec.Quality
		case 2:
			require.Equal(t, sim.KindRevision, rec.Kind)
			require.Equal(t, first[c.Engine], rec.Quality, "a revision keeps its engine's quality")
			final = append(final, rec.Quality)
		}
	}
	require.Len(t, final, 3)
	mean := (final[0] + final[1] + final[2]) / 3
	require.InDelta(t, mean+0.75, synth.Quality, 1e-9)
}
