package api_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/adapters/sim"
	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/deliberate"
	"github.com/conclavehq/conclave/internal/config"
	"github.com/conclavehq/conclave/internal/pgstore"
	"github.com/conclavehq/conclave/internal/pgtest"
	"github.com/conclavehq/conclave/internal/tokens"
	"github.com/conclavehq/conclave/plugins/byok"
	"github.com/conclavehq/conclave/plugins/egress"
	"github.com/conclavehq/conclave/plugins/protocol/direct"
	"github.com/conclavehq/conclave/plugins/providers"
	"github.com/conclavehq/conclave/policies"
)

// chatBundle is a server that deliberates for real: the engine, the
// simulated provider through the real adapters and egress, Postgres.
type chatBundle struct {
	*testBundle
	prov    *providers.Providers
	sealer  *byok.Sealer
	catalog *core.Catalog
}

func (cb *chatBundle) catalogEngine(id string) (*core.Engine, bool) { return cb.catalog.Engine(id) }

// simCalls is how many model calls the simulated provider has answered.
func (cb *chatBundle) simCalls() int { return cb.prov.Simulator().Stats().Total() }

func setupChat(t *testing.T, changes ...func(*config.Config)) *chatBundle {
	t.Helper()
	return setupChatWith(t, nil, changes...)
}

// setupChatWith is setupChat whose dependencies deps may change (wrap the
// store, say) before the server is built; nil changes nothing.
func setupChatWith(t *testing.T, deps func(*parts), changes ...func(*config.Config)) *chatBundle {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	for _, f := range changes {
		f(cfg)
	}
	// A mode without pro seats, for the tier check.
	plusOnly := cfg.Modes[0]
	plusOnly.Key, plusOnly.ID, plusOnly.Ticker, plusOnly.Name = "plus-only", "plus-only", "CNCL:PLUS", "Plus only"
	plusOnly.Seats = map[string][]core.Seat{"plus": cfg.Modes[0].Seats["plus"]}
	cfg.Modes = append(cfg.Modes, plusOnly)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	store := pgstore.New(pgtest.NewPool(t))
	// Organisations' own provider keys, sealed under a key of this test.
	sealingKey := make([]byte, 32)
	_, _ = rand.Read(sealingKey)
	sealer, err := byok.NewSealer(sealingKey)
	require.NoError(t, err)
	resolver, err := byok.NewResolver(byok.ResolverConfig{Store: store, Sealer: sealer})
	require.NoError(t, err)
	// Retries off, so a directed failure fails once and the backup runs.
	prov, err := providers.Start(ctx, providers.Config{Catalog: catalog, Simulator: sim.Config{TimeScale: 0.02}, Egress: egress.Config{MaxAttempts: 1}, BYOK: resolver})
	require.NoError(t, err)
	t.Cleanup(func() { prov.Stop(context.Background()) })
	engine, err := deliberate.New(deliberate.Config{Catalog: catalog, Caller: prov, Judge: direct.New()})
	require.NoError(t, err)
	authz, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)
	pt := &parts{store: store, authz: authz, catalog: catalog, deliberator: engine, limits: limits{
		KeyCacheTTL: cfg.Auth.KeyCacheTTL,
		RPM:         cfg.Limits.RPM, Concurrency: cfg.Limits.Concurrency, Lease: cfg.Limits.Lease,
		RetryAfter: cfg.Limits.ConcurrencyRetryAfter, ActivationAllowance: core.Micros(cfg.Limits.ActivationAllowanceUSD),
	}}
	if deps != nil {
		deps(pt)
	}
	h, _ := pt.serve(t)
	srv := newServer(t, h)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Chat Org"})
	require.NoError(t, err)
	tb := &testBundle{srv: srv, store: store, org: org}
	tb.key = tb.newKey(t, &core.CreateKeyParams{})
	return &chatBundle{testBundle: tb, prov: prov, sealer: sealer, catalog: catalog}
}

// setupWith serves the built-in catalog on a fresh database with the
// dependencies deps fills in (a stand-in deliberator, say), and gives an
// organisation with its trial credit and a key.
func setupWith(t *testing.T, orgName string, deps func(*parts)) *chatBundle {
	t.Helper()
	ctx := context.Background()
	cfg, err := config.Builtin()
	require.NoError(t, err)
	catalog, err := cfg.Catalog()
	require.NoError(t, err)
	authz, err := policies.New(ctx, policies.Config{})
	require.NoError(t, err)
	store := pgstore.New(pgtest.NewPool(t))
	pt := &parts{store: store, authz: authz, catalog: catalog}
	deps(pt)
	h, _ := pt.serve(t)
	org, _, err := store.CreateOrg(ctx, &core.CreateOrgParams{Name: orgName})
	require.NoError(t, err)
	tb := &testBundle{srv: newServer(t, h), store: store, org: org}
	tb.key = tb.newKey(t, &core.CreateKeyParams{})
	return &chatBundle{testBundle: tb}
}

func chatBody(model, question string, extra string) string {
	q, _ := json.Marshal(question)
	return `{"model":"` + model + `","messages":[{"role":"user","content":` + string(q) + `}]` + extra + `}`
}

// requireBalanceMoved checks the balance moved by exactly billed and that
// it still equals its journal.
func (cb *chatBundle) requireBalanceMoved(t *testing.T, before core.Micros, billed core.Micros) {
	t.Helper()
	ctx := context.Background()
	bal, err := cb.store.GetBalance(ctx, cb.org.ID)
	require.NoError(t, err)
	require.Equal(t, before-billed, bal.Balance, "the balance moved by exactly the bill")
	require.Zero(t, bal.Held, "no hold is left behind")
	postings, err := cb.store.ListPostings(ctx, cb.org.ID)
	require.NoError(t, err)
	var legs core.Micros
	for _, p := range postings {
		var sum core.Micros
		for _, l := range p.Legs {
			sum += l.Amount
			if l.Account == core.AccountOrgBalance {
				legs += l.Amount
			}
		}
		require.Zero(t, sum)
	}
	require.Equal(t, bal.Balance, legs, "balance equals journal")
}

// The official OpenAI Go client, with only the base URL changed, gets a
// synthesized answer and can read the panel block; the call is billed
// exactly and its receipt is stored.
func TestChatCompletionWithTheOpenAIClient(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	ctx := context.Background()
	client := openai.NewClient(option.WithBaseURL(cb.srv.URL+"/v1/"), option.WithAPIKey(cb.key), option.WithMaxRetries(0))
	res, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
		Model: "conclave-standard",
		Messages: []openai.ChatCompletionMessageParamUnion{
			openai.UserMessage("Should a twelve-person team split its monolith into microservices this year? Compare the trade-offs and recommend a strategy."),
		},
	})
	require.NoError(t, err)
	require.Equal(t, "conclave-standard", res.Model)
	require.Len(t, res.Choices, 1)
	require.NotEmpty(t, res.Choices[0].Message.Content)
	require.Contains(t, []string{"stop", "length", "cost_cap"}, string(res.Choices[0].FinishReason))
	require.Positive(t, res.Usage.PromptTokens)

	raw, ok := res.JSON.ExtraFields["panel"]
	require.True(t, ok, "the panel block rides along")
	var panel map[string]any
	require.NoError(t, json.Unmarshal([]byte(raw.Raw()), &panel))
	for _, f := range []string{"request_id", "mode", "mode_key", "mode_config_hash", "rounds", "seats", "seats_answered", "converged",
		"remaining_friction", "contested_passage", "best_seat_rationale", "best_seat_judged_by", "deliberation",
		"divergence_first_round", "divergence_final_round", "capped", "surcharge_usd", "platform_fee_usd", "cap_credit_usd",
		"billed_usd", "latency_ms", "engines", "substitutions", "persisted"} {
		require.Contains(t, panel, f)
	}
	require.Equal(t, "panel", panel["lane"])
	require.Equal(t, true, panel["persisted"])
	require.Equal(t, "llm", panel["best_seat_judged_by"])
	require.GreaterOrEqual(t, panel["rounds"], 1.0)
	require.Equal(t, 3.0, panel["seats"])
	require.NotEmpty(t, panel["engines"])
	for _, e := range panel["engines"].([]any) {
		require.True(t, strings.HasPrefix(e.(string), "sim/"), "engines name the engines that saw the prompt")
	}
	require.NotContains(t, res.Choices[0].Message.Content, "sim/", "the answer is not attributed to engines")

	billed, err := core.ParseUSD(json.Number(jsonNumber(panel["billed_usd"])).String())
	require.NoError(t, err)
	require.Positive(t, billed)
	surcharge := panel["surcharge_usd"].(float64)
	require.Contains(t, []float64{0.05, 0.10, 0.15}, surcharge)
	cb.requireBalanceMoved(t, core.TrialCredit, billed)

	rc, err := cb.store.GetReceipt(ctx, cb.org.ID, panel["request_id"].(string))
	require.NoError(t, err)
	require.Equal(t, billed, rc.Billed)
	require.Equal(t, "conclave-standard", rc.Mode)
	require.NotEmpty(t, rc.Seats)
	require.NotEmpty(t, rc.Staff)
	var fees, costs core.Micros
	for _, c := range append(rc.Seats, rc.Staff...) {
		costs += c.RealCost
		fees += c.Fee
		require.Equal(t, core.FeeRateServicePPM, c.FeeRatePPM)
	}
	require.Equal(t, rc.TokenCharge, costs, "the token charge is the calls' real cost")
	require.Equal(t, rc.PlatformFee, fees, "the platform fee is the calls' fees")
	require.Equal(t, rc.Billed, rc.TokenCharge+rc.PlatformFee+rc.Surcharge-*rc.CapCredit)
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestChatEasyQuestionTakesTheExpressLane(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", "What is 17 * 23?", ""))
	require.Equal(t, 200, r.status, r.raw)
	panel := r.body["panel"].(map[string]any)
	require.Equal(t, "express", panel["lane"])
	require.Nil(t, panel["converged"], "no judge reads the express lane")
	require.Equal(t, "express_lane", panel["best_seat_judged_by"])
	choice := r.body["choices"].([]any)[0].(map[string]any)
	require.Contains(t, choice["message"].(map[string]any)["content"], "391")
}

func TestChatValidationAndAdmission(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	ctx := context.Background()
	cases := []struct {
		name, body string
		status     int
		code       core.Code
		typ        string
	}{
		{"model missing", `{"messages":[{"role":"user","content":"hi"}]}`, 400, core.CodeInvalidMessages, "invalid_request_error"},
		{"stream", chatBody("conclave-standard", "hi", `,"stream":true`), 400, core.CodeStreamNotSupported, "invalid_request_error"},
		{"tier", chatBody("conclave-standard", "hi", `,"tier":"gold"`), 400, core.CodeInvalidTier, "invalid_request_error"},
		{"max cost", chatBody("conclave-standard", "hi", `,"panel":{"max_cost_usd":-2}`), 400, core.CodeInvalidMaxCostUSD, "invalid_request_error"},
		{"unknown mode", chatBody("gpt-4o", "hi", ""), 404, core.CodeModelNotFound, "invalid_request_error"},
		{"tier without seats", chatBody("plus-only", "hi", `,"tier":"pro"`), 403, core.CodeTierNotPermitted, "permission_error"},
	}
	for _, tc := range cases {
		requireError(t, cb.do(t, "POST", "/v1/chat/completions", cb.key, tc.body), tc.status, tc.code, tc.typ)
		// The estimate takes the same body and refuses it alike; only a
		// missing model has its own code there.
		code := tc.code
		if tc.name == "model missing" {
			code = core.CodeInvalidModel
		}
		requireError(t, cb.do(t, "POST", "/v1/estimate", cb.key, tc.body), tc.status, code, tc.typ)
	}

	// Over the key's input limit, counted with the real tokenizer; the
	// estimate of the same prompt is refused alike.
	small := cb.newKey(t, &core.CreateKeyParams{MaxInputTokens: 20})
	long := strings.Repeat("Consider the trade-offs carefully. ", 20)
	r := cb.do(t, "POST", "/v1/chat/completions", small, chatBody("conclave-standard", long, ""))
	requireError(t, r, 413, core.CodeContextLengthExceeded, "invalid_request_error")
	r = cb.do(t, "POST", "/v1/estimate", small, chatBody("conclave-standard", long, ""))
	requireError(t, r, 413, core.CodeContextLengthExceeded, "invalid_request_error")
	// 24 bytes with its framing, over the limit of 20, but 15 tokens: it
	// is counted, and within.
	require.Greater(t, tokens.Bound([]core.Message{{Role: core.RoleUser, Content: "What is 2 + 2?"}}), 20)
	require.Equal(t, 200, cb.do(t, "POST", "/v1/chat/completions", small, chatBody("conclave-standard", "What is 2 + 2?", "")).status)

	// A key whose own ceiling is above the balance cannot reserve it.
	rich := cb.newKey(t, &core.CreateKeyParams{Ceiling: 50 * core.MicrosPerUSD})
	before, err := cb.store.GetBalance(ctx, cb.org.ID)
	require.NoError(t, err)
	requireError(t, cb.do(t, "POST", "/v1/chat/completions", rich, chatBody("conclave-standard", "hi", "")), 402, core.CodeInsufficientBalance, "invalid_request_error")
	after, err := cb.store.GetBalance(ctx, cb.org.ID)
	require.NoError(t, err)
	require.Equal(t, before, after, "a refused call moves no money")
}

// A prompt of 1 MB, within the body cap of 1 MiB, whose count tiktoken-go
// took seconds to minutes of CPU for (one of "a" held a core for over five
// minutes), is refused with 413 context_length_exceeded for a few
// milliseconds of counting, before any model runs. Not parallel: the test
// reads the process's CPU time, which other tests would add to.
func TestHugePromptIsRefusedCheaply(t *testing.T) {
	cb := setupChat(t)
	calls0 := cb.simCalls()
	tokens.Load() // once per process, not per request
	for _, unit := range []string{"a", "ab", "."} {
		body := chatBody("conclave-standard", strings.Repeat(unit, 1_000_000/len(unit)), "")
		require.Less(t, len(body), 1<<20, "within the body cap")
		cpu0 := cpuTime(t)
		r := cb.do(t, "POST", "/v1/chat/completions", cb.key, body)
		cpu := cpuTime(t) - cpu0
		requireError(t, r, 413, core.CodeContextLengthExceeded, "invalid_request_error")
		require.Less(t, cpu, time.Second, "CPU spent on %q × 1 MB", unit)
	}
	require.Equal(t, calls0, cb.simCalls(), "no model ran")
}

// When no seat can run, the call fails with mode_unavailable and is not
// billed; the balance is untouched and no hold is left.
func TestChatModeUnavailableIsNotBilled(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	q := "Should we migrate the ledger? [[sim: error=bad_request]]"
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", q, ""))
	requireError(t, r, 503, core.CodeModeUnavailable, "api_error")
	cb.requireBalanceMoved(t, core.TrialCredit, 0)
}

// A bill above the call's ceiling is capped at it: the caller pays exactly
// the ceiling and the rest is credited back.
func TestChatCappedBilling(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	body, ceiling := cappedBody(t, cb, "conclave-standard", "Should we adopt trunk-based development? Compare the risks and recommend a strategy.")
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, body)
	require.Equal(t, 200, r.status, r.raw)
	panel := r.body["panel"].(map[string]any)
	require.Equal(t, true, panel["capped"])
	require.Equal(t, ceiling, billedMicros(t, r))
	require.Positive(t, panel["cap_credit_usd"])
	cb.requireBalanceMoved(t, core.TrialCredit, ceiling)
}
