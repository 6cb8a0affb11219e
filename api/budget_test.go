package api_test

import (
	"context"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

// disagree makes the roles mode's seats disagree, so that critique rounds
// would run for as long as the mode allows, and every answer as long as
// the engine projects before it has learnt its engines' output (512
// tokens), so that the first round costs what the plan projected.
const disagree = "Should we adopt trunk-based development? [[sim@s1: answer=Yes, adopt it.]] [[sim@s2: answer=No, keep branches.]] [[sim: tokens_out=512]]"

var minimumRe = regexp.MustCompile(`at least \$([0-9.]+)`)

// The call's ceiling budgets the deliberation. A ceiling below what the mode
// needs for the question at all (its surcharge for the classified depth
// plus one round) is refused before any seat fires, naming the minimum, and
// nothing is billed; a ceiling of exactly that minimum buys one round, and
// the critique rounds the mode would run stop with finish_reason cost_cap.
func TestCallCeilingBudgetsTheDeliberation(t *testing.T) {
	t.Parallel()
	cb := setupChat(t, rolesMode("always", 3, 0))
	before := cb.simCalls()
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles", disagree, `,"panel":{"max_cost_usd":0.000001}`))
	requireError(t, r, 400, core.CodeInvalidMaxCostUSD, "invalid_request_error")
	e := r.body["error"].(map[string]any)
	require.Equal(t, "panel.max_cost_usd", e["param"])
	m := minimumRe.FindStringSubmatch(e["message"].(string))
	require.Len(t, m, 2, e["message"])
	minimum, err := core.ParseUSD(m[1])
	require.NoError(t, err)
	require.Greater(t, minimum, core.Micros(100_000), "the minimum is the surcharge and one round")
	require.Equal(t, 1, cb.simCalls()-before, "only the classifier was asked; no seat fired")
	cb.requireBalanceMoved(t, core.TrialCredit, 0)
	n, err := cb.countRows("SELECT count(*) FROM receipts")
	require.NoError(t, err)
	require.Zero(t, n)

	ok := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles", disagree, `,"panel":{"max_cost_usd":`+minimum.String()+`}`))
	require.Equal(t, 200, ok.status, ok.raw)
	require.Equal(t, "cost_cap", ok.body["choices"].([]any)[0].(map[string]any)["finish_reason"])
	panel := ok.body["panel"].(map[string]any)
	require.Equal(t, 1.0, panel["rounds"], "the budget held the deliberation to one round")
	billed := billedMicros(t, ok)
	require.LessOrEqual(t, billed, minimum)
	cb.requireBalanceMoved(t, core.TrialCredit, billed)

	// Without a ceiling of its own the call may spend the default ceiling,
	// and the mode's critique rounds run.
	full := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles", disagree+" Again.", ""))
	require.Equal(t, 200, full.status, full.raw)
	require.Greater(t, full.body["panel"].(map[string]any)["rounds"].(float64), 1.0)
}

// An estimate classifies exactly as the call it estimates: the same
// classifier engine (or the same fallback when the engine fails), the same
// score, task type and depth (seen in the surcharge), and the same basis —
// the engine that answered, which the receipt shows as its classifier call.
func TestEstimateClassifiesAsTheCallDoes(t *testing.T) {
	t.Parallel()
	cb := setupChat(t)
	for _, tc := range []struct {
		name, question, basis string
	}{
		{"engine answers", "Should we split our monolith into microservices this year? Compare the trade-offs.", "sim/swift"},
		{"engine fails", "Should we split our monolith into microservices this year? Compare the trade-offs. [[sim@swift: error=auth_refused]]", "heuristic"},
	} {
		est := cb.do(t, "POST", "/v1/estimate", cb.key, chatBody("conclave-standard", tc.question, ""))
		require.Equal(t, 200, est.status, est.raw)
		value := est.body["deliberation_value"].(map[string]any)
		require.Equal(t, tc.basis, value["basis"], tc.name)

		call := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("conclave-standard", tc.question, ""))
		require.Equal(t, 200, call.status, call.raw)
		panel := call.body["panel"].(map[string]any)
		require.Equal(t, "panel", panel["lane"], tc.name)
		rc, err := cb.store.GetReceipt(context.Background(), cb.org.ID, panel["request_id"].(string))
		require.NoError(t, err)
		require.NotNil(t, rc.DifficultyScore)
		require.InDelta(t, est.body["difficulty_score"].(float64), *rc.DifficultyScore, 0.0005, tc.name)
		require.Equal(t, est.body["task_type"], rc.TaskType, tc.name)
		price, err := core.ParseUSD(jsonNumber(est.body["estimated_price_usd"]))
		require.NoError(t, err)
		require.Equal(t, price, rc.Surcharge, "%s: the same depth, so the same surcharge", tc.name)
		answered := ""
		for _, c := range rc.Staff {
			if c.Role == "classifier" && c.Content != "" {
				answered = c.ModelUsed
			}
		}
		if tc.basis == "heuristic" {
			require.Empty(t, answered, tc.name)
			require.Contains(t, rc.StaffUnavailable, core.Unavailable{Role: "classifier", Reason: rc.StaffUnavailable[0].Reason}, tc.name)
		} else {
			require.Equal(t, tc.basis, answered, tc.name)
			for _, u := range rc.StaffUnavailable {
				require.NotEqual(t, "classifier", u.Role, "the simulated classifier answers: %s", u.Reason)
			}
		}
	}
}

// cappedBody is a chat body whose deliberation costs more than its ceiling
// although the ceiling covers what the plan projected: every answer is far
// longer (2,000 tokens) than the 512 projected, and the ceiling is exactly
// the question's minimum, learnt from a refusal. The bill is capped at the
// ceiling and the cap credit covers the rest. It returns the ceiling.
func cappedBody(t *testing.T, cb *chatBundle, mode, question string) (string, core.Micros) {
	t.Helper()
	question += " [[sim: tokens_out=2000]]"
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody(mode, question, `,"panel":{"max_cost_usd":0.000001}`))
	requireError(t, r, 400, core.CodeInvalidMaxCostUSD, "invalid_request_error")
	m := minimumRe.FindStringSubmatch(r.body["error"].(map[string]any)["message"].(string))
	require.Len(t, m, 2, r.raw)
	ceiling, err := core.ParseUSD(m[1])
	require.NoError(t, err)
	return chatBody(mode, question, `,"panel":{"max_cost_usd":`+ceiling.String()+`}`), ceiling
}
