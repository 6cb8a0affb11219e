package classify_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
)

func classifyText(t *testing.T, q string) *classify.Result {
	t.Helper()
	r, err := classify.Heuristic{}.Classify(context.Background(), []core.Message{{Role: core.RoleUser, Content: q}})
	require.NoError(t, err)
	return r
}

func TestHeuristicBands(t *testing.T) {
	t.Parallel()
	cases := []struct {
		q       string
		task    string
		depth   core.Depth
		verdict string
	}{
		{"What is 17 * 23?", classify.TaskArithmetic, core.DepthLight, classify.LikelyHurts},
		{"12 + 30", classify.TaskArithmetic, core.DepthLight, classify.LikelyHurts},
		{"What is the capital of France?", classify.TaskLookup, core.DepthLight, classify.LikelyHurts},
		{"Convert 3 miles to kilometres.", classify.TaskFormatting, core.DepthLight, classify.LikelyHurts},
		{"Repeat after me word for word: the quick brown fox.", classify.TaskVerbatim, core.DepthLight, classify.LikelyHurts},
		{
			"We are a twelve-person team running a monolith on Postgres. Should we split it into microservices this year, " +
				"given the trade-off between deployment independence and operational overhead? Compare the risks and recommend a strategy.",
			classify.TaskJudgement, core.DepthDeep, classify.LikelyHelps,
		},
	}
	for _, tc := range cases {
		r := classifyText(t, tc.q)
		require.Equal(t, tc.task, r.TaskType, tc.q)
		require.Equal(t, tc.depth, r.Depth, "%q scored %v", tc.q, r.Score)
		require.Equal(t, tc.verdict, r.Value.Verdict, tc.q)
		require.Equal(t, "heuristic", r.Value.Basis)
		require.Contains(t, r.Value.Evidence, "task_type="+tc.task)
		require.GreaterOrEqual(t, r.Score, 0.0)
		require.LessOrEqual(t, r.Score, 1.0)
	}
}

func TestHeuristicIsDeterministicAndMonotoneInLength(t *testing.T) {
	t.Parallel()
	q := "Explain why the sky is blue."
	a, b := classifyText(t, q), classifyText(t, q)
	require.Equal(t, a, b)
	long := classifyText(t, q+" "+strings.Repeat("Consider scattering, wavelength and the observer's angle. ", 30))
	require.Greater(t, long.Score, a.Score, "more context scores higher")
}

func TestHeuristicHallucinationRisk(t *testing.T) {
	t.Parallel()
	require.Equal(t, "high", classifyText(t, "Cite the exact population of Lyon in 1901 with a source.").HallucinationRisk)
	require.Equal(t, "low", classifyText(t, "Write a poem about rain.").HallucinationRisk)
}

func TestDepthFor(t *testing.T) {
	t.Parallel()
	require.Equal(t, core.DepthLight, classify.DepthFor(0))
	require.Equal(t, core.DepthLight, classify.DepthFor(0.349))
	require.Equal(t, core.DepthMedium, classify.DepthFor(0.35))
	require.Equal(t, core.DepthMedium, classify.DepthFor(0.649))
	require.Equal(t, core.DepthDeep, classify.DepthFor(0.65))
	require.Equal(t, core.DepthDeep, classify.DepthFor(1))
}

func FuzzHeuristic(f *testing.F) {
	f.Add("What is 2+2?")
	f.Add("Should we migrate? ```go\nfunc main(){}\n```")
	f.Add("\xff\xfe")
	f.Fuzz(func(t *testing.T, q string) {
		r, err := classify.Heuristic{}.Classify(context.Background(), []core.Message{{Role: core.RoleUser, Content: q}})
		if err != nil {
			t.Fatal(err)
		}
		if r.Score < 0 || r.Score > 1 || r.Depth != classify.DepthFor(r.Score) || r.TaskType == "" || r.Value.Verdict == "" {
			t.Fatalf("bad result for %q: %+v", q, r)
		}
	})
}
