package execute

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// The baseline is the mode's most capable seat at the tier: highest tier,
// then highest output price, then lowest id; only the tier's own row counts.
func TestBaselineIsTheMostCapableSeat(t *testing.T) {
	engines := map[string]*core.Engine{
		"a/small": {ID: "a/small", MaxTier: core.TierPlus, OutputPerMTok: 1},
		"b/big":   {ID: "b/big", MaxTier: core.TierPlus, OutputPerMTok: 9},
		"c/big":   {ID: "c/big", MaxTier: core.TierPlus, OutputPerMTok: 9},
		"d/pro":   {ID: "d/pro", MaxTier: core.TierPro, OutputPerMTok: 2},
	}
	m := &core.Mode{ID: "acme-panl", Deliberation: core.Deliberation{Seats: map[core.Tier][]core.Seat{
		core.TierPlus: {{Engine: "a/small"}, {Engine: "c/big"}, {Engine: "b/big"}},
		core.TierPro:  {{Engine: "a/small"}, {Engine: "d/pro"}},
	}}}
	e, err := Baseline(m, core.TierPlus, engines)
	require.NoError(t, err)
	require.Equal(t, "b/big", e.ID, "price first, then the id breaks the tie")
	e, err = Baseline(m, core.TierPro, engines)
	require.NoError(t, err)
	require.Equal(t, "d/pro", e.ID, "a higher tier beats a higher price")
	_, err = Baseline(m, core.TierExperience, engines)
	require.Error(t, err, "no row at the tier")

	require.Equal(t, core.TierPlus, BaselineTier(m, core.TierPlus, false))
	require.Equal(t, core.TierPro, BaselineTier(m, core.TierPlus, true), "punch_up: the next tier with seats")
	require.Equal(t, core.TierPlus, BaselineTier(m, core.TierExperience, true), "the first tier above with seats")
	require.Equal(t, core.TierPro, BaselineTier(m, core.TierPro, true), "none above: the question's own")
}

// A stored judgment reaches core/bench with the mode's position as the
// judge read it and the outcome its verdict says.
func TestJudgmentsAsBenchReadsThem(t *testing.T) {
	j := &runs.Judgment{Judge: "nova_pro", Repeat: 2, Order: []runs.Side{runs.SideBaseline, runs.SideMode},
		Ruling: runs.Ruling{Verdict: runs.VerdictMode}}
	got, err := judgmentOf(4, j, bench.Pairwise)
	require.NoError(t, err)
	require.Equal(t, bench.Judgment{Question: 4, Judge: "nova_pro", Repeat: 2, ModePosition: 2, Outcome: bench.ModeWin}, got)
	for v, want := range map[runs.Verdict]bench.Outcome{runs.VerdictBaseline: bench.BaselineWin, runs.VerdictTie: bench.Tie,
		runs.VerdictMissing: bench.Missing} {
		j.Verdict = v
		got, err := judgmentOf(0, j, bench.Pairwise)
		require.NoError(t, err)
		require.Equal(t, want, got.Outcome, v)
	}
	j.Verdict = runs.VerdictBaseline
	got, err = judgmentOf(1, j, bench.Plurality)
	require.NoError(t, err)
	require.Equal(t, 1, got.Vote, "a plurality vote names the position voted for")
	require.Equal(t, 1, got.BaselinePosition)
	require.Equal(t, 2, got.ModePosition)
	_, err = judgmentOf(0, &runs.Judgment{Order: []runs.Side{runs.SideBaseline}}, bench.Pairwise)
	require.Error(t, err)
}

func TestVerdictOfScores(t *testing.T) {
	require.Equal(t, runs.VerdictMode, verdictOf(&core.JudgeScores{Scores: map[string]float64{"mode": 1, "baseline": 0}}))
	require.Equal(t, runs.VerdictBaseline, verdictOf(&core.JudgeScores{Scores: map[string]float64{"mode": 0, "baseline": 1}}))
	require.Equal(t, runs.VerdictTie, verdictOf(&core.JudgeScores{Scores: map[string]float64{"mode": 0.5, "baseline": 0.5}}))
}

// Layout alone does not tell answers apart.
func TestNormalise(t *testing.T) {
	require.Equal(t, "a\n\nb", normalise("  a  \r\n\r\n\r\n\nb\t\n\n"))
	b, _ := json.Marshal(normalise("x"))
	require.Equal(t, `"x"`, string(b))
}
