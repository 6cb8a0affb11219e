package jobs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/genie"
)

// River runs the assistant's history reap: turns older than the retention
// are deleted, newer ones kept, whoever's conversation they are in.
func TestRiverReapsTheAssistantsHistory(t *testing.T) {
	t.Parallel()
	b := setup(t)
	org, _, err := b.store.CreateOrg(b.ctx, &core.CreateOrgParams{Name: "Genie Reap"})
	require.NoError(t, err)
	now := time.Now()
	require.NoError(t, b.store.AppendTurns(b.ctx, org.ID, "key:k1", "conclave-standard", []genie.Turn{
		{Role: "user", Content: "old question", At: now.Add(-49 * time.Hour)},
		{Role: "assistant", Content: "old answer", At: now.Add(-49 * time.Hour)},
		{Role: "user", Content: "new question", At: now.Add(-time.Hour)},
	}))
	require.NoError(t, b.store.AppendTurns(b.ctx, org.ID, "person:p1", "conclave-standard", []genie.Turn{
		{Role: "user", Content: "another's old question", At: now.Add(-72 * time.Hour)},
	}))

	r := b.newRunner(t, Config{GenieHistoryInterval: time.Second, GenieHistoryRetention: 48 * time.Hour})
	b.start(t, r)
	require.Eventually(t, func() bool { return b.completed(t, GenieHistoryReapArgs{}.Kind()) > 0 }, 20*time.Second, 50*time.Millisecond)
	turns, err := b.store.Turns(b.ctx, org.ID, "key:k1", "conclave-standard", 10)
	require.NoError(t, err)
	require.Len(t, turns, 1)
	require.Equal(t, "new question", turns[0].Content)
	turns, err = b.store.Turns(b.ctx, org.ID, "person:p1", "conclave-standard", 10)
	require.NoError(t, err)
	require.Empty(t, turns)
	require.Contains(t, b.logs.String(), "reaped the assistant's history")
}
