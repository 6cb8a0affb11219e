package deliberate

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func TestParseClassification(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text string
		ok         bool
		score      float64
		depth      core.Depth
		task, risk string
	}{
		{"plain", `{"score":0.5,"depth":"medium","task_type":"analysis","hallucination_risk":"high"}`, true, 0.5, core.DepthMedium, "analysis", "high"},
		{"fenced with prose", "Here:\n```json\n{\"score\": 0.1234}\n```", true, 0.123, core.DepthLight, "open_question", "medium"},
		{"depth follows the score", `{"score":0.9,"depth":"light"}`, true, 0.9, core.DepthDeep, "open_question", "medium"},
		{"no score", `{"answer":"it is hard"}`, false, 0, "", "", ""},
		{"out of range", `{"score":1.5}`, false, 0, "", "", ""},
		{"not json", `score: 0.4`, false, 0, "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, ok := parseClassification(tc.text)
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			require.Equal(t, tc.score, res.Score)
			require.Equal(t, tc.depth, res.Depth)
			require.Equal(t, tc.task, res.TaskType)
			require.Equal(t, tc.risk, res.HallucinationRisk)
		})
	}
}

func TestMedoid(t *testing.T) {
	t.Parallel()
	answers := []*seatOutcome{
		{role: "seat-1", text: "the cat sat on the mat"},
		{role: "seat-2", text: "the cat sat on a mat"},
		{role: "seat-3", text: "dogs bark loudly at night"},
	}
	j := medoid(1, answers, "judge down")
	require.Equal(t, JudgedByHeuristic, j.by)
	require.Equal(t, "seat-1", j.best.role, "ties go to the earlier seat")
	require.Equal(t, map[string]float64{"seat-1": 0.417, "seat-2": 0.417, "seat-3": 0}, j.scores)
	require.Nil(t, j.converged)
}

func TestShuffledIsASeededPermutation(t *testing.T) {
	t.Parallel()
	a, b := shuffled(5, 99), shuffled(5, 99)
	require.Equal(t, a, b)
	require.ElementsMatch(t, []int{0, 1, 2, 3, 4}, a)
}

// fakeCaller answers from a table by engine and records every request.
type fakeCaller struct {
	mu      sync.Mutex
	answers map[string]string
	got     map[string][]*core.SeatRequest
}

func (f *fakeCaller) Call(_ context.Context, engineID, _ string, req *core.SeatRequest) (*core.SeatAnswer, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.got[engineID] = append(f.got[engineID], req)
	return &core.SeatAnswer{Text: f.answers[engineID], InputTokens: 10, OutputTokens: 5, Finish: core.FinishStop}, nil
}

// firstProtocol asks one prompt holding every answer and always scores the
// first answer best, unconverged.
type firstProtocol struct{}

func (firstProtocol) Describe(context.Context) (*core.ProtocolInfo, error) {
	return &core.ProtocolInfo{Name: "first"}, nil
}

func (firstProtocol) Plan(_ context.Context, task *core.JudgeTask) (*core.JudgePlan, error) {
	var b strings.Builder
	for _, a := range task.Answers {
		b.WriteString("[Answer " + a.ID + "]\n" + a.Text + "\n")
	}
	return &core.JudgePlan{Prompts: []core.JudgePrompt{{ID: "p", User: b.String(), JSONOutput: true}}}, nil
}

func (firstProtocol) Score(_ context.Context, in *core.JudgeVerdicts) (*core.JudgeScores, error) {
	f := false
	return &core.JudgeScores{Scores: map[string]float64{in.Task.Answers[0].ID: 0.9}, Best: in.Task.Answers[0].ID, Converged: &f}, nil
}

func TestPromptsAreAnonymised(t *testing.T) {
	t.Parallel()
	engines := []core.Engine{}
	for _, id := range []string{"x/alpha", "x/beta", "x/judge", "x/synth"} {
		engines = append(engines, core.Engine{ID: id, Family: "x", MaxTier: core.TierPro, Adapter: "openai", InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000})
	}
	cat, err := core.NewCatalog(engines, nil)
	require.NoError(t, err)
	fc := &fakeCaller{got: map[string][]*core.SeatRequest{}, answers: map[string]string{
		"x/alpha": "Position one.", "x/beta": "Position two.", "x/judge": "{}", "x/synth": "The one answer.",
	}}
	e, err := New(Config{Catalog: cat, Caller: fc, Judge: firstProtocol{}, Seed: func() int64 { return 3 }})
	require.NoError(t, err)
	mode := &core.Mode{ID: "m", Deliberation: core.Deliberation{
		Seats:    map[core.Tier][]core.Seat{core.TierPlus: {{Engine: "x/alpha"}, {Engine: "x/beta"}}},
		Staff:    map[string]core.Staff{"judge": {Engine: "x/judge"}, "synthesis": {Engine: "x/synth"}},
		Critique: core.CritiqueAlways, MaxRounds: 2,
	}}
	q := "Should we rewrite the scheduler?"
	res, err := e.Run(context.Background(), &Request{Mode: mode, Tier: core.TierPlus, Messages: []core.Message{{Role: core.RoleUser, Content: q}}})
	require.NoError(t, err)
	require.Equal(t, "The one answer.", res.Answer)
	require.Len(t, res.Rounds, 2)
	require.Len(t, res.Calls, 2+1+2+1+1)
	require.Equal(t, core.Micros(7*(10+10)), res.Cost) // 10 in at $1 + 5 out at $2 = 20 micros a call

	// Round 2: alpha sees its own answer and beta's, labelled, no engine names.
	r2 := fc.got["x/alpha"][1]
	require.Equal(t, []core.Message{{Role: core.RoleUser, Content: q}, {Role: core.RoleAssistant, Content: "Position one."}}, r2.Messages[:2])
	require.Contains(t, r2.Messages[2].Content, "[Answer A]\nPosition two.\n")
	require.NotContains(t, r2.Messages[2].Content, "Position one.")
	for id, reqs := range fc.got {
		for _, req := range reqs {
			for _, m := range append(req.Messages, core.Message{Content: req.System}) {
				require.NotContains(t, m.Content, "x/", "a prompt to %s names an engine", id)
			}
		}
	}
	require.True(t, fc.got["x/judge"][0].JSONOutput)
	require.Contains(t, fc.got["x/synth"][0].Messages[0].Content, "Question:\n"+q)
}

// An observer is told every step of a deliberation in order — classified,
// then each round started, its seats answered and its judgment, then
// synthesis — and the deliberation does and costs exactly what it does
// unobserved.
func TestObserverIsToldEveryStep(t *testing.T) {
	t.Parallel()
	tb := setup(t, nil)
	mode := twoSeats(func(d *core.Deliberation) { d.MaxRounds = 2 })
	var mu sync.Mutex
	var seen []Progress
	req := ask(mode, 0)
	req.Observe = func(p Progress) {
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
	}
	observed, err := tb.e.Run(context.Background(), req)
	require.NoError(t, err)
	var stages []string
	for _, p := range seen {
		s := string(p.Stage)
		if p.Round > 0 && p.Stage != StageSynthesising {
			s = fmt.Sprintf("%s %d", s, p.Round)
		}
		stages = append(stages, s)
	}
	require.Equal(t, []string{
		"classified",
		"round_started 1", "seat_answered 1", "seat_answered 1", "judged 1",
		"round_started 2", "seat_answered 2", "seat_answered 2", "judged 2",
		"synthesising",
	}, stages)
	require.Equal(t, core.DepthLight, seen[0].Depth)
	require.Equal(t, core.LanePanel, seen[0].Lane)
	require.Equal(t, 2, seen[1].Seats)
	require.ElementsMatch(t, []int{1, 2}, []int{seen[2].Answered, seen[3].Answered})

	plain, err := tb.e.Run(context.Background(), ask(mode, 0))
	require.NoError(t, err)
	require.Equal(t, plain.Cost, observed.Cost)
	require.Equal(t, plain.Answer, observed.Answer)
	require.Len(t, observed.Calls, len(plain.Calls))
}
