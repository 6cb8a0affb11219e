package execute

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/bank"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// promptedJudge is a judge engine that keeps the organisation each call
// named and the prompt it was sent, and votes for the first answer.
type promptedJudge struct{ orgs, prompts []string }

func (j *promptedJudge) Call(_ context.Context, _, org string, req *core.SeatRequest) (*core.SeatAnswer, error) {
	j.orgs, j.prompts = append(j.orgs, org), append(j.prompts, req.Messages[0].Content)
	return &core.SeatAnswer{Text: "1"}, nil
}

// showsReference is firstWins with the task's reference answer, when it
// has one, above the answers.
type showsReference struct{ firstWins }

func (showsReference) Plan(ctx context.Context, t *core.JudgeTask) (*core.JudgePlan, error) {
	plan, err := firstWins{}.Plan(ctx, t)
	if err == nil && t.Reference != "" {
		plan.Prompts[0].User = "[Reference answer]\n" + t.Reference + "\n" + plan.Prompts[0].User
	}
	return plan, err
}

// A verifiable item's judge reads its reference answer; an open item's
// has none to read. Judges run on the service's keys: no organisation.
func TestJudgesReadTheReferenceOfVerifiableItemsOnly(t *testing.T) {
	t.Parallel()
	items, err := bank.Draw(bank.Version, 3, bank.Counts{Light: 2})
	require.NoError(t, err)
	judge := &promptedJudge{}
	p := &Panel{Catalog: testCatalog(t), Caller: judge,
		Protocols: map[runs.Protocol]core.Protocol{runs.ProtocolPairwise: showsReference{}},
		Engines:   map[runs.Judge]string{"nova_pro": "sim/nova-pro"}}
	kinds := map[bank.Kind]bool{}
	for _, it := range items {
		kinds[it.Kind] = true
		r, err := p.Judge(context.Background(), &runs.JudgeRequest{
			Batch:    &runs.Batch{ID: "b1", Plan: &runs.Plan{Protocol: runs.ProtocolPairwise}},
			Question: &runs.Question{Index: 0, QuestionID: it.ID},
			Judge:    "nova_pro", Repeat: 1, Order: []runs.Side{runs.SideMode, runs.SideBaseline},
			Answers: map[runs.Side]*runs.Answer{runs.SideMode: {Text: "Answer: 4"}, runs.SideBaseline: {Text: "Answer: 5"}},
		})
		require.NoError(t, err)
		require.Equal(t, runs.VerdictMode, r.Verdict)
		prompt := judge.prompts[len(judge.prompts)-1]
		if it.Kind == bank.Verifiable {
			require.Contains(t, prompt, "[Reference answer]\n"+it.Answer, it.ID)
		} else {
			require.NotContains(t, prompt, "[Reference answer]", it.ID)
		}
	}
	require.Len(t, kinds, 2, "one verifiable and one open item")
	require.Equal(t, []string{"", ""}, judge.orgs, "the service's keys")
}
