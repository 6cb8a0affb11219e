package deliberatetest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
)

// On the built-in configuration — what `conclave serve` runs with no
// provider keys — the simulated classifier engine answers the classifier's
// prompt: no deliberation of a built-in mode reports the classifier
// unavailable, and the engine classifies on the heuristic's scale, exactly
// as the fallback would, so that a simulated deployment's lanes and
// surcharges do not depend on which of the two answered.
func TestBuiltinClassifierAnswers(t *testing.T) {
	t.Parallel()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	cat, err := cfg.Catalog()
	require.NoError(t, err)
	ctx := context.Background()
	prov, err := startProviders(ctx, cat, sim.Config{TimeScale: timeScale})
	require.NoError(t, err)
	defer prov.Stop(ctx)
	e, err := deliberate.New(deliberate.Config{Catalog: cat, Caller: prov, Judge: direct.New(), Seed: func() int64 { return 42 }})
	require.NoError(t, err)

	questions := []string{
		"What is 2 + 2?",
		openQ,
		"Should we move our payments platform to a new cloud provider? Compare the risks, the migration strategy and the costs, and recommend what to do.",
	}
	for _, mode := range cat.Modes() {
		classifier := mode.Deliberation.Staff[deliberate.RoleClassifier].Engine
		require.NotEmpty(t, classifier, "built-in mode %s has a classifier engine", mode.ID)
		for _, q := range questions {
			msgs := []core.Message{{Role: core.RoleUser, Content: q}}
			rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			res, err := e.Run(rctx, &deliberate.Request{Mode: mode, Tier: core.TierPlus, Messages: msgs})
			cancel()
			require.NoError(t, err, "%s: %q", mode.ID, q)
			for _, u := range res.StaffUnavailable {
				require.NotEqual(t, deliberate.RoleClassifier, u.Role, "%s: %q: %s", mode.ID, q, u.Reason)
			}
			require.Equal(t, classifier, res.Classification.By, "%s: %q", mode.ID, q)
			want, err := classify.Heuristic{}.Classify(ctx, msgs)
			require.NoError(t, err)
			require.Equal(t, deliberate.Classification{Score: want.Score, Depth: want.Depth, TaskType: want.TaskType,
				HallucinationRisk: want.HallucinationRisk, By: classifier}, res.Classification, "%s: %q", mode.ID, q)
		}
	}
}
