package callstest_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/calls"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/internal/tokens"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/policies"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

type testBundle struct {
	catalog *core.Catalog
	engine  *deliberate.Engine
	store   *pgstore.Store
	access  *access.Service
	calls   *calls.Service
	org     *core.Org
	secret  string
}

// setup builds the service over a fresh database. Options change its
// dependencies before it starts.
func setup(t *testing.T, opts ...func(*calls.Deps, *pgstore.Store)) *testBundle {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	store := pgstore.New(pgtest.NewPool(t))
	authz, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)
	prov, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: sim.Config{TimeScale: 0.02}, Egress: egress.Config{MaxAttempts: 1}})
	require.NoError(t, err)
	t.Cleanup(func() { prov.Stop(context.Background()) })
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New()})
	require.NoError(t, err)
	acc, err := access.New(access.Config{}, store, authz, store)
	require.NoError(t, err)
	deps := calls.Deps{
		Access: acc, Admission: store, Receipts: store, Outcomes: store,
		Catalog: catalog, Deliberator: engine, TokensOver: tokens.Over,
	}
	for _, o := range opts {
		o(&deps, store)
	}
	svc, err := calls.New(calls.Config{}, deps)
	require.NoError(t, err)
	require.NoError(t, svc.Start(ctx))
	t.Cleanup(svc.Stop)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Carrier Org"})
	require.NoError(t, err)
	secret, hash := core.NewKeySecret(false)
	_, err = store.CreateKey(ctx, &core.CreateKeyParams{OrgID: org.ID, Hash: hash, Hint: core.KeyHint(secret)})
	require.NoError(t, err)
	return &testBundle{catalog: catalog, engine: engine, store: store, access: acc, calls: svc, org: org, secret: secret}
}

// A carrier authenticates a key, parses arguments it received as JSON and
// runs a billed deliberation through the service: the money moves once, the
// receipt is kept, and a repeat of the idempotency key replays the stored
// completion without running or billing again.
func TestABilledDeliberationWithoutHTTP(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	p, err := tb.access.Authenticate(ctx, tb.secret)
	require.NoError(t, err)
	var in calls.ChatInput
	require.NoError(t, json.Unmarshal([]byte(`{"model":"conclave-standard",
		"messages":[{"role":"user","content":"Should we adopt trunk-based development? Compare the risks."}]}`), &in))
	req, err := calls.ParseChat(&in)
	require.NoError(t, err)
	req.IdempotencyKey = "carrier-1"

	res, err := tb.calls.Chat(ctx, p, calls.Call{RequestID: core.NewID("req"), Endpoint: "test:deliberate"}, req)
	require.NoError(t, err)
	require.Nil(t, res.Replay)
	comp := res.Completion
	require.NotEmpty(t, comp.Answer)
	require.True(t, comp.Panel.Persisted)
	billed := core.Micros(comp.Panel.BilledUSD)
	require.Positive(t, billed)

	bal, err := tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit-billed, bal.Balance, "billed exactly once")
	require.Zero(t, bal.Held)
	ans, err := tb.calls.Receipt(ctx, p, comp.Panel.RequestID)
	require.NoError(t, err)
	require.Equal(t, billed, ans.Receipt.Billed)
	require.Equal(t, comp.Panel.ModeConfigHash, ans.Receipt.ModeConfigHash)
	require.Nil(t, comp.Panel.ModeVersion, "a configured mode has no version")
	require.Zero(t, ans.Receipt.ModeVersion)

	again, err := tb.calls.Chat(ctx, p, calls.Call{RequestID: core.NewID("req")}, req)
	require.NoError(t, err)
	require.NotNil(t, again.Replay)
	require.Equal(t, comp.Panel.RequestID, again.Replay.RequestID)
	require.Equal(t, comp.Answer, again.Replay.Completion.Answer)
	bal, err = tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit-billed, bal.Balance, "the replay billed nothing")

	// Refusals are the spec's codes, as *core.Error.
	_, err = tb.access.Authenticate(ctx, "ccl_live_nope")
	require.Equal(t, core.CodeInvalidAPIKey, core.AsError(err).Code)
	bad := *req
	bad.Model = "gpt-4o"
	_, err = tb.calls.Chat(ctx, p, calls.Call{RequestID: core.NewID("req")}, &bad)
	require.Equal(t, core.CodeModelNotFound, core.AsError(err).Code)
}

// The service's life: a service not started takes no call (503, nothing
// held), Stop is safe before Start and twice, and a stopped service takes
// no call either.
func TestServiceLifecycle(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	p, err := tb.access.Authenticate(ctx, tb.secret)
	require.NoError(t, err)
	req := &calls.ChatParams{Model: "conclave-standard", Tier: core.DefaultTier,
		Messages: []core.Message{{Role: core.RoleUser, Content: "What is 2 + 2?"}}}

	idle, err := calls.New(calls.Config{}, calls.Deps{
		Access: tb.access, Admission: tb.store, Receipts: tb.store,
		Catalog: tb.catalog, Deliberator: tb.engine, TokensOver: tokens.Over,
	})
	require.NoError(t, err)
	_, err = idle.Chat(ctx, p, calls.Call{RequestID: core.NewID("req")}, req)
	require.Equal(t, core.CodeServiceUnavailable, core.AsError(err).Code, "not started")
	idle.Stop()
	idle.Stop()

	tb.calls.Stop()
	tb.calls.Stop()
	_, err = tb.calls.Chat(ctx, p, calls.Call{RequestID: core.NewID("req")}, req)
	require.Equal(t, core.CodeServiceUnavailable, core.AsError(err).Code, "stopped")
	bal, err := tb.store.GetBalance(ctx, tb.org.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit, bal.Balance)
	require.Zero(t, bal.Held, "a refused call holds nothing")
}

// A caller who leaves while its prompt is counted stops the count: Chat
// returns the context's error, not a refusal, and admits nothing.
func TestCallerLeavingWhileCountingStopsTheCount(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	p, err := tb.access.Authenticate(context.Background(), tb.secret)
	require.NoError(t, err)
	ctx, leave := context.WithCancel(context.Background())
	defer leave()
	counted := false
	svc, err := calls.New(calls.Config{}, calls.Deps{
		Access: tb.access, Admission: tb.store, Receipts: tb.store,
		Catalog: tb.catalog, Deliberator: tb.engine,
		TokensOver: func(ctx context.Context, m []core.Message, limit int) (int, bool, error) {
			counted = true
			leave()
			return tokens.Over(ctx, m, limit)
		},
	})
	require.NoError(t, err)
	require.NoError(t, svc.Start(context.Background()))
	t.Cleanup(svc.Stop)
	// Within the limit of 8,000 tokens, but more bytes: it is counted.
	req := &calls.ChatParams{Model: "conclave-standard", Tier: core.DefaultTier,
		Messages: []core.Message{{Role: core.RoleUser, Content: strings.Repeat("Why is the sky blue? ", 500)}}}

	_, err = svc.Chat(ctx, p, calls.Call{RequestID: core.NewID("req")}, req)
	require.True(t, counted)
	require.ErrorIs(t, err, context.Canceled)
	var refusal *core.Error
	require.False(t, errors.As(err, &refusal), "not a refusal: %v", err)
	bal, err := tb.store.GetBalance(context.Background(), tb.org.ID)
	require.NoError(t, err)
	require.Equal(t, core.TrialCredit, bal.Balance)
	require.Zero(t, bal.Held, "nothing admitted, nothing held")
	require.Zero(t, svc.Running())
}
