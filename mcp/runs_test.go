package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/storetest"
	"github.com/conclavehq/conclave/mcp"
)

// acmePanel creates the organisation Acme with a live key and has it save
// and release acme-panl through the tool server: light $0.05, medium $0.10,
// deep $0.15, so that a test question at plus costs 75% of that and of the
// projected token charge and fee of a call of its depth: $0.076836,
// $0.114336 or $0.182548 (api/runs_test.go's runsBundle works them out).
func (tb *testBundle) acmePanel(t *testing.T) (*core.Org, string) {
	t.Helper()
	org, key := tb.newOrg(t, "Acme", "ACME")
	var saved savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL"), "release": true}, &saved)
	require.Equal(t, "acme-panl", saved.Mode.ID)
	return org, key
}

// acceptance is a launch's answer (wire.Acceptance).
type acceptance struct {
	OK               bool                      `json:"ok"`
	DryRun           bool                      `json:"dry_run"`
	BatchID          string                    `json:"batch_id"`
	Model            string                    `json:"model"`
	ModeKey          string                    `json:"mode_key"`
	TotalQuestions   int                       `json:"total_questions"`
	PerBucket        map[string]map[string]any `json:"per_bucket"`
	TotalCostUSD     *float64                  `json:"total_cost_usd"`
	BilledUSD        *float64                  `json:"billed_usd"`
	EstimatedMinutes int                       `json:"estimated_minutes"`
	StatusURL        string                    `json:"status_url"`
	Note             string                    `json:"note"`
	RequiresListing  *bool                     `json:"requires_listing"`
}

// launch calls tool with args and meta (nil for none), which must succeed
// with an acceptance, and returns it with the result.
func (tb *testBundle) launch(t *testing.T, key, tool string, args, meta map[string]any) (acceptance, toolResult) {
	t.Helper()
	res := tb.callToolMeta(t, key, tool, args, meta)
	require.False(t, res.IsError, res.Content[0].Text)
	require.JSONEq(t, string(res.StructuredContent), res.Content[0].Text)
	var a acceptance
	res.text(t, &a)
	require.True(t, a.OK)
	return a, res
}

// replayed reports whether a launch's result says it is a repeat's.
func replayed(res toolResult) bool {
	return res.Meta["conclave/idempotent-replayed"] == true
}

// forwarded is a forwarding tool's failure.
type forwarded struct {
	HTTPStatus int `json:"http_status"`
	Error      struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    string  `json:"code"`
		Param   *string `json:"param"`
	} `json:"error"`
	Conclave struct {
		RequestID         string `json:"request_id"`
		RetryAfterSeconds int    `json:"retry_after_seconds"`
	} `json:"conclave"`
}

// refused calls tool, which must fail in the forwarding shape with status
// and code, and returns the failure.
func (tb *testBundle) refused(t *testing.T, key, tool string, args, meta map[string]any, status int, code string) forwarded {
	t.Helper()
	res := tb.callToolMeta(t, key, tool, args, meta)
	require.True(t, res.IsError, res.Content[0].Text)
	require.Empty(t, res.StructuredContent)
	var out forwarded
	res.text(t, &out)
	require.Equal(t, code, out.Error.Code, res.Content[0].Text)
	require.Equal(t, status, out.HTTPStatus, res.Content[0].Text)
	require.NotEmpty(t, out.Error.Message)
	require.NotEmpty(t, out.Error.Type)
	require.True(t, strings.HasPrefix(out.Conclave.RequestID, "req_"), res.Content[0].Text)
	var raw map[string]any
	res.text(t, &raw)
	require.ElementsMatch(t, []string{"http_status", "error", "conclave"}, keys(raw), res.Content[0].Text)
	require.ElementsMatch(t, []string{"message", "type", "code", "param"}, keys(raw["error"].(map[string]any)), res.Content[0].Text)
	return out
}

// invalidParams calls tool and requires the JSON-RPC error -32602.
func (tb *testBundle) invalidParams(t *testing.T, key, tool string, args map[string]any) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	require.NoError(t, err)
	r := tb.post(t, mcp.Path, key, string(body))
	require.Equal(t, http.StatusOK, r.status, r.raw)
	res := r.rpc(t)
	require.NotNil(t, res.Error, "%s %v: %s", tool, args, r.raw)
	require.Equal(t, -32602, res.Error.Code, r.raw)
	return res.Error.Message
}

// money is an organisation's balance and journal (storetest.Money).
type money = storetest.Money

func (tb *testBundle) money(t *testing.T, orgID string) money {
	t.Helper()
	return storetest.MoneyOf(t, tb.store, orgID)
}

// requireCharged checks that since before exactly one posting of kind
// moved amount from the organisation's balance to revenue.
func (tb *testBundle) requireCharged(t *testing.T, orgID string, before money, kind string, amount core.Micros) {
	t.Helper()
	storetest.RequireCharged(t, tb.store, orgID, before, kind, amount)
}

// batches counts the organisation's batches in PostgreSQL.
func (tb *testBundle) batches(t *testing.T, orgID string) int {
	t.Helper()
	var n int
	require.NoError(t, tb.pool.QueryRow(context.Background(), `SELECT count(*) FROM batches WHERE org_id = $1`, orgID).Scan(&n))
	return n
}

// poll polls a batch with tool, which must succeed, and checks that the
// answer is the REST poll's.
func (tb *testBundle) poll(t *testing.T, key, tool, id string) map[string]any {
	t.Helper()
	res := tb.callTool(t, key, tool, map[string]any{"batch_id": id})
	require.False(t, res.IsError, res.Content[0].Text)
	require.JSONEq(t, string(res.StructuredContent), res.Content[0].Text)
	path := map[string]string{"run_test": "/v1/tests", "certify_mode": "/v1/certify"}[tool]
	rest := tb.send(t, http.MethodGet, path+"?batch_id="+id, key, "")
	require.Equal(t, http.StatusOK, rest.status, rest.raw)
	require.JSONEq(t, rest.raw, res.Content[0].Text, "the tool answers what REST answers")
	var out map[string]any
	res.text(t, &out)
	require.Equal(t, true, out["ok"])
	return out
}

func (tb *testBundle) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := tb.pool.Exec(context.Background(), sql, args...)
	require.NoError(t, err)
}

// A dry run quotes and charges nothing; a launch charges its quote once, up
// front; a repeat with the same _meta key answers the same batch, charging
// nothing, and so does REST's with the same Idempotency-Key; the key with
// other arguments is idempotency_key_reused; the poll answers the batch
// as PostgreSQL holds it, queued, running and complete, exactly as REST.
func TestRunTestLaunchAndPoll(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	before := tb.money(t, org.ID)
	questions := map[string]any{"easy": 2, "medium": 1, "hard": 1}

	quote, res := tb.launch(t, key, "run_test", map[string]any{"model": "acme-panl", "questions": questions, "dry_run": true}, nil)
	require.True(t, quote.DryRun)
	require.Equal(t, 0.450556, *quote.TotalCostUSD, "2 × 0.076836 + 0.114336 + 0.182548")
	require.Nil(t, quote.BilledUSD)
	require.Empty(t, quote.BatchID)
	require.Equal(t, 4, quote.TotalQuestions)
	require.Equal(t, 4, quote.EstimatedMinutes)
	require.Equal(t, map[string]any{"questions": 2.0, "price_per_question_usd": 0.076836, "cost_usd": 0.153672},
		quote.PerBucket["light"])
	require.Equal(t, "panl", quote.ModeKey)
	require.False(t, replayed(res))
	require.Equal(t, before, tb.money(t, org.ID), "a dry run charges nothing")
	require.Zero(t, tb.batches(t, org.ID))

	meta := map[string]any{"conclave/idempotency-key": "acme-panl-nightly-1"}
	args := map[string]any{"model": "acme-panl", "questions": questions}
	a, first := tb.launch(t, key, "run_test", args, meta)
	require.False(t, a.DryRun)
	require.False(t, replayed(first))
	require.True(t, runs.ValidUUID(a.BatchID), a.BatchID)
	require.Equal(t, 0.450556, *a.BilledUSD)
	require.Nil(t, a.TotalCostUSD)
	require.Equal(t, "/v1/tests?batch_id="+a.BatchID, a.StatusURL)
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, 450_556)
	charged := tb.money(t, org.ID)

	// The same launch, its defaults written out: the same answer, once.
	again := tb.callToolMeta(t, key, "run_test", map[string]any{"questions": questions, "model": "acme-panl",
		"tiers": []string{"plus"}, "judge_repeats": 1, "judging_protocol": "pairwise", "dry_run": false}, meta)
	require.False(t, again.IsError, again.Content[0].Text)
	require.JSONEq(t, first.Content[0].Text, again.Content[0].Text)
	require.True(t, replayed(again))
	// REST shares the key: the same launch there answers the same batch.
	body, err := json.Marshal(args)
	require.NoError(t, err)
	rest := tb.post(t, "/v1/tests", key, string(body), "Idempotency-Key", "acme-panl-nightly-1")
	require.Equal(t, http.StatusOK, rest.status, rest.raw)
	require.Equal(t, "true", rest.header.Get("Idempotent-Replayed"))
	require.JSONEq(t, first.Content[0].Text, rest.raw)
	require.Equal(t, charged, tb.money(t, org.ID), "a repeat charges nothing")
	require.Equal(t, 1, tb.batches(t, org.ID))

	// The key with other arguments, or for a certification.
	e := tb.refused(t, key, "run_test", map[string]any{"model": "acme-panl", "questions": map[string]any{"easy": 3}}, meta,
		422, "idempotency_key_reused")
	require.Equal(t, "invalid_request_error", e.Error.Type)
	require.Equal(t, "Idempotency-Key", *e.Error.Param)
	tb.refused(t, key, "certify_mode", map[string]any{"model": "acme-panl"}, meta, 422, "idempotency_key_reused")
	tb.refused(t, key, "run_test", args, map[string]any{"conclave/idempotency-key": ""}, 400, "invalid_request")
	tb.refused(t, key, "run_test", args, map[string]any{"conclave/idempotency-key": strings.Repeat("k", 256)}, 400, "invalid_request")
	require.Equal(t, charged, tb.money(t, org.ID))

	// The poll, as the batch moves in PostgreSQL.
	p := tb.poll(t, key, "run_test", a.BatchID)
	require.NotContains(t, p, "certification")
	b := p["batch"].(map[string]any)
	require.Equal(t, a.BatchID, b["id"])
	require.Equal(t, "test", b["kind"])
	require.Equal(t, "queued", b["status"])
	require.Equal(t, "acme-panl", b["mode"])
	require.Equal(t, 1.0, b["mode_version"])
	require.Equal(t, map[string]any{"total": 4.0, "answered": 0.0, "judged": 0.0, "failed": 0.0, "cancelled": 0.0}, b["progress"])
	require.Equal(t, map[string]any{"questions": map[string]any{"easy": 2.0, "medium": 1.0, "hard": 1.0}, "tiers": []any{"plus"},
		"punch_up": false, "judges": []any{"nova_pro", "mistral_large", "llama4_maverick"}, "judge_repeats": 1.0,
		"judging_protocol": "pairwise"}, b["request"])
	require.Equal(t, 0.450556, b["billed_usd"])
	require.Nil(t, b["result"])
	require.Nil(t, b["started_at"])

	tb.exec(t, `UPDATE batches SET status = 'running', started_at = now(), answered = 1 WHERE id = $1`, a.BatchID)
	b = tb.poll(t, key, "run_test", a.BatchID)["batch"].(map[string]any)
	require.Equal(t, "running", b["status"])
	require.NotNil(t, b["started_at"])
	require.Equal(t, 1.0, b["progress"].(map[string]any)["answered"])

	tb.exec(t, `UPDATE batches SET status = 'complete', finished_at = now(), answered = 4, judged = 4,
		result = '{"w": 0.62, "judgments": 12}' WHERE id = $1`, a.BatchID)
	b = tb.poll(t, key, "run_test", a.BatchID)["batch"].(map[string]any)
	require.Equal(t, "complete", b["status"])
	require.Equal(t, map[string]any{"w": 0.62, "judgments": 12.0}, b["result"])
	require.NotNil(t, b["finished_at"])

	// Another organisation's batch, and a test run polled as a
	// certification, are not found.
	_, otherKey := tb.newOrg(t, "Beta", "BETA")
	tb.refused(t, otherKey, "run_test", map[string]any{"batch_id": a.BatchID}, nil, 404, "batch_not_found")
	tb.refused(t, key, "certify_mode", map[string]any{"batch_id": a.BatchID}, nil, 404, "batch_not_found")
}

// Without a _meta key a launch is keyed by its arguments, its API key and
// the mode version it runs: a client's retry of the same call answers the
// same batch and is never charged twice; other arguments, another API key
// or a new release of the mode launch anew, and so does the same call once
// the derived key has lapsed (an hour after the launch).
func TestRunTestDerivedKey(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	args := map[string]any{"model": "acme-panl", "buckets": map[string]any{"medium": 2}}
	before := tb.money(t, org.ID)

	a, first := tb.launch(t, key, "run_test", args, nil)
	require.False(t, replayed(first))
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, 2*114_336)
	charged := tb.money(t, org.ID)
	again, res := tb.launch(t, key, "run_test", map[string]any{"buckets": map[string]any{"medium": 2}, "model": "acme-panl", "judges": nil}, nil)
	require.True(t, replayed(res))
	require.JSONEq(t, first.Content[0].Text, res.Content[0].Text)
	require.Equal(t, a.BatchID, again.BatchID)
	require.Equal(t, charged, tb.money(t, org.ID), "the retry charged nothing")

	// REST without a key is not deduplicated: every launch is a batch.
	body, err := json.Marshal(args)
	require.NoError(t, err)
	rest := tb.post(t, "/v1/tests", key, string(body))
	require.Equal(t, http.StatusOK, rest.status, rest.raw)
	require.NotContains(t, rest.raw, a.BatchID)

	ids := map[string]bool{a.BatchID: true}
	// medium is a medium question's price: $0.114336 on the first release,
	// $0.106067 on the second's two seats at plus (its round 18,000 µ$
	// instead of 28,500: (0.10 + 0.03945 + 0.001973) × 75%).
	medium := core.Micros(114_336)
	fresh := func(k string, args map[string]any) {
		t.Helper()
		before := tb.money(t, org.ID)
		b, res := tb.launch(t, k, "run_test", args, nil)
		require.False(t, replayed(res))
		require.False(t, ids[b.BatchID], "a new batch")
		ids[b.BatchID] = true
		tb.requireCharged(t, org.ID, before, core.PostingTestCharge, 2*medium)
	}
	fresh(key, map[string]any{"model": "acme-panl", "buckets": map[string]any{"medium": 2}, "judges": []string{"nova_pro"}})
	fresh(tb.newKey(t, org.ID), args)
	fresh(key, map[string]any{"model": "ACME:PANL", "buckets": map[string]any{"medium": 2}})

	// A new release of the mode is another launch.
	var saved savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": twoSeatPlus(panelSpec("Acme Review Panel", "PANL")), "mode_id": "acme-panl",
		"release": true}, &saved)
	require.Equal(t, 2, saved.Version.Version)
	medium = 106_067
	fresh(key, args)

	// Past the lapse the same call launches again; within it, the batch
	// launched last answers.
	tb.exec(t, `UPDATE batch_launches SET updated_at = now() - interval '61 minutes' WHERE org_id = $1`, org.ID)
	fresh(key, args)
	last := tb.money(t, org.ID)
	_, res = tb.launch(t, key, "run_test", args, nil)
	require.True(t, replayed(res))
	require.Equal(t, last, tb.money(t, org.ID))
	require.Equal(t, len(ids)+1, tb.batches(t, org.ID), "the MCP batches and REST's one")

	// A dry run is never keyed, and does not answer a batch.
	dry, _ := tb.launch(t, key, "run_test", map[string]any{"model": "acme-panl", "buckets": map[string]any{"medium": 2}, "dry_run": true}, nil)
	require.True(t, dry.DryRun)
	require.Empty(t, dry.BatchID)
}

// A launch with a derived key that stopped before it was confirmed is not
// launched again under that key while it holds it: reconciliation_required,
// in words for a caller that sent no key.
func TestRunTestDerivedKeyStopped(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	args := map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 1}}
	a, _ := tb.launch(t, key, "run_test", args, nil)
	// As if the launch's attempt had claimed the key and died before its
	// commit: its claim in flight past its lease, no batch.
	tb.exec(t, `UPDATE batch_launches SET state = 'in_flight', locked_until = now() - interval '1 second' WHERE batch_id = $1`, a.BatchID)
	before := tb.money(t, org.ID)
	e := tb.refused(t, key, "run_test", args, nil, 409, "reconciliation_required")
	require.Contains(t, e.Error.Message, "these same arguments")
	require.Contains(t, e.Error.Message, "an hour")
	require.Nil(t, e.Error.Param, "the caller named no key")
	require.Equal(t, before, tb.money(t, org.ID))
	// Its own key launches it at once.
	b, _ := tb.launch(t, key, "run_test", args, map[string]any{"conclave/idempotency-key": "after-the-crash"})
	require.NotEqual(t, a.BatchID, b.BatchID)
	tb.requireCharged(t, org.ID, before, core.PostingTestCharge, 76_836)
}

// certify_mode: a listed mode of the organisation's own, $50 flat up front,
// 150 questions; a dry run of an unlisted mode answers its quote with
// requires_listing; the poll carries the verdict once the batch is
// complete, exactly as REST.
func TestCertifyMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	_, otherKey := tb.newOrg(t, "Beta", "BETA")
	before := tb.money(t, org.ID)

	q, _ := tb.launch(t, key, "certify_mode", map[string]any{"model": "acme-panl", "dry_run": true}, nil)
	require.True(t, q.DryRun)
	require.True(t, *q.RequiresListing)
	require.Equal(t, 50.0, *q.TotalCostUSD)
	require.Equal(t, 150, q.TotalQuestions)
	require.Equal(t, 150, q.EstimatedMinutes)
	require.Equal(t, map[string]any{"questions": 50.0}, q.PerBucket["hard"])
	require.Contains(t, q.Note, "listed")
	e := tb.refused(t, key, "certify_mode", map[string]any{"model": "acme-panl"}, nil, 400, "listing_required")
	require.Equal(t, "model", *e.Error.Param)
	e = tb.refused(t, key, "certify_mode", map[string]any{"model": "conclave-standard"}, nil, 403, "mode_not_owned")
	require.Equal(t, "permission_error", e.Error.Type)
	tb.refused(t, key, "certify_mode", map[string]any{"model": 7}, nil, 400, "invalid_model")
	tb.refused(t, key, "certify_mode", map[string]any{"model": "acme-panl", "judges": []string{"nova_pro"}}, nil, 400, "invalid_request")
	tb.refused(t, key, "certify_mode", map[string]any{"model": "acme-panl", "dry_run": "yes"}, nil, 400, "launch_refused")

	var listed struct{ Mode authoredMode }
	tb.succeed(t, key, "list_mode", map[string]any{"mode_id": "acme-panl"}, &listed)
	require.NoError(t, tb.approveWhenPending(context.Background(), "acme-panl"))
	q, _ = tb.launch(t, key, "certify_mode", map[string]any{"model": "acme-panl", "dry_run": true}, nil)
	require.False(t, *q.RequiresListing)
	e = tb.refused(t, otherKey, "certify_mode", map[string]any{"model": "acme-panl"}, nil, 403, "mode_not_owned")
	require.Equal(t, "model", *e.Error.Param)
	tb.refused(t, key, "certify_mode", map[string]any{"model": "acme-panl"}, nil, 402, "insufficient_balance")
	require.Equal(t, before, tb.money(t, org.ID), "nothing charged")
	require.Zero(t, tb.batches(t, org.ID))

	_, err := tb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: org.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	funded := tb.money(t, org.ID)
	a, _ := tb.launch(t, key, "certify_mode", map[string]any{"model": "acme-panl"}, nil)
	require.Equal(t, 50.0, *a.BilledUSD)
	require.Equal(t, 150, a.TotalQuestions)
	require.Equal(t, "/v1/certify?batch_id="+a.BatchID, a.StatusURL)
	tb.requireCharged(t, org.ID, funded, core.PostingCertifyCharge, core.CertificationPrice)
	_, res := tb.launch(t, key, "certify_mode", map[string]any{"model": "acme-panl"}, nil)
	require.True(t, replayed(res), "a retry is the same certification")
	tb.requireCharged(t, org.ID, funded, core.PostingCertifyCharge, core.CertificationPrice)

	tb.refused(t, key, "run_test", map[string]any{"batch_id": a.BatchID}, nil, 404, "batch_not_found")
	p := tb.poll(t, key, "certify_mode", a.BatchID)
	require.NotContains(t, p, "certification", "no verdict before the batch is complete")
	b := p["batch"].(map[string]any)
	require.Equal(t, "certify", b["kind"])
	require.Equal(t, "queued", b["status"])
	require.Equal(t, 1.0, b["attempt"])
	require.Equal(t, map[string]any{"light": 50.0, "medium": 50.0, "hard": 50.0}, b["request"].(map[string]any)["buckets"])

	tb.exec(t, `UPDATE batches SET status = 'complete', started_at = now(), finished_at = now(), answered = 150, judged = 150,
		result = '{"w": 0.58}',
		certification = '{"verdict": "provisional", "w": 0.58, "l": 0.47, "u": 0.69, "gates": [{"name": "valid_judgments", "passed": true}], "mode_certified": false}'
		WHERE id = $1`, a.BatchID)
	p = tb.poll(t, key, "certify_mode", a.BatchID)
	c := p["certification"].(map[string]any)
	require.Equal(t, "provisional", c["verdict"])
	require.Equal(t, 0.47, c["l"])
	require.Equal(t, 1.0, c["mode_version"])
	require.Equal(t, 1.0, c["attempt"])
	require.Equal(t, false, c["mode_certified"])
	require.Equal(t, "complete", p["batch"].(map[string]any)["status"])
}

// run_test and certify_mode refuse, with -32602 before anything runs, a
// call that neither launches (model) nor polls (batch_id alone).
func TestRunToolsInvalidParams(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	before := tb.money(t, org.ID)
	id := "00000000-0000-4000-8000-000000000000"
	for _, tc := range []struct {
		tool string
		args map[string]any
		says string
	}{
		{"run_test", map[string]any{}, "needs model"},
		{"run_test", map[string]any{"questions": map[string]any{"easy": 1}}, "needs model"},
		{"run_test", map[string]any{"model": nil, "buckets": map[string]any{"light": 1}, "dry_run": true}, "needs model"},
		{"run_test", map[string]any{"batch_id": id, "model": "acme-panl"}, "leave out model"},
		{"run_test", map[string]any{"batch_id": id, "dry_run": true, "buckets": map[string]any{"light": 1}}, "leave out buckets, dry_run"},
		{"certify_mode", map[string]any{}, "needs model"},
		{"certify_mode", map[string]any{"dry_run": true}, "needs model"},
		{"certify_mode", map[string]any{"batch_id": id, "model": "acme-panl"}, "leave out model"},
	} {
		msg := tb.invalidParams(t, key, tc.tool, tc.args)
		require.Contains(t, msg, tc.tool)
		require.Contains(t, msg, tc.says)
	}
	require.Equal(t, before, tb.money(t, org.ID))
	require.Zero(t, tb.batches(t, org.ID))
}

// The REST refusals come back in the forwarding shape with their status,
// code and parameter.
func TestRunToolFailures(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	before := tb.money(t, org.ID)
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		tool   string
		args   map[string]any
		status int
		code   string
		typ    string
		param  *string
	}{
		{"run_test", map[string]any{"model": "acme-panl"}, 400, "invalid_buckets", "invalid_request_error", str("buckets")},
		{"run_test", map[string]any{"model": ""}, 400, "invalid_model", "invalid_request_error", str("model")},
		{"run_test", map[string]any{"model": "acme-panl", "questions": map[string]any{"deep": 1}}, 400, "invalid_difficulty", "invalid_request_error", str("questions.deep")},
		{"run_test", map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 1}, "judge_repeats": 4}, 400, "launch_refused", "invalid_request_error", str("judge_repeats")},
		{"run_test", map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 1}, "seed": 4}, 400, "invalid_request", "invalid_request_error", str("seed")},
		{"run_test", map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 100, "medium": 100, "hard": 100}}, 402,
			"insufficient_balance", "invalid_request_error", nil},
		{"certify_mode", map[string]any{"model": "conclave-standard", "dry_run": true}, 403, "mode_not_owned", "permission_error", str("model")},
		{"run_test", map[string]any{"model": "acme-nope", "buckets": map[string]any{"light": 1}}, 404, "model_not_found", "invalid_request_error", str("model")},
		{"run_test", map[string]any{"batch_id": "00000000-0000-4000-8000-000000000000"}, 404, "batch_not_found", "invalid_request_error", str("batch_id")},
		{"run_test", map[string]any{"batch_id": "not-a-batch"}, 404, "batch_not_found", "invalid_request_error", str("batch_id")},
		{"run_test", map[string]any{"batch_id": ""}, 400, "missing_batch_id", "invalid_request_error", str("batch_id")},
		{"run_test", map[string]any{"batch_id": 7}, 400, "invalid_request", "invalid_request_error", str("batch_id")},
		{"certify_mode", map[string]any{"batch_id": "00000000-0000-4000-8000-000000000000"}, 404, "batch_not_found", "invalid_request_error", str("batch_id")},
	} {
		t.Run(fmt.Sprintf("%s %s %v", tc.tool, tc.code, tc.args), func(t *testing.T) {
			e := tb.refused(t, key, tc.tool, tc.args, nil, tc.status, tc.code)
			require.Equal(t, tc.typ, e.Error.Type)
			require.Equal(t, tc.param, e.Error.Param)
			require.Zero(t, e.Conclave.RetryAfterSeconds)
		})
	}
	require.Equal(t, before, tb.money(t, org.ID), "no refusal charged anything")
	require.Zero(t, tb.batches(t, org.ID))

	// A key without the scope.
	limited := tb.issueKey(t, core.CreateKeyParams{OrgID: org.ID, Scopes: []string{"models:read"}})
	tb.refused(t, limited, "run_test", map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 1}}, nil, 403, "insufficient_scope")
	tb.refused(t, limited, "certify_mode", map[string]any{"batch_id": "00000000-0000-4000-8000-000000000000"}, nil, 403, "insufficient_scope")
}

// Past the daily limit a launch is test_launch_limit_exceeded (429) with
// retry_after_seconds 3600 and charges nothing; a dry run and the repeat
// of a launch are not launches.
func TestRunTestLaunchLimit(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.testLaunches = 1 })
	org, key := tb.acmePanel(t)
	args := map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 1}}
	a, _ := tb.launch(t, key, "run_test", args, nil)
	before := tb.money(t, org.ID)
	e := tb.refused(t, key, "run_test", map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 2}}, nil,
		429, "test_launch_limit_exceeded")
	require.Equal(t, "rate_limit_error", e.Error.Type)
	require.Equal(t, 3600, e.Conclave.RetryAfterSeconds)
	again, res := tb.launch(t, key, "run_test", args, nil)
	require.True(t, replayed(res))
	require.Equal(t, a.BatchID, again.BatchID)
	dry, _ := tb.launch(t, key, "run_test", map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 2}, "dry_run": true}, nil)
	require.True(t, dry.DryRun)
	require.Equal(t, before, tb.money(t, org.ID))
}

// Without benchmark runs the tool server neither lists nor serves the two
// tools.
func TestRunToolsNeedRuns(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.noRuns = true })
	var names []string
	for _, tl := range tb.listTools(t) {
		names = append(names, tl.Name)
	}
	require.Equal(t, []string{"deliberate", "estimate", "list_modes", "get_receipt", "list_engines", "validate_mode", "genie_propose_mode",
		"save_mode", "list_mode"}, names, "the assistant's tools that read or launch runs are not listed either")
	require.Contains(t, tb.invalidParams(t, tb.key, "run_test", map[string]any{"model": "acme-panl"}), "unknown tool")
}

// A launch's claim holds for the lease: a repeat that arrives while the
// first attempt is still launching is request_in_progress with a wait.
func TestRunTestRepeatInFlight(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, key := tb.acmePanel(t)
	args := map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 1}}
	meta := map[string]any{"conclave/idempotency-key": "slow-launch"}
	a, _ := tb.launch(t, key, "run_test", args, meta)
	tb.exec(t, `UPDATE batch_launches SET state = 'in_flight', locked_until = now() + interval '20 seconds' WHERE batch_id = $1`, a.BatchID)
	e := tb.refused(t, key, "run_test", args, meta, 409, "request_in_progress")
	require.InDelta(t, 20, e.Conclave.RetryAfterSeconds, 2)
}

// A key limited to named modes polls only the batches of those modes:
// run_test and certify_mode with batch_id alone answer another mode's
// batch batch_not_found, word for word an unknown id's failure.
func TestRunToolsHideAnotherModesBatch(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.acmePanel(t)
	var saved savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Other Panel", "OTHR"), "release": true}, &saved)
	require.Equal(t, "acme-othr", saved.Mode.ID)
	a, _ := tb.launch(t, key, "run_test", map[string]any{"model": "acme-panl", "buckets": map[string]any{"light": 1}}, nil)

	var listed struct{ Mode authoredMode }
	tb.succeed(t, key, "list_mode", map[string]any{"mode_id": "acme-panl"}, &listed)
	require.NoError(t, tb.approveWhenPending(context.Background(), "acme-panl"))
	_, err := tb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: org.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	c, _ := tb.launch(t, key, "certify_mode", map[string]any{"model": "acme-panl"}, nil)

	other := tb.issueKey(t, core.CreateKeyParams{OrgID: org.ID, Modes: []string{"acme-othr"}})
	unknown := "00000000-0000-4000-8000-000000000000"
	for tool, id := range map[string]string{"run_test": a.BatchID, "certify_mode": c.BatchID} {
		hidden := tb.refused(t, other, tool, map[string]any{"batch_id": id}, nil, 404, "batch_not_found")
		none := tb.refused(t, other, tool, map[string]any{"batch_id": unknown}, nil, 404, "batch_not_found")
		require.Equal(t, strings.ReplaceAll(none.Error.Message, unknown, id), hidden.Error.Message, tool)
		require.Equal(t, none.Error.Type, hidden.Error.Type)
		require.Equal(t, none.Error.Param, hidden.Error.Param)

		own := tb.issueKey(t, core.CreateKeyParams{OrgID: org.ID, Modes: []string{"ACME:PANL"}})
		require.Equal(t, "queued", tb.poll(t, own, tool, id)["batch"].(map[string]any)["status"], tool)
	}
}

// A deployment whose configuration names no engine for the judges
// (judges: []) still serves; a run_test launch that needs them is refused
// as REST refuses it — provider_unavailable (409), param judges, naming
// every judge missing — and charges nothing. A dry run still quotes.
func TestLaunchRefusesJudgesNotConfigured(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.judgeConfigured = func(runs.Judge) bool { return false } })
	org, key := tb.acmePanel(t)
	before := tb.money(t, org.ID)
	args := map[string]any{"model": "acme-panl", "questions": map[string]any{"easy": 1}}
	e := tb.refused(t, key, "run_test", args, nil, 409, "provider_unavailable")
	require.Equal(t, "judges", *e.Error.Param)
	require.Contains(t, e.Error.Message, "The judges nova_pro, mistral_large and llama4_maverick are not configured on this server")
	args["dry_run"] = true
	quote, _ := tb.launch(t, key, "run_test", args, nil)
	require.True(t, quote.DryRun)
	require.Equal(t, before, tb.money(t, org.ID), "a refused launch charges nothing")
	require.Zero(t, tb.batches(t, org.ID))
}
