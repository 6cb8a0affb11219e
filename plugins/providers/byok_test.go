package providers_test

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/plugins/providers"
)

// memBYOK is an in-memory byok.Lookup.
type memBYOK struct {
	mu   sync.Mutex
	recs map[string]*core.ProviderCredential
}

func (m *memBYOK) LookupProviderCredential(_ context.Context, org, provider string) (*core.ProviderCredential, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[org+"/"+provider]
	if !ok {
		return nil, fmt.Errorf("none: %w", core.ErrNotFound)
	}
	return r, nil
}

const (
	orgKey  = "sk-acme-own-openai-key-0123456789"
	orgRole = "arn:aws:iam::111122223333:role/acme-bedrock-ext" // "-ext": the simulated STS demands the external id
)

// newBYOKResolver holds Acme's own OpenAI key and AWS role.
func newBYOKResolver(t *testing.T) *byok.Resolver {
	t.Helper()
	k := make([]byte, 32)
	_, _ = rand.Read(k)
	sealer, err := byok.NewSealer(k)
	require.NoError(t, err)
	key, err := byok.NewKeyCredential(sealer, "org_acme", "openai", orgKey)
	require.NoError(t, err)
	role, err := byok.NewRoleCredential("org_acme", orgRole, "acme-ext-7f3a")
	require.NoError(t, err)
	res, err := byok.NewResolver(byok.ResolverConfig{Store: &memBYOK{recs: map[string]*core.ProviderCredential{
		"org_acme/openai": key, "org_acme/aws": role,
	}}, Sealer: sealer})
	require.NoError(t, err)
	return res
}

// A seat call for an organisation with its own OpenAI key reaches the
// (simulated) provider with that key, and a call for the service (judge,
// synthesis: no organisation) with the service's; the organisation's AWS
// role is assumed through the simulator's STS for a Bedrock engine. Every
// answer says which source served it.
func TestSeatCallsRunOnTheOrganisationsOwnCredentials(t *testing.T) {
	t.Parallel()
	catalog := catalogWithTitan(t)
	ctx := context.Background()
	p, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: sim.Config{TimeScale: 0.02}, BYOK: newBYOKResolver(t)})
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(context.Background()) })

	call := func(engine, org string) *core.SeatAnswer {
		t.Helper()
		ans, err := p.Call(ctx, engine, org, &core.SeatRequest{Messages: []core.Message{{Role: core.RoleUser, Content: "What is 6 * 7?"}}, MaxTokens: 100})
		require.NoError(t, err)
		require.Nil(t, ans.Error, "%s for %q: %+v", engine, org, ans.Error)
		require.Contains(t, ans.Text, "42")
		return ans
	}
	callers := func() map[string]int { return p.Simulator().Stats().Callers }
	own, service := sim.KeyCaller(orgKey), sim.KeyCaller(p.SimulatorKey())

	require.Equal(t, "byok:openai", call("sim/atlas", "org_acme").Source, "a seat call on Acme's own key")
	require.Equal(t, 1, callers()[own], "the simulator saw Acme's key")
	require.Zero(t, callers()[service])

	require.Equal(t, core.SourceService, call("sim/atlas", "").Source, "a judge or synthesis call names no organisation")
	require.Equal(t, 1, callers()[service], "the simulator saw the service's key")
	require.Equal(t, 1, callers()[own])

	require.Equal(t, core.SourceService, call("sim/sonnet", "org_acme").Source, "Acme has no Anthropic key of its own")
	require.Equal(t, core.SourceService, call("sim/atlas", "org_other").Source, "nor has another organisation")
	require.Equal(t, 3, callers()[service])
	require.Equal(t, 1, callers()[own])

	require.Equal(t, "byok:aws", call("sim/titan", "org_acme").Source)
	require.Equal(t, 1, callers()[sim.RoleCaller(orgRole)], "signed with credentials of Acme's assumed role")
	require.Equal(t, core.SourceService, call("sim/titan", "").Source)
	require.Equal(t, 1, callers()[sim.RoleCaller(p.Simulator().AWSAccount().RoleARN)], "signed with the service's role")
	require.Equal(t, 2, p.Simulator().Stats().AssumeRole, "one role each, cached")
	call("sim/titan", "org_acme")
	require.Equal(t, 2, p.Simulator().Stats().AssumeRole)
	require.Equal(t, 2, callers()[sim.RoleCaller(orgRole)])
}

// Without BYOK every call runs on the service's credentials, and the
// simulator accepts no key but its own.
func TestWithoutBYOKEveryCallIsTheServices(t *testing.T) {
	t.Parallel()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	ctx := context.Background()
	p, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: sim.Config{TimeScale: 0.02}})
	require.NoError(t, err)
	t.Cleanup(func() { p.Stop(context.Background()) })
	ans, err := p.Call(ctx, "sim/atlas", "org_acme", &core.SeatRequest{Messages: []core.Message{{Role: core.RoleUser, Content: "What is 6 * 7?"}}})
	require.NoError(t, err)
	require.Nil(t, ans.Error)
	require.Equal(t, core.SourceService, ans.Source)
	require.Equal(t, map[string]int{sim.KeyCaller(p.SimulatorKey()): 1}, p.Simulator().Stats().Callers)
}
