package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
)

// failingDeliberator fails every deliberation the way the engine does when
// no seat answered but not every seat was unavailable — a state the
// simulator cannot force — after spending money at the providers.
type failingDeliberator struct{}

func (failingDeliberator) Plan(_ context.Context, req *deliberate.Request) (*deliberate.Plan, error) {
	return &deliberate.Plan{Request: *req, Lane: core.LanePanel}, nil
}

func (failingDeliberator) Execute(context.Context, *deliberate.Plan) (*deliberate.Result, error) {
	return &deliberate.Result{Calls: []deliberate.Call{{Role: "seat-1", Cost: 12_345}}}, fmt.Errorf("%w: no seat answered", deliberate.ErrUpstream)
}

// A deliberation that fails upstream answers 502 upstream_provider_error
// and bills nothing, whatever the providers cost.
func TestChatUpstreamFailureIsNotBilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cb := setupWith(t, "Upstream", func(p *parts) { p.deliberator = failingDeliberator{} })
	store, org := cb.store, cb.org

	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", "Should we?", ""))
	requireError(t, r, 502, core.CodeUpstreamProviderError, "api_error")
	cb.requireBalanceMoved(t, core.TrialCredit, 0)
	_, err := store.GetReceipt(ctx, org.ID, r.body["conclave"].(map[string]any)["request_id"].(string))
	require.ErrorIs(t, err, core.ErrNotFound, "a failed call leaves no receipt")
}
