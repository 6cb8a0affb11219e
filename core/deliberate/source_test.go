package deliberate

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// orgCaller records the organisation each engine was called for and answers
// as a bring-your-own-key source would when given one.
type orgCaller struct {
	mu   sync.Mutex
	orgs map[string][]string
}

func (o *orgCaller) Call(_ context.Context, engineID, orgID string, _ *core.SeatRequest) (*core.SeatAnswer, error) {
	o.mu.Lock()
	o.orgs[engineID] = append(o.orgs[engineID], orgID)
	o.mu.Unlock()
	ans := &core.SeatAnswer{Text: "{}", InputTokens: 10, OutputTokens: 5, Finish: core.FinishStop}
	switch {
	case orgID != "" && engineID == "x/alpha":
		ans.Source = core.SourceBYOK("openai")
	case orgID != "":
		ans.Source = "" // the org has no key for this engine: the service's served it, unsaid
	default:
		ans.Source = core.SourceService
	}
	return ans, nil
}

// Seat calls name the organisation and carry the source the caller reports;
// judge, synthesis and classifier calls never name it, so they always run on
// the service's credentials.
func TestOnlySeatCallsNameTheOrganisation(t *testing.T) {
	t.Parallel()
	var engines []core.Engine
	for _, id := range []string{"x/alpha", "x/beta", "x/judge", "x/synth", "x/clf"} {
		engines = append(engines, core.Engine{ID: id, Family: "x", MaxTier: core.TierPro, Adapter: "openai", InputPerMTok: 1_000_000, OutputPerMTok: 2_000_000})
	}
	cat, err := core.NewCatalog(engines, nil)
	require.NoError(t, err)
	oc := &orgCaller{orgs: map[string][]string{}}
	e, err := New(Config{Catalog: cat, Caller: oc, Judge: firstProtocol{}, Seed: func() int64 { return 3 }})
	require.NoError(t, err)
	mode := &core.Mode{ID: "m", Deliberation: core.Deliberation{
		Seats: map[core.Tier][]core.Seat{core.TierPlus: {{Engine: "x/alpha"}, {Engine: "x/beta"}}},
		Staff: map[string]core.Staff{"judge": {Engine: "x/judge"}, "synthesis": {Engine: "x/synth"}, "classifier": {Engine: "x/clf"}},
		// Critique always and a threshold of 0: the panel always convenes.
		Critique: core.CritiqueAlways, MaxRounds: 2,
	}}
	res, err := e.Run(context.Background(), &Request{Mode: mode, Tier: core.TierPlus, OrgID: "org_acme",
		Messages: []core.Message{{Role: core.RoleUser, Content: "Should we rewrite the scheduler?"}}})
	require.NoError(t, err)

	require.Equal(t, []string{"org_acme", "org_acme"}, oc.orgs["x/alpha"])
	require.Equal(t, []string{"org_acme", "org_acme"}, oc.orgs["x/beta"])
	for _, staff := range []string{"x/judge", "x/synth", "x/clf"} {
		require.NotEmpty(t, oc.orgs[staff], staff)
		for _, org := range oc.orgs[staff] {
			require.Empty(t, org, "%s is a staff engine: it runs on the service's credentials", staff)
		}
	}
	var byok, service int
	for _, c := range res.Calls {
		switch {
		case c.Engine == "x/alpha":
			require.Equal(t, "byok:openai", c.Source, "%+v", c)
			require.True(t, core.IsBYOKSource(c.Source))
			byok++
		default:
			require.Equal(t, core.SourceService, c.Source, "%s: an unsaid source is the service's", c.Engine)
			require.False(t, core.IsBYOKSource(c.Source))
			service++
		}
	}
	require.Equal(t, 2, byok)
	require.Equal(t, 2+1+2+1, service) // beta ×2, classifier, judge ×2, synthesis
}
