package api_test

import (
	"context"
	"errors"
	"log/slog"
	"net/url"
	"sort"
	"testing"
	"time"

	"github.com/conclavehq/conclave/internal/logtest"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/api"
	"github.com/conclavehq/conclave/core"
)

// receiptKeys are the top-level fields of a receipt: the spec's, plus
// platform_fee_usd, payer_kind, person_id and transcript_kept.
var receiptKeys = []string{
	"request_id", "mode", "mode_key", "mode_config_hash", "mode_version", "status", "billed_usd", "token_charge_usd", "platform_fee_usd",
	"q_surcharge_usd", "cap_credit_usd", "prompt_tokens", "completion_tokens", "rounds", "seat_count", "payer", "lane",
	"difficulty_score", "task_type", "hallucination_risk", "minority_insight_likely", "best_seat", "seats", "staff",
	"seats_unavailable", "staff_unavailable", "latency_ms", "created_at", "completed_at", "payer_kind", "person_id",
	"transcript_kept",
}

// callKeys are the fields every seat and staff call entry carries (content
// only with the transcript).
var callKeys = []string{
	"role", "model_used", "original_model", "fallback_used", "round_number", "tokens_in", "tokens_out", "latency_ms",
	"started_at", "ended_at", "source", "real_cost_usd", "fee_rate", "fee_usd",
}

func getReceipt(t *testing.T, tb *testBundle, key, id, query string) *response {
	t.Helper()
	path := "/v1/receipts/" + url.PathEscape(id)
	if query != "" {
		path += "?" + query
	}
	return tb.do(t, "GET", path, key, "")
}

// requireReceipt checks the 200 receipt form and returns the receipt.
func requireReceipt(t *testing.T, r *response) map[string]any {
	t.Helper()
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, true, r.body["ok"])
	require.Equal(t, true, r.body["receipt_available"])
	rec, ok := r.body["receipt"].(map[string]any)
	require.True(t, ok, r.raw)
	require.ElementsMatch(t, receiptKeys, keysOf(rec), "exactly the receipt's fields")
	return rec
}

func keysOf(m map[string]any) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func usd(t *testing.T, v any) core.Micros {
	t.Helper()
	require.IsType(t, float64(0), v, "a money field is a JSON number")
	m, err := core.ParseUSD(jsonNumber(v))
	require.NoError(t, err)
	return m
}

func timeOf(t *testing.T, v any) time.Time {
	t.Helper()
	s, ok := v.(string)
	require.True(t, ok, "a timestamp is a string: %v", v)
	at, err := time.Parse(time.RFC3339Nano, s)
	require.NoError(t, err)
	return at
}

func entries(v any) []map[string]any {
	var out []map[string]any
	for _, x := range v.([]any) {
		out = append(out, x.(map[string]any))
	}
	return out
}

// simCost is what every engine of rolesMode costs for a call: $2.50 per
// million input tokens and $10 per million output tokens, rounded up.
func simCost(in, out float64) core.Micros {
	return core.Micros((int64(in)*2_500_000 + int64(out)*10_000_000 + 999_999) / 1_000_000)
}

// requireCallMoney checks a call entry's money against its tokens, and its
// times against the receipt's: the fee is 5% of the real cost, rounded up.
func requireCallMoney(t *testing.T, c map[string]any, created, completed time.Time) (cost, fee core.Micros) {
	t.Helper()
	for _, k := range callKeys {
		require.Contains(t, c, k)
	}
	cost, fee = usd(t, c["real_cost_usd"]), usd(t, c["fee_usd"])
	require.Equal(t, simCost(c["tokens_in"].(float64), c["tokens_out"].(float64)), cost, "real cost of %v", c)
	require.Equal(t, 0.05, c["fee_rate"], "the service's keys: 5%%")
	require.Equal(t, core.CallFee(cost, core.FeeRateServicePPM), fee, "fee_usd = real_cost_usd × fee_rate, rounded up")
	require.Equal(t, "service", c["source"])
	started, ended := timeOf(t, c["started_at"]), timeOf(t, c["ended_at"])
	require.False(t, ended.Before(started))
	require.Equal(t, float64(ended.Sub(started).Milliseconds()), c["latency_ms"])
	require.False(t, started.Before(created.Add(-time.Millisecond)), "the call started after the request came in")
	require.False(t, ended.After(completed.Add(time.Millisecond)), "the call ended before the request completed")
	return cost, fee
}

// A deliberation whose first seat runs its backup: the receipt reports
// every seat and staff call the panel made, with the substitution, judge
// scores, fees and the same bill as the response.
func TestReceiptOfADeliberationWithASubstitution(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cb := setupChat(t, rolesMode("never", 1, 0))
	chat := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles", "Should we adopt trunk-based development? [[sim@s1: error=bad_request]]", ""))
	require.Equal(t, 200, chat.status, chat.raw)
	panel := chat.body["panel"].(map[string]any)
	usage := chat.body["usage"].(map[string]any)
	answer := chat.body["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
	id := panel["request_id"].(string)
	stored, err := cb.store.GetReceipt(ctx, cb.org.ID, id)
	require.NoError(t, err)

	plain := getReceipt(t, cb.testBundle, cb.key, id, "")
	rec := requireReceipt(t, plain)
	require.Equal(t, plain.body, getReceipt(t, cb.testBundle, cb.key, id, "include_transcript=false").body, "false is the default")

	// Top level.
	require.Equal(t, id, rec["request_id"])
	require.Equal(t, "roles", rec["mode"])
	require.Equal(t, "roles", rec["mode_key"])
	require.Equal(t, panel["mode_config_hash"], rec["mode_config_hash"])
	require.NotEmpty(t, rec["mode_config_hash"])
	require.Equal(t, "succeeded", rec["status"])
	billed := usd(t, rec["billed_usd"])
	require.Equal(t, usd(t, panel["billed_usd"]), billed, "the receipt bills what the response said")
	require.Positive(t, billed)
	tokenCharge, platformFee, surcharge := usd(t, rec["token_charge_usd"]), usd(t, rec["platform_fee_usd"]), usd(t, rec["q_surcharge_usd"])
	require.Equal(t, usd(t, panel["token_charge_usd"]), tokenCharge)
	require.Equal(t, usd(t, panel["platform_fee_usd"]), platformFee)
	require.Equal(t, core.Micros(100_000), surcharge, "the roles mode's flat $0.10")
	require.Equal(t, usd(t, panel["surcharge_usd"]), surcharge)
	require.Equal(t, 0.0, rec["cap_credit_usd"], "under the ceiling: a credit of 0 is recorded, not null")
	require.Equal(t, billed, tokenCharge+platformFee+surcharge, "billed = token charge + fee + surcharge − credit")
	require.Equal(t, usage["prompt_tokens"], rec["prompt_tokens"])
	require.Equal(t, usage["completion_tokens"], rec["completion_tokens"])
	require.Equal(t, panel["rounds"], rec["rounds"])
	require.Equal(t, 1.0, rec["rounds"])
	require.Equal(t, panel["seats"], rec["seat_count"])
	require.Equal(t, 3.0, rec["seat_count"])
	require.Equal(t, cb.org.ID, rec["payer"])
	require.Equal(t, "panel", rec["lane"])
	require.Equal(t, *stored.DifficultyScore, rec["difficulty_score"])
	require.InDelta(t, 0.5, rec["difficulty_score"], 0.5)
	require.Equal(t, stored.TaskType, rec["task_type"])
	require.NotEmpty(t, rec["task_type"])
	require.Equal(t, stored.HallucinationRisk, rec["hallucination_risk"])
	if stored.MinorityInsightLikely == nil {
		require.Nil(t, rec["minority_insight_likely"])
	} else {
		require.Equal(t, *stored.MinorityInsightLikely, rec["minority_insight_likely"])
	}
	require.Equal(t, panel["latency_ms"], rec["latency_ms"])
	require.Equal(t, []any{}, rec["seats_unavailable"])
	// The simulated classifier may answer without the JSON a classifier
	// owes; then the heuristic classifies and the role is listed. Nothing
	// else may be.
	staffUnavailable := entries(rec["staff_unavailable"])
	for _, u := range staffUnavailable {
		require.Equal(t, "classifier", u["role"], "%v", u)
	}
	created, completed := timeOf(t, rec["created_at"]), timeOf(t, rec["completed_at"])
	require.False(t, completed.Before(created), "completed_at ≥ created_at")
	require.WithinDuration(t, time.Now(), created, time.Minute)
	require.Equal(t, float64(completed.Sub(created).Milliseconds()), rec["latency_ms"], "created_at is when the call came in")
	for k := range rec {
		require.NotContains(t, []string{"cost_usd", "service_cost_usd", "our_cost_usd", "internal_cost_usd"}, k)
	}

	// Seats: every answered seat of the round, plus the primary that failed.
	round := panel["deliberation"].([]any)[0].(map[string]any)
	scores := round["judgment"].(map[string]any)["scores"].(map[string]any)
	want := map[string]string{}
	for _, s := range seatTurns(panel, 1) {
		if s["answered"] == true {
			want[s["seat"].(string)] = s["engine"].(string)
		}
	}
	require.Equal(t, map[string]string{"seat-1": "sim/b1", "seat-2": "sim/s2", "seat-3": "sim/s3"}, want)
	var costs, fees core.Micros
	seats := entries(rec["seats"])
	require.Len(t, seats, 4, "three answers and the failed primary")
	answered := map[string]string{}
	var best []map[string]any
	for _, s := range seats {
		for _, k := range []string{"judge_score", "is_best_seat", "answered"} {
			require.Contains(t, s, k)
		}
		require.NotContains(t, s, "content", "no transcript unless asked for")
		cost, fee := requireCallMoney(t, s, created, completed)
		costs, fees = costs+cost, fees+fee
		require.Equal(t, 1.0, s["round_number"])
		role := s["role"].(string)
		if s["answered"] != true {
			require.Equal(t, "seat-1", role)
			require.Equal(t, "sim/s1", s["model_used"], "the primary that failed")
			require.Equal(t, false, s["fallback_used"])
			require.Nil(t, s["original_model"])
			require.Equal(t, false, s["is_best_seat"])
			continue
		}
		answered[role] = s["model_used"].(string)
		require.Equal(t, scores[role], s["judge_score"], "the judge's score of %s", role)
		if role == "seat-1" {
			require.Equal(t, "sim/b1", s["model_used"])
			require.Equal(t, "sim/s1", s["original_model"], "the substitution names the engine replaced")
			require.Equal(t, true, s["fallback_used"])
		} else {
			require.Nil(t, s["original_model"])
			require.Equal(t, false, s["fallback_used"])
		}
		require.Positive(t, s["tokens_in"])
		require.Positive(t, s["tokens_out"])
		if s["is_best_seat"] == true {
			best = append(best, s)
		}
	}
	require.Equal(t, want, answered, "the seats match the panel's deliberation")
	require.Len(t, best, 1, "exactly one best seat")
	bs := rec["best_seat"].(map[string]any)
	require.Equal(t, best[0]["model_used"], bs["model_used"])
	require.Equal(t, best[0]["judge_score"], bs["judge_score"])
	require.NotNil(t, bs["judge_score"], "an llm judge scored it")
	require.NotContains(t, bs, "content")

	// Staff: the classifier, the judge and the synthesis calls, all
	// answered; and a role-level entry for each role in staff_unavailable.
	staffModels := map[string]string{}
	var roleLevel []map[string]any
	for _, s := range entries(rec["staff"]) {
		if _, call := s["model_used"]; !call {
			require.Equal(t, false, s["available"])
			roleLevel = append(roleLevel, map[string]any{"role": s["role"], "reason": s["reason"]})
			continue
		}
		require.NotContains(t, s, "content")
		require.Equal(t, true, s["available"], "%v", s)
		require.Nil(t, s["reason"])
		cost, fee := requireCallMoney(t, s, created, completed)
		costs, fees = costs+cost, fees+fee
		require.Positive(t, cost)
		require.Equal(t, false, s["fallback_used"])
		role := s["role"].(string)
		staffModels[role] = s["model_used"].(string)
		wantRound := 1.0
		if role == "classifier" {
			wantRound = 0
		}
		require.Equal(t, wantRound, s["round_number"], role)
	}
	require.Equal(t, map[string]string{"classifier": "sim/clf", "judge": "sim/judge", "synthesis": "sim/synth"}, staffModels)
	require.Equal(t, staffUnavailable, roleLevel, "a role that could not serve, though its engine answered, shows as unavailable")
	require.Equal(t, tokenCharge, costs, "the token charge is the calls' real cost")
	require.Equal(t, platformFee, fees, "the platform fee is the calls' fees")

	// With the transcript: the same receipt plus each call's text.
	full := requireReceipt(t, getReceipt(t, cb.testBundle, cb.key, id, "include_transcript=true"))
	fullSeats := entries(full["seats"])
	require.Len(t, fullSeats, len(seats))
	for i, s := range fullSeats {
		content, ok := s["content"].(string)
		require.True(t, ok, "content with the transcript: %v", s)
		if s["answered"] == true {
			require.NotEmpty(t, content)
		} else {
			require.Empty(t, content, "the failed primary said nothing")
		}
		delete(s, "content")
		require.Equal(t, seats[i], s, "only content is added")
	}
	fullBest := full["best_seat"].(map[string]any)
	for _, s := range fullSeats {
		if s["is_best_seat"] == true {
			require.Equal(t, stored.BestSeat.Content, fullBest["content"])
			require.NotEmpty(t, fullBest["content"])
		}
	}
	var synthesis string
	for _, s := range entries(full["staff"]) {
		if _, call := s["model_used"]; !call {
			require.NotContains(t, s, "content", "a role-level entry has no call and no text")
			continue
		}
		require.Contains(t, s, "content")
		if s["role"] == "synthesis" {
			synthesis = s["content"].(string)
		}
	}
	require.Equal(t, answer, synthesis, "the synthesis's text is the answer sent")
	for _, k := range []string{"seats", "staff", "best_seat"} {
		delete(full, k)
		delete(rec, k)
	}
	require.Equal(t, rec, full)
}

// A judge whose engines both fail shows in staff as unavailable, with the
// reason staff_unavailable gives.
func TestReceiptShowsAStaffEngineThatCouldNotRun(t *testing.T) {
	t.Parallel()
	cb := setupChat(t, rolesMode("never", 1, 0))
	chat := cb.do(t, "POST", "/v1/chat/completions", cb.key, chatBody("roles",
		"Should we adopt trunk-based development? [[sim@judge: error=bad_request]] [[sim@judgeb: error=bad_request]]", ""))
	require.Equal(t, 200, chat.status, chat.raw)
	rec := requireReceipt(t, getReceipt(t, cb.testBundle, cb.key, chat.body["panel"].(map[string]any)["request_id"].(string), ""))

	var reason string
	for _, u := range entries(rec["staff_unavailable"]) {
		require.Equal(t, []string{"reason", "role"}, keysOf(u))
		if u["role"] == "judge" {
			reason = u["reason"].(string)
		}
	}
	require.NotEmpty(t, reason, "the judge is listed unavailable: %v", rec["staff_unavailable"])
	judges := map[string]bool{}
	for _, s := range entries(rec["staff"]) {
		switch s["role"] {
		case "judge":
			require.Equal(t, false, s["available"], "%v", s)
			require.Equal(t, reason, s["reason"])
			judges[s["model_used"].(string)] = true
		case "synthesis":
			require.Equal(t, true, s["available"], "%v", s)
			require.Nil(t, s["reason"])
		}
	}
	require.Equal(t, map[string]bool{"sim/judge": true, "sim/judgeb": true}, judges, "both judge engines were tried")
	// The heuristic's scores stand in for the judge's.
	panel := chat.body["panel"].(map[string]any)
	require.Equal(t, "heuristic", panel["best_seat_judged_by"])
	scores := panel["deliberation"].([]any)[0].(map[string]any)["judgment"].(map[string]any)["scores"].(map[string]any)
	for _, s := range entries(rec["seats"]) {
		require.Equal(t, true, s["answered"])
		require.Equal(t, scores[s["role"].(string)], s["judge_score"])
	}
}

// settleReceipt stores a receipt for the bundle's organisation the way a
// settled call does.
func settleReceipt(t *testing.T, tb *testBundle, rc *core.Receipt) string {
	t.Helper()
	ctx := context.Background()
	id := core.NewID("req")
	h, err := tb.store.PlaceHold(ctx, &core.PlaceHoldParams{OrgID: tb.org.ID, RequestID: id, Amount: core.USD(1)})
	require.NoError(t, err)
	_, err = tb.store.SettleCall(ctx, &core.SettleCallParams{HoldID: h.ID, OrgID: tb.org.ID, Billed: rc.Billed, Receipt: rc})
	require.NoError(t, err)
	return id
}

// What a receipt did not record is null, not invented; a staff role that
// failed without a call shows as unavailable; a call on the caller's own
// key shows the 0.5% fee rate.
func TestReceiptNullsAndRoleLevelStaffEntries(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	round := 1
	id := settleReceipt(t, tb, &core.Receipt{
		Mode: "conclave-standard", ModeKey: "standard", ModeConfigHash: "abc123", Status: "succeeded", Payer: tb.org.ID,
		Billed: 100_000 + 1_000 + 5, TokenCharge: 1_000, PlatformFee: 5, Surcharge: 100_000, SeatCount: 1,
		Seats: []core.ReceiptCall{{Role: "seat-1", ModelUsed: "sim/a", RoundNumber: &round, TokensIn: 10, TokensOut: 20,
			StartedAt: start, EndedAt: start.Add(time.Second), Source: "byok:openai", RealCost: 1_000,
			FeeRatePPM: core.FeeRateBYOKPPM, Fee: 5, Content: "an answer"}},
		StaffUnavailable: []core.Unavailable{{Role: "grounding", Reason: "no grounding engine is configured"}},
	})
	rec := requireReceipt(t, getReceipt(t, tb, tb.key, id, "include_transcript=true"))
	for _, k := range []string{"cap_credit_usd", "rounds", "lane", "difficulty_score", "task_type", "hallucination_risk",
		"minority_insight_likely", "best_seat", "latency_ms", "completed_at"} {
		require.Nil(t, rec[k], k)
	}
	require.Equal(t, 0.1, rec["q_surcharge_usd"])
	require.Equal(t, 0.101005, rec["billed_usd"])
	seat := entries(rec["seats"])[0]
	require.Equal(t, 0.005, seat["fee_rate"])
	require.Equal(t, 0.000005, seat["fee_usd"])
	require.Equal(t, 0.001, seat["real_cost_usd"])
	require.Equal(t, "byok:openai", seat["source"])
	require.Nil(t, seat["latency_ms"])
	require.Nil(t, seat["judge_score"])
	require.Nil(t, seat["is_best_seat"])
	require.Nil(t, seat["fallback_used"])
	require.Equal(t, "an answer", seat["content"])
	require.Equal(t, []any{map[string]any{"role": "grounding", "available": false, "reason": "no grounding engine is configured"}}, rec["staff"])
	require.Equal(t, []any{map[string]any{"role": "grounding", "reason": "no grounding engine is configured"}}, rec["staff_unavailable"])
}

// An estimate convenes no panel: its request id answers with the
// receipt-unavailable form, and only to its own organisation.
func TestReceiptUnavailableAfterAnEstimate(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	est := tb.do(t, "POST", "/v1/estimate", tb.key, `{"model":"conclave-standard","messages":[{"role":"user","content":"What is 17 * 23?"}]}`)
	require.Equal(t, 200, est.status, est.raw)
	id := est.body["request_id"].(string)
	require.Equal(t, est.header.Get(api.RequestIDHeader), id)

	for _, q := range []string{"", "include_transcript=true"} {
		r := getReceipt(t, tb, tb.key, id, q)
		require.Equal(t, 200, r.status, r.raw)
		require.Equal(t, map[string]any{
			"ok": true, "request_id": id, "status": "estimated", "receipt_available": false,
			"reason": "an estimate classifies the prompt without convening a panel",
		}, r.body, "no receipt key")
	}

	other, _, err := tb.store.CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Other Org"})
	require.NoError(t, err)
	otherKey := tb.newKey(t, &core.CreateKeyParams{OrgID: other.ID})
	requireError(t, getReceipt(t, tb, otherKey, id, ""), 404, core.CodeReceiptNotFound, "invalid_request_error")
}

// failingOutcomes cannot record anything.
type failingOutcomes struct{ core.Outcomes }

func (failingOutcomes) RecordOutcome(context.Context, *core.CallOutcome) error {
	return errors.New("the outcome store is down")
}

// Recording an estimate's outcome is best-effort: when it fails the
// estimate still answers, and the failure is logged.
func TestEstimateAnswersWhenItsOutcomeCannotBeRecorded(t *testing.T) {
	t.Parallel()
	logs := &logtest.Buffer{}
	tb := setupWith(t, "Down", func(p *parts) {
		p.outcomes = failingOutcomes{p.store}
		p.logger = slog.New(slog.NewJSONHandler(logs, nil))
	}).testBundle

	est := tb.do(t, "POST", "/v1/estimate", tb.key, `{"model":"conclave-standard","messages":[{"role":"user","content":"hi"}]}`)
	require.Equal(t, 200, est.status, est.raw)
	require.Contains(t, logs.String(), "recording a call outcome")
	require.Contains(t, logs.String(), "the outcome store is down")
	requireError(t, getReceipt(t, tb, tb.key, est.body["request_id"].(string), ""), 404, core.CodeReceiptNotFound, "invalid_request_error")
}

func TestReceiptErrors(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	ctx := context.Background()
	id := settleReceipt(t, tb, &core.Receipt{Mode: "conclave-standard", ModeKey: "standard", ModeConfigHash: "h", Status: "succeeded", Payer: tb.org.ID})
	require.Equal(t, 200, getReceipt(t, tb, tb.key, id, "").status)

	other, _, err := tb.store.CreateOrg(ctx, &core.CreateOrgParams{Name: "Other Org"})
	require.NoError(t, err)
	otherKey := tb.newKey(t, &core.CreateKeyParams{OrgID: other.ID})
	r := getReceipt(t, tb, otherKey, id, "")
	requireError(t, r, 404, core.CodeReceiptNotFound, "invalid_request_error")
	require.Equal(t, "request_id", r.body["error"].(map[string]any)["param"])
	notFound := getReceipt(t, tb, tb.key, "req_doesnotexist", "")
	requireError(t, notFound, 404, core.CodeReceiptNotFound, "invalid_request_error")
	require.Equal(t, r.body["error"].(map[string]any)["message"].(string)[:10], notFound.body["error"].(map[string]any)["message"].(string)[:10],
		"another organisation's id reads like an unknown one")

	for _, path := range []string{"/v1/receipts", "/v1/receipts/", "/v1/receipts/%20"} {
		r := tb.do(t, "GET", path, tb.key, "")
		requireError(t, r, 400, core.CodeMissingRequestID, "invalid_request_error")
		require.Equal(t, "request_id", r.body["error"].(map[string]any)["param"], path)
	}

	for _, q := range []string{"include_transcript=yes", "include_transcript=1", "include_transcript=", "include_transcript=TRUE",
		"include_transcript=true&include_transcript=false"} {
		r := getReceipt(t, tb, tb.key, id, q)
		requireError(t, r, 400, core.CodeInvalidRequest, "invalid_request_error")
		require.Equal(t, "include_transcript", r.body["error"].(map[string]any)["param"], q)
	}

	// Admission as on every /v1 route.
	requireError(t, getReceipt(t, tb, "", id, ""), 401, core.CodeInvalidAPIKey, "authentication_error")
	estimateOnly := tb.newKey(t, &core.CreateKeyParams{Scopes: []string{core.ScopeEstimate}})
	requireError(t, getReceipt(t, tb, estimateOnly, id, ""), 403, core.CodeInsufficientScope, "permission_error")
	receiptsOnly := tb.newKey(t, &core.CreateKeyParams{Scopes: []string{core.ScopeReceiptsRead}})
	require.Equal(t, 200, getReceipt(t, tb, receiptsOnly, id, "").status)
	requireError(t, tb.do(t, "GET", "/v1/receipts/"+id, tb.key, "", "Origin", "https://example.com"), 403, core.CodeBrowserOriginNotAllowed, "permission_error")

	post := tb.do(t, "POST", "/v1/receipts/"+id, tb.key, "{}")
	requireError(t, post, 405, core.CodeMethodNotAllowed, "invalid_request_error")
	require.Equal(t, []string{"GET"}, post.header.Values("Allow"))
	requireError(t, tb.do(t, "GET", "/v1/receipts/"+id+"/seats", tb.key, ""), 404, core.CodeUnknownURL, "invalid_request_error")
}
