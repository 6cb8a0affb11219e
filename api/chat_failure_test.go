package api_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/internal/policy"
	"github.com/conclavehq/conclave/internal/tokens"
)

// failingDeliberator fails every deliberation the way the engine does when
// no seat answered but not every seat was unavailable — a state the
// simulator cannot force — after spending money at the providers.
type failingDeliberator struct{}

func (failingDeliberator) Run(context.Context, *deliberate.Request) (*deliberate.Result, error) {
	return &deliberate.Result{Calls: []deliberate.Call{{Role: "seat-1", Cost: 12_345}}}, fmt.Errorf("%w: no seat answered", deliberate.ErrUpstream)
}

// A deliberation that fails upstream answers 502 upstream_provider_error
// and bills nothing, whatever the providers cost.
func TestChatUpstreamFailureIsNotBilled(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	authz, err := policy.New(ctx, policy.Config{})
	require.NoError(t, err)
	store := pgstore.New(pgtest.NewPool(t))
	h, err := api.New(api.Config{}, api.Deps{Store: store, Authz: authz, Catalog: catalog, Ready: store.Ready,
		Deliberator: failingDeliberator{}, CountTokens: tokens.Count})
	require.NoError(t, err)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Upstream"})
	require.NoError(t, err)
	tb := &testBundle{srv: newServer(t, h), store: store, org: org}
	tb.key = tb.newKey(t, &core.CreateKeyParams{})
	cb := &chatBundle{testBundle: tb}

	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", "Should we?", ""))
	requireError(t, r, 502, core.CodeUpstreamProviderError, "api_error")
	cb.requireBalanceMoved(t, core.TrialCredit, 0)
	_, err = store.GetReceipt(ctx, org.ID, r.body["conclave"].(map[string]any)["request_id"].(string))
	require.ErrorIs(t, err, core.ErrNotFound, "a failed call leaves no receipt")
}
