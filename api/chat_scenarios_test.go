package api_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/internal/config"
)

// rolesMode gives every role of a panel its own simulated engine — seats
// s1–s3 with backups b1–b3, judge/judgeb, synth/synthb, clf — so that a
// targeted directive ([[sim@s2: …]]) hits exactly one role.
func rolesMode(critique string, rounds int, ceilingUSD config.USD) func(*config.Config) {
	return func(c *config.Config) {
		eng := func(id, adapter string) config.Engine {
			return config.Engine{ID: "sim/" + id, Family: "sim-" + adapter, MaxTier: "pro", Adapter: adapter, Endpoint: "sim",
				InputUSDPerMTok: 2_500_000, OutputUSDPerMTok: 10_000_000}
		}
		c.Engines = append(c.Engines, eng("s1", "openai"), eng("b1", "openai"), eng("s2", "anthropic"), eng("b2", "anthropic"),
			eng("s3", "gemini"), eng("b3", "gemini"), eng("judge", "anthropic"), eng("judgeb", "openai"),
			eng("synth", "openai"), eng("synthb", "anthropic"), eng("clf", "openai"))
		flat := config.USD(100_000)
		c.Modes = append(c.Modes, config.Mode{
			Key: "roles", ID: "roles", Name: "Roles", Critique: critique, MaxRounds: rounds, Quorum: 2,
			StragglerDeadline: time.Second, CostCeilingUSD: ceilingUSD,
			Seats:   map[string][]core.Seat{"plus": {{Engine: "sim/s1", Backup: "sim/b1"}, {Engine: "sim/s2", Backup: "sim/b2"}, {Engine: "sim/s3", Backup: "sim/b3"}}},
			Staff:   map[string]core.Staff{"judge": {Engine: "sim/judge", Backup: "sim/judgeb"}, "synthesis": {Engine: "sim/synth", Backup: "sim/synthb"}, "classifier": {Engine: "sim/clf"}},
			Pricing: config.Pricing{SurchargeUSD: &flat},
		})
	}
}

// scenario runs one chat on the roles mode and checks what every billed
// call must satisfy: 200, the money moved by exactly billed_usd, the
// receipt agrees with the response, and the bill adds up from the calls.
func scenario(t *testing.T, question string, change func(*config.Config)) map[string]any {
	t.Helper()
	cb := setupChat(t, change)
	r := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles", question, ""))
	require.Equal(t, 200, r.status, r.raw)
	panel := r.body["panel"].(map[string]any)
	billed, err := core.ParseUSD(jsonNumber(panel["billed_usd"]))
	require.NoError(t, err)
	cb.requireBalanceMoved(t, core.TrialCredit, billed)
	rc, err := cb.store.GetReceipt(context.Background(), cb.org.ID, panel["request_id"].(string))
	require.NoError(t, err)
	require.Equal(t, billed, rc.Billed)
	var costs, fees core.Micros
	for _, c := range append(rc.Seats, rc.Staff...) {
		costs += c.RealCost
		fees += c.Fee
	}
	require.Equal(t, rc.TokenCharge, costs)
	require.Equal(t, rc.PlatformFee, fees)
	require.Equal(t, core.Micros(100_000), rc.Surcharge)
	panel["_finish"] = r.body["choices"].([]any)[0].(map[string]any)["finish_reason"]
	panel["_answer"] = r.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"]
	panel["_receipt_calls"] = len(rc.Seats) + len(rc.Staff)
	return panel
}

func seatTurns(panel map[string]any, round int) []map[string]any {
	var out []map[string]any
	for _, s := range panel["deliberation"].([]any)[round-1].(map[string]any)["seats"].([]any) {
		out = append(out, s.(map[string]any))
	}
	return out
}

func list(panel map[string]any, key string) []map[string]any {
	var out []map[string]any
	v, _ := panel[key].([]any)
	for _, x := range v {
		out = append(out, x.(map[string]any))
	}
	return out
}

func TestChatBackupSubstitution(t *testing.T) {
	t.Parallel()
	p := scenario(t, "Should we adopt trunk-based development? [[sim@s1: error=bad_request]]", rolesMode("never", 1, 0))
	subs := list(p, "substitutions")
	require.Len(t, subs, 1)
	require.Equal(t, "seat-1", subs[0]["seat"])
	require.Equal(t, "sim/s1", subs[0]["original"])
	require.Equal(t, "sim/b1", subs[0]["used"])
	require.Equal(t, 3.0, p["seats_answered"])
	require.Contains(t, p["engines"], "sim/b1")
}

func TestChatSeatUnavailable(t *testing.T) {
	t.Parallel()
	p := scenario(t, "Should we adopt trunk-based development? [[sim@s1: error=bad_request]] [[sim@b1: error=bad_request]]", rolesMode("never", 1, 0))
	un := list(p, "seats_unavailable")
	require.Len(t, un, 1)
	require.Equal(t, "seat-1", un[0]["role"])
	require.NotEmpty(t, un[0]["reason"])
	require.Equal(t, 2.0, p["seats_answered"])
	require.Equal(t, 3.0, p["seats"])
}

func TestChatJudgeFallsBackToHeuristic(t *testing.T) {
	t.Parallel()
	p := scenario(t, "Should we adopt trunk-based development? [[sim@judge: error=bad_request]] [[sim@judgeb: error=bad_request]]", rolesMode("never", 1, 0))
	require.Equal(t, "heuristic", p["best_seat_judged_by"])
	roles := map[string]bool{}
	for _, u := range list(p, "staff_unavailable") {
		roles[u["role"].(string)] = true
	}
	require.True(t, roles["judge"], "%v", p["staff_unavailable"])
}

func TestChatSynthesisFallsBackToTheBestSeat(t *testing.T) {
	t.Parallel()
	p := scenario(t, "Should we adopt trunk-based development? [[sim@synth: error=bad_request]] [[sim@synthb: error=bad_request]]", rolesMode("never", 1, 0))
	roles := map[string]bool{}
	for _, u := range list(p, "staff_unavailable") {
		roles[u["role"].(string)] = true
	}
	require.True(t, roles["synthesis"], "%v", p["staff_unavailable"])
	require.NotEmpty(t, p["_answer"], "the best seat's answer is returned")
}

func TestChatQuorumCloseCancelsTheStraggler(t *testing.T) {
	t.Parallel()
	// s3 and its backup both take 150 simulated seconds (3 s here): the
	// round closes on the quorum of two after the straggler deadline.
	p := scenario(t, "Should we adopt trunk-based development? [[sim@s3: delay=150s]] [[sim@b3: delay=150s]]", rolesMode("never", 1, 0))
	round := p["deliberation"].([]any)[0].(map[string]any)
	require.Equal(t, "quorum", round["closed"])
	var closed []string
	for _, s := range seatTurns(p, 1) {
		closed = append(closed, s["closed_by"].(string))
	}
	require.Contains(t, closed, "quorum_close")
	require.Equal(t, 2.0, p["seats_answered"])
}

func TestChatHedgeWins(t *testing.T) {
	t.Parallel()
	// Only s3 is slow: its backup, started beside it, answers first.
	p := scenario(t, "Should we adopt trunk-based development? [[sim@s3: delay=150s]]", rolesMode("never", 1, 0))
	var hedged bool
	for _, s := range seatTurns(p, 1) {
		if s["seat"] == "seat-3" {
			hedged = s["hedged"].(bool)
			require.Equal(t, "sim/b3", s["engine"])
		}
	}
	require.True(t, hedged)
	subs := list(p, "substitutions")
	require.Len(t, subs, 1)
	require.True(t, strings.HasPrefix(subs[0]["reason"].(string), "hedged"), subs[0]["reason"])
}

func TestChatCostCapStopsCritique(t *testing.T) {
	t.Parallel()
	// Critique always, up to three rounds, under a one-micro-dollar
	// ceiling: the first round already spends it, so no critique round runs.
	p := scenario(t, "Should we adopt trunk-based development? [[sim@s1: answer=Yes, adopt it.]] [[sim@s2: answer=No, keep branches.]]", rolesMode("always", 3, 1))
	require.Equal(t, "cost_cap", p["_finish"])
	require.Equal(t, 1.0, p["rounds"])
}

func TestChatLengthWhenTheAnswerIsCutOff(t *testing.T) {
	t.Parallel()
	p := scenario(t, "Should we adopt trunk-based development? [[sim@synth: finish=length]]", rolesMode("never", 1, 0))
	require.Equal(t, "length", p["_finish"])
}
