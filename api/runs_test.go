package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/execute"
	"github.com/conclavehq/conclave/core/bench/runs"
	"github.com/conclavehq/conclave/core/storetest"
	"github.com/conclavehq/conclave/internal/pgstore"
)

// testBank stands in for the question bank (core/bench/bank, another
// package's work): a seeded draw of made-up question ids.
type testBank struct{}

func (testBank) Version() string { return "test-bank-1" }

func (testBank) Draw(seed int64, counts map[runs.Bucket]int) ([]runs.DrawnQuestion, error) {
	var out []runs.DrawnQuestion
	for _, b := range runs.Buckets {
		for i := range counts[b] {
			out = append(out, runs.DrawnQuestion{ID: fmt.Sprintf("%s-%d-%03d", b, seed%1000, i), Bucket: b})
		}
	}
	return out, nil
}

// runsBundle is ACME with its released mode acme-panl (light $0.05,
// medium $0.10, deep $0.15), and the bundle's own organisation, another
// organisation to ACME.
//
// A test question of acme-panl costs 75% of a call's standard price: its
// surcharge, plus the reference question's projected token charge (1,000
// tokens in and 500 out per engine call, each seat at the dearer of its
// engine and backup) and the 5% fee on it. At plus a round's three seats
// cost 7,500 + 10,500 + 10,500 µ$ and its judge 10,500, the classifier
// and the synthesis 450 + 10,500 once: 49,950 µ$ for one round (light and
// medium; fee 2,498), 88,950 for the deep question's two (fee 4,448). At
// experience the seats cost 1,550 + 1,550 + 10,500: 35,050 µ$ (fee 1,753).
// So a question costs, at plus: light (50,000 + 52,448) × 75% = 76,836 µ$,
// medium 114,336, hard (150,000 + 93,398) × 75% = 182,548; light at
// experience 65,102.
type runsBundle struct {
	*authoringBundle
}

// testPace is the tests' pace of questions: 2 at a time, a minute each.
var testPace = runs.Pace{Workers: 2, QuestionTime: time.Minute}

func setupRuns(t *testing.T, opts ...func(*setupOpts)) *runsBundle {
	t.Helper()
	rb := &runsBundle{setupAuthoring(t, opts...)}
	rb.savePanel(t)
	rb.release(t, 200, "")
	return rb
}

func (rb *runsBundle) launch(t *testing.T, path, key, body string, headers ...string) *response {
	t.Helper()
	return rb.do(t, "POST", path, key, body, headers...)
}

// money is an organisation's balance and journal (storetest.Money).
type money = storetest.Money

func (rb *runsBundle) money(t *testing.T, orgID string) money {
	t.Helper()
	return storetest.MoneyOf(t, rb.store, orgID)
}

// requireCharged checks that since before exactly one posting of kind
// charged amount.
func (rb *runsBundle) requireCharged(t *testing.T, orgID string, before money, kind string, amount core.Micros) {
	t.Helper()
	storetest.RequireCharged(t, rb.store, orgID, before, kind, amount)
}

func num(v any) float64 { return v.(float64) }

// Every refusal of POST /v1/tests: its status and code, and nothing
// charged.
func TestTestLaunchRefusals(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	// A mode with no price for the hard band.
	rb.save(t, 201, map[string]any{"spec": panelSpec("Acme Light Panel", "LITE", func(s map[string]any) {
		c := s["api_commercial"].(map[string]any)
		c["q_surcharge_by_depth"] = map[string]any{"light": 0.05, "medium": 0.10}
		delete(c, "q_surcharge_usd")
	})})
	require.Equal(t, 200, rb.do(t, "POST", "/v1/modes/acme-lite/release", rb.key, "").status)
	before := rb.money(t, rb.acme.ID)

	tests := []struct {
		name, key, body string
		status          int
		code            core.Code
		typ             string
	}{
		{"no model", rb.key, `{"buckets":{"light":1}}`, 400, core.CodeInvalidModel, "invalid_request_error"},
		{"no form", rb.key, `{"model":"acme-panl"}`, 400, core.CodeInvalidBuckets, "invalid_request_error"},
		{"bucket name", rb.key, `{"model":"acme-panl","buckets":{"extreme":1}}`, 400, core.CodeInvalidBucket, "invalid_request_error"},
		{"bucket count", rb.key, `{"model":"acme-panl","buckets":{"light":101}}`, 400, core.CodeInvalidBucketCount, "invalid_request_error"},
		{"too many", rb.key, `{"model":"acme-panl","buckets":{"light":100,"medium":100,"hard":100},"tiers":["free","plus"]}`,
			400, core.CodeTooManyQuestions, "invalid_request_error"},
		{"judges", rb.key, `{"model":"acme-panl","buckets":{"light":1},"judges":["gpt_5"]}`, 400, core.CodeInvalidJudges, "invalid_request_error"},
		{"questions", rb.key, `{"model":"acme-panl","questions":[3]}`, 400, core.CodeInvalidQuestions, "invalid_request_error"},
		{"difficulty", rb.key, `{"model":"acme-panl","questions":{"deep":3}}`, 400, core.CodeInvalidDifficulty, "invalid_request_error"},
		{"question count", rb.key, `{"model":"acme-panl","questions":{"easy":1.5}}`, 400, core.CodeInvalidQuestionCount, "invalid_request_error"},
		{"tiers", rb.key, `{"model":"acme-panl","questions":{"easy":1},"tiers":[]}`, 400, core.CodeInvalidTiers, "invalid_request_error"},
		{"punch_up", rb.key, `{"model":"acme-panl","questions":{"easy":1},"punch_up":1}`, 400, core.CodeInvalidPunchUp, "invalid_request_error"},
		{"repeats", rb.key, `{"model":"acme-panl","buckets":{"light":1},"judge_repeats":5}`, 400, core.CodeLaunchRefused, "invalid_request_error"},
		{"unread field", rb.key, `{"model":"acme-panl","buckets":{"light":1},"seed":4}`, 400, core.CodeInvalidRequest, "invalid_request_error"},
		{"not json", rb.key, `{"model":`, 400, core.CodeInvalidJSON, "invalid_request_error"},
		{"no price", rb.key, `{"model":"acme-lite","buckets":{"light":1,"hard":1}}`, 400, core.CodePriceUnavailable, "invalid_request_error"},
		{"suffix", rb.key, `{"model":"conclave-standard@v1","buckets":{"light":1}}`, 400, core.CodeSuffixNotSupported, "invalid_request_error"},
		{"unknown mode", rb.key, `{"model":"acme-nope","buckets":{"light":1}}`, 404, core.CodeModelNotFound, "invalid_request_error"},
		{"tier without seats", rb.key, `{"model":"acme-panl","buckets":{"light":1},"tiers":["pro"]}`, 403, core.CodeTierNotPermitted, "permission_error"},
		{"another's unpublished mode", rb.otherKey, `{"model":"acme-panl","buckets":{"light":1}}`, 403, core.CodeModeNotPublished, "permission_error"},
	}
	for _, tt := range tests {
		r := rb.launch(t, "/v1/tests", tt.key, tt.body)
		require.Equal(t, tt.status, r.status, "%s: %s", tt.name, r.raw)
		requireError(t, r, tt.status, tt.code, tt.typ)
	}
	// The same refusals as dry runs.
	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-lite","buckets":{"hard":1},"dry_run":true}`)
	requireError(t, r, 400, core.CodePriceUnavailable, "invalid_request_error")
	require.Equal(t, before, rb.money(t, rb.acme.ID), "no refusal charged anything")

	// A configured mode is one the key can call: billing the organisation's
	// balance, it may test it (a certification needs the organisation's own
	// mode).
	r = rb.launch(t, "/v1/tests", rb.key, `{"model":"conclave-standard","buckets":{"light":1},"dry_run":true}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Positive(t, r.body["per_bucket"].(map[string]any)["light"].(map[string]any)["price_per_question_usd"])
	requireError(t, rb.launch(t, "/v1/certify", rb.key, `{"model":"conclave-standard","dry_run":true}`), 403,
		core.CodeModeNotOwned, "permission_error")

	// A key without the tests scope.
	limited := rb.newKey(t, &core.CreateKeyParams{OrgID: rb.acme.ID, Scopes: []string{"models:read"}})
	requireError(t, rb.launch(t, "/v1/tests", limited, `{"model":"acme-panl","buckets":{"light":1}}`), 403,
		core.CodeInsufficientScope, "permission_error")
}

// A dry run quotes and charges nothing; the launch charges the quote, up
// front, in one posting; the poll shows the batch queued.
func TestTestDryRunThenLaunch(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	before := rb.money(t, rb.acme.ID)
	body := `{"model":"acme-panl","buckets":{"light":2,"medium":1,"hard":1}%s}`

	r := rb.launch(t, "/v1/tests", rb.key, fmt.Sprintf(body, `,"dry_run":true`))
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, true, r.body["dry_run"])
	require.Equal(t, 0.450556, num(r.body["total_cost_usd"]), "2 × 0.076836 + 0.114336 + 0.182548")
	require.Equal(t, 4.0, num(r.body["total_questions"]))
	require.Equal(t, 2.0, num(r.body["estimated_minutes"]), "4 questions, 2 at a time, a minute each (testPace)")
	require.Equal(t, map[string]any{"questions": 2.0, "price_per_question_usd": 0.076836, "cost_usd": 0.153672},
		obj(r.body["per_bucket"])["light"])
	require.NotContains(t, r.body, "batch_id")
	require.NotContains(t, r.body, "billed_usd")
	require.Equal(t, "panl", r.body["mode_key"])
	require.Equal(t, before, rb.money(t, rb.acme.ID), "a dry run charges nothing")

	r = rb.launch(t, "/v1/tests", rb.key, fmt.Sprintf(body, ""))
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, false, r.body["dry_run"])
	require.Equal(t, 0.450556, num(r.body["billed_usd"]))
	require.NotContains(t, r.body, "total_cost_usd")
	id := r.body["batch_id"].(string)
	require.True(t, runs.ValidUUID(id))
	require.Equal(t, "/v1/tests?batch_id="+id, r.body["status_url"])
	rb.requireCharged(t, rb.acme.ID, before, core.PostingTestCharge, 450_556)
	require.Equal(t, 2.0, num(r.body["estimated_minutes"]))
	again := rb.launch(t, "/v1/tests", rb.key, fmt.Sprintf(body, `,"dry_run":true`))
	require.Equal(t, 4.0, num(again.body["estimated_minutes"]), "behind the 4 questions just launched")

	p := rb.do(t, "GET", r.body["status_url"].(string), rb.key, "")
	require.Equal(t, 200, p.status, p.raw)
	require.Equal(t, true, p.body["ok"])
	require.NotContains(t, p.body, "certification")
	b := obj(p.body["batch"])
	require.Equal(t, id, b["id"])
	require.Equal(t, "test", b["kind"])
	require.Equal(t, "queued", b["status"])
	require.Equal(t, "acme-panl", b["mode"])
	require.Equal(t, 1.0, num(b["mode_version"]))
	require.NotEmpty(t, b["mode_config_hash"])
	require.Equal(t, map[string]any{"total": 4.0, "answered": 0.0, "judged": 0.0, "failed": 0.0, "cancelled": 0.0}, b["progress"])
	require.Equal(t, map[string]any{"total": 2.0, "answered": 0.0, "judged": 0.0, "failed": 0.0, "cancelled": 0.0}, obj(b["per_bucket"])["light"])
	require.Equal(t, map[string]any{
		"buckets": map[string]any{"light": 2.0, "medium": 1.0, "hard": 1.0}, "tiers": []any{"plus"}, "punch_up": false,
		"judges": []any{"nova_pro", "mistral_large", "llama4_maverick"}, "judge_repeats": 1.0, "judging_protocol": "pairwise",
	}, b["request"])
	require.Equal(t, 0.450556, num(b["billed_usd"]))
	require.Nil(t, b["attempt"])
	require.Nil(t, b["result"])
	require.Equal(t, "test-bank-1", b["bank_version"])

	// The questions form: each question at each tier.
	before = rb.money(t, rb.acme.ID)
	r = rb.launch(t, "/v1/tests", rb.key, `{"model":"ACME:PANL","questions":{"easy":3},"tiers":["free","plus"],"punch_up":true,
		"judges":["mistral_large"],"judge_repeats":2,"judging_protocol":"plurality"}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, 6.0, num(r.body["total_questions"]))
	require.Equal(t, map[string]any{"questions": 6.0, "cost_usd": 0.425814, "per_tier": map[string]any{
		"experience": map[string]any{"questions": 3.0, "price_per_question_usd": 0.065102, "cost_usd": 0.195306},
		"plus":       map[string]any{"questions": 3.0, "price_per_question_usd": 0.076836, "cost_usd": 0.230508},
	}}, obj(r.body["per_bucket"])["light"], "a tier's price each")
	rb.requireCharged(t, rb.acme.ID, before, core.PostingTestCharge, 3*65_102+3*76_836)
	p = rb.do(t, "GET", r.body["status_url"].(string), rb.key, "")
	require.Equal(t, 200, p.status, p.raw)
	require.Equal(t, map[string]any{
		"questions": map[string]any{"easy": 3.0}, "tiers": []any{"experience", "plus"}, "punch_up": true,
		"judges": []any{"mistral_large"}, "judge_repeats": 2.0, "judging_protocol": "plurality",
	}, obj(p.body["batch"])["request"])
	require.Equal(t, "ACME:PANL", obj(p.body["batch"])["model"])
}

// failingLaunches answers the first launch with an unknown outcome — the
// database went away as the launch committed — and leaves it unwritten.
type failingLaunches struct {
	runs.LaunchStore
	mu     sync.Mutex
	failed bool
}

func (f *failingLaunches) Launch(ctx context.Context, p *runs.LaunchParams) (*runs.Batch, error) {
	f.mu.Lock()
	first := !f.failed
	f.failed = true
	f.mu.Unlock()
	if first {
		return nil, fmt.Errorf("%w: the connection closed during the commit", core.ErrOutcomeUnknown)
	}
	return f.LaunchStore.Launch(ctx, p)
}

// The idempotency rows of the launch endpoints.
func TestLaunchIdempotency(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t, func(o *setupOpts) {
		o.launches = func(s runs.LaunchStore) runs.LaunchStore { return &failingLaunches{LaunchStore: s} }
	})
	body := `{"model":"acme-panl","buckets":{"medium":2}}`
	before := rb.money(t, rb.acme.ID)

	// An attempt stopped as it committed: it charged nothing; a repeat
	// within its lease waits, and after it the key is retired.
	r := rb.launch(t, "/v1/tests", rb.key, body, "Idempotency-Key", "stopped")
	requireError(t, r, 500, core.CodeInternalError, "api_error")
	r = rb.launch(t, "/v1/tests", rb.key, body, "Idempotency-Key", "stopped")
	requireError(t, r, 409, core.CodeRequestInProgress, "invalid_request_error")
	require.NotEmpty(t, r.header.Get("Retry-After"))
	_, err := rb.store.Pool().Exec(context.Background(),
		`UPDATE batch_launches SET locked_until = now() - interval '1 second' WHERE key = 'stopped'`)
	require.NoError(t, err)
	r = rb.launch(t, "/v1/tests", rb.key, body, "Idempotency-Key", "stopped")
	requireError(t, r, 409, core.CodeReconciliationRequired, "invalid_request_error")
	requireError(t, rb.launch(t, "/v1/tests", rb.key, body, "Idempotency-Key", "stopped"), 409,
		core.CodeReconciliationRequired, "invalid_request_error")
	require.Equal(t, before, rb.money(t, rb.acme.ID), "the stopped attempt charged nothing")

	// A launch, repeated: the same answer, charged once.
	first := rb.launch(t, "/v1/tests", rb.key, body, "Idempotency-Key", "k1")
	require.Equal(t, 200, first.status, first.raw)
	require.Empty(t, first.header.Get("Idempotent-Replayed"))
	again := rb.launch(t, "/v1/tests", rb.key, `{ "buckets": {"medium": 2}, "model": "acme-panl" }`, "Idempotency-Key", "k1")
	require.Equal(t, 200, again.status, again.raw)
	require.Equal(t, "true", again.header.Get("Idempotent-Replayed"))
	require.JSONEq(t, first.raw, again.raw, "the same acceptance")
	rb.requireCharged(t, rb.acme.ID, before, core.PostingTestCharge, 2*114_336)
	charged := rb.money(t, rb.acme.ID)

	// The key with another body, on the other endpoint, from another API
	// key: refused.
	requireError(t, rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"medium":3}}`, "Idempotency-Key", "k1"),
		422, core.CodeIdempotencyKeyReused, "invalid_request_error")
	requireError(t, rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`, "Idempotency-Key", "k1"),
		422, core.CodeIdempotencyKeyReused, "invalid_request_error")
	second := rb.newKey(t, &core.CreateKeyParams{OrgID: rb.acme.ID})
	requireError(t, rb.launch(t, "/v1/tests", second, body, "Idempotency-Key", "k1"),
		422, core.CodeIdempotencyKeyReused, "invalid_request_error")
	requireError(t, rb.launch(t, "/v1/tests", rb.key, body, "Idempotency-Key", ""), 400, core.CodeInvalidRequest, "invalid_request_error")
	require.Equal(t, charged, rb.money(t, rb.acme.ID))

	// A refused launch leaves its key free: the key launches once the
	// refusal is fixed.
	big := `{"model":"acme-panl","buckets":{"light":100,"medium":100,"hard":100}}` // $37.372
	requireError(t, rb.launch(t, "/v1/tests", rb.key, big, "Idempotency-Key", "k2"), 402,
		core.CodeInsufficientBalance, "invalid_request_error")
	require.Equal(t, charged, rb.money(t, rb.acme.ID), "a refused launch charges nothing")
	_, err = rb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: rb.acme.ID, Amount: core.USD(40)})
	require.NoError(t, err)
	funded := rb.money(t, rb.acme.ID)
	r = rb.launch(t, "/v1/tests", rb.key, big, "Idempotency-Key", "k2")
	require.Equal(t, 200, r.status, r.raw)
	rb.requireCharged(t, rb.acme.ID, funded, core.PostingTestCharge, 100*(76_836+114_336+182_548))
}

// The daily launch limits: 429 with Retry-After 3600 past them, charging
// nothing; dry runs are not launches.
func TestDailyLaunchLimits(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t, func(o *setupOpts) { o.cfg.TestLaunches, o.cfg.CertifyLaunches = 1, 1 })
	body := `{"model":"acme-panl","buckets":{"light":1}}`
	require.Equal(t, 200, rb.launch(t, "/v1/tests", rb.key, body).status)
	before := rb.money(t, rb.acme.ID)
	r := rb.launch(t, "/v1/tests", rb.key, body)
	requireError(t, r, 429, core.CodeTestLaunchLimitExceeded, "rate_limit_error")
	require.Equal(t, "3600", r.header.Get("Retry-After"))
	require.Equal(t, 200, rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1},"dry_run":true}`).status)
	require.Equal(t, before, rb.money(t, rb.acme.ID))

	rb.approve(t)
	_, err := rb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: rb.acme.ID, Amount: core.USD(200)})
	require.NoError(t, err)
	require.Equal(t, 200, rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`).status, "the limits are per kind")
	before = rb.money(t, rb.acme.ID)
	r = rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`)
	requireError(t, r, 429, core.CodeCertifyLaunchLimitExceeded, "rate_limit_error")
	require.Equal(t, "3600", r.header.Get("Retry-After"))
	require.Equal(t, before, rb.money(t, rb.acme.ID))
}

// approve lists acme-panl and has the operator approve version 1.
func (rb *runsBundle) approve(t *testing.T) {
	t.Helper()
	require.Equal(t, 200, rb.listing(t, "").status)
	ctx := context.Background()
	m, err := rb.store.AuthoredModeByRef(ctx, "acme-panl")
	require.NoError(t, err)
	_, err = rb.store.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, ListingRevision: m.ListingRevision, Version: 1})
	require.NoError(t, err)
}

// Certification: a listed mode the organisation owns, $50 flat up front,
// 150 questions; the poll carries the verdict once the batch is complete.
func TestCertify(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	before := rb.money(t, rb.acme.ID)

	r := rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl","dry_run":true}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, true, r.body["requires_listing"])
	require.Equal(t, 50.0, num(r.body["total_cost_usd"]))
	require.Equal(t, 150.0, num(r.body["total_questions"]))
	require.Equal(t, 75.0, num(r.body["estimated_minutes"]), "150 questions, 2 at a time (testPace)")
	require.Equal(t, map[string]any{"questions": 50.0}, obj(r.body["per_bucket"])["hard"])
	requireError(t, rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`), 400, core.CodeListingRequired, "invalid_request_error")
	requireError(t, rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl","judges":["nova_pro"]}`), 400,
		core.CodeInvalidRequest, "invalid_request_error")
	requireError(t, rb.launch(t, "/v1/certify", rb.key, `{"model":7}`), 400, core.CodeInvalidModel, "invalid_request_error")

	rb.approve(t)
	r = rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl","dry_run":true}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, false, r.body["requires_listing"])
	requireError(t, rb.launch(t, "/v1/certify", rb.otherKey, `{"model":"acme-panl"}`), 403, core.CodeModeNotOwned, "permission_error")
	requireError(t, rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`), 402, core.CodeInsufficientBalance, "invalid_request_error")
	require.Equal(t, before, rb.money(t, rb.acme.ID), "nothing charged")

	_, err := rb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: rb.acme.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	funded := rb.money(t, rb.acme.ID)
	r = rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, 50.0, num(r.body["billed_usd"]))
	require.Equal(t, 150.0, num(r.body["total_questions"]))
	id := r.body["batch_id"].(string)
	require.Equal(t, "/v1/certify?batch_id="+id, r.body["status_url"])
	rb.requireCharged(t, rb.acme.ID, funded, core.PostingCertifyCharge, core.CertificationPrice)

	requireError(t, rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.key, ""), 404, core.CodeBatchNotFound, "invalid_request_error")
	p := rb.do(t, "GET", "/v1/certify?batch_id="+id, rb.key, "")
	require.Equal(t, 200, p.status, p.raw)
	b := obj(p.body["batch"])
	require.Equal(t, "certify", b["kind"])
	require.Equal(t, 1.0, num(b["attempt"]))
	require.Equal(t, map[string]any{"light": 50.0, "medium": 50.0, "hard": 50.0}, obj(b["request"])["buckets"])
	require.Equal(t, 2.0, num(obj(b["request"])["judge_repeats"]))
	require.NotContains(t, p.body, "certification", "no verdict before the batch is complete")

	// The batch run to its end by the executor, as the question jobs do.
	exec := rb.executor(t)
	for i := range 150 {
		require.NoError(t, exec.RunQuestion(context.Background(), id, i))
	}
	p = rb.do(t, "GET", "/v1/certify?batch_id="+id, rb.key, "")
	require.Equal(t, 200, p.status, p.raw)
	b = obj(p.body["batch"])
	require.Equal(t, "complete", b["status"])
	require.Equal(t, map[string]any{"total": 150.0, "answered": 150.0, "judged": 150.0, "failed": 0.0, "cancelled": 0.0}, b["progress"])
	require.Equal(t, map[string]any{"w": 1.0, "judgments": 900.0}, b["result"])
	require.NotNil(t, b["finished_at"])
	c := obj(p.body["certification"])
	require.Equal(t, "certified", c["verdict"])
	require.Equal(t, 1.0, num(c["mode_version"]))
	require.Equal(t, b["mode_config_hash"], c["mode_config_hash"])
	require.Equal(t, 1.0, num(c["attempt"]))
	require.Equal(t, true, c["mode_certified"])
	require.Equal(t, []any{map[string]any{"name": "valid_judgments", "passed": true}}, c["gates"])
	m, err := rb.store.AuthoredModeByRef(context.Background(), "acme-panl")
	require.NoError(t, err)
	require.Equal(t, 1, m.CertifiedVersion)
}

// The poll's refusals.
func TestBatchPollCodes(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1}}`)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["batch_id"].(string)

	requireError(t, rb.do(t, "GET", "/v1/tests", rb.key, ""), 400, core.CodeMissingBatchID, "invalid_request_error")
	requireError(t, rb.do(t, "GET", "/v1/tests?batch_id=", rb.key, ""), 400, core.CodeMissingBatchID, "invalid_request_error")
	requireError(t, rb.do(t, "GET", "/v1/certify", rb.key, ""), 400, core.CodeMissingBatchID, "invalid_request_error")
	requireError(t, rb.do(t, "GET", "/v1/tests?batch_id="+id+"&batch_id="+id, rb.key, ""), 400, core.CodeInvalidRequest, "invalid_request_error")
	for _, bad := range []string{"not-a-batch", "00000000-0000-4000-8000-000000000000", "'; DROP TABLE batches; --"} {
		requireError(t, rb.do(t, "GET", "/v1/tests?batch_id="+url.QueryEscape(bad), rb.key, ""), 404, core.CodeBatchNotFound, "invalid_request_error")
	}
	requireError(t, rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.otherKey, ""), 404, core.CodeBatchNotFound, "invalid_request_error")
	require.Equal(t, 200, rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.key, "").status)
	limited := rb.newKey(t, &core.CreateKeyParams{OrgID: rb.acme.ID, Scopes: []string{"models:read"}})
	requireError(t, rb.do(t, "GET", "/v1/tests?batch_id="+id, limited, ""), 403, core.CodeInsufficientScope, "permission_error")
}

// The executor over the bundle's store, with small stand-ins for the
// answerers, the panel and the scorer (other packages' work): every
// judgment rules for the mode, and W ≥ 0.5 certifies.
func (rb *runsBundle) executor(t *testing.T) *runs.Executor {
	t.Helper()
	return rb.executorWith(t, standIn{}, standIn{})
}

// executorWith is the executor with the mode's answerer and the scorer
// given, to make questions or the scoring fail.
func (rb *runsBundle) executorWith(t *testing.T, mode runs.Answerer, scorer runs.Scorer) *runs.Executor {
	t.Helper()
	e, err := runs.NewExecutor(runs.ExecutorDeps{Store: pgstore.NewBatches(rb.store.Pool(), nil), Mode: mode, Baseline: standIn{},
		Panel: standIn{}, Scorer: scorer, Certifier: rb.store})
	require.NoError(t, err)
	return e
}

// failingMode answers as standIn does but for the questions it names,
// whose answer fails as an engine's would.
type failingMode map[int]bool

func (f failingMode) Answer(ctx context.Context, r *runs.AnswerRequest) (*runs.Answer, error) {
	if f[r.Question.Index] {
		return nil, errors.New("the engine is down")
	}
	return standIn{}.Answer(ctx, r)
}

// refusingScorer cannot score any batch.
type refusingScorer struct{}

func (refusingScorer) Score(context.Context, *runs.Batch, []*runs.Question) (*runs.Scored, error) {
	return nil, errors.New("the scorer is down")
}

// runToEnd runs every question of a batch of n as its job would: each
// attempt that fails is its last, and gives the question up.
func runToEnd(t *testing.T, e *runs.Executor, id string, n int) {
	t.Helper()
	ctx := context.Background()
	for i := range n {
		if err := e.RunQuestion(ctx, id, i); err != nil {
			require.NoError(t, e.AbandonQuestion(ctx, id, i, err))
		}
	}
}

// Cancelling a running test run: the batch is cancelled, its unfinished
// questions too, and their prices come back in one test_refund posting;
// the judged question stays paid. A repeat refunds nothing more; a
// complete batch is batch_finished; the poll's refusals apply.
func TestCancelTestRun(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	ctx := context.Background()
	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":2,"medium":1,"hard":1}}`)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["batch_id"].(string)
	exec := rb.executor(t)
	require.NoError(t, exec.RunQuestion(ctx, id, 0), "the first light question is judged")
	before := rb.money(t, rb.acme.ID)

	requireError(t, rb.do(t, "DELETE", "/v1/tests", rb.key, ""), 400, core.CodeMissingBatchID, "invalid_request_error")
	requireError(t, rb.do(t, "DELETE", "/v1/tests?batch_id="+id, rb.otherKey, ""), 404, core.CodeBatchNotFound, "invalid_request_error")
	requireError(t, rb.do(t, "DELETE", "/v1/certify?batch_id="+id, rb.key, ""), 404, core.CodeBatchNotFound, "invalid_request_error")
	requireError(t, rb.do(t, "DELETE", "/v1/tests?batch_id=not-a-batch", rb.key, ""), 404, core.CodeBatchNotFound, "invalid_request_error")
	limited := rb.newKey(t, &core.CreateKeyParams{OrgID: rb.acme.ID, Scopes: []string{"models:read"}})
	requireError(t, rb.do(t, "DELETE", "/v1/tests?batch_id="+id, limited, ""), 403, core.CodeInsufficientScope, "permission_error")
	require.Equal(t, before, rb.money(t, rb.acme.ID), "no refusal refunded anything")

	c := rb.do(t, "DELETE", "/v1/tests?batch_id="+id, rb.key, "")
	require.Equal(t, 200, c.status, c.raw)
	require.Equal(t, true, c.body["ok"])
	b := obj(c.body["batch"])
	require.Equal(t, id, b["id"])
	require.Equal(t, "cancelled", b["status"])
	require.NotNil(t, b["finished_at"])
	require.Equal(t, map[string]any{"total": 4.0, "answered": 1.0, "judged": 1.0, "failed": 0.0, "cancelled": 3.0}, b["progress"])
	require.Equal(t, map[string]any{"total": 2.0, "answered": 1.0, "judged": 1.0, "failed": 0.0, "cancelled": 1.0}, obj(b["per_bucket"])["light"])
	require.Equal(t, 0.450556, num(b["billed_usd"]))
	require.Equal(t, 0.37372, num(b["refunded_usd"]), "0.076836 + 0.114336 + 0.182548: the three questions not answered")
	rb.requireCharged(t, rb.acme.ID, before, core.PostingTestRefund, -373_720)
	cancelled := rb.money(t, rb.acme.ID)

	again := rb.do(t, "DELETE", "/v1/tests?batch_id="+id, rb.key, "")
	require.Equal(t, 200, again.status, again.raw)
	require.Equal(t, c.body["batch"], again.body["batch"], "a repeat answers the batch as it stands")
	p := rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.key, "")
	require.Equal(t, c.body["batch"], p.body["batch"], "as the poll shows it")

	// Its jobs, still queued, stop without recording anything.
	for i := 1; i < 4; i++ {
		require.NoError(t, exec.RunQuestion(ctx, id, i))
	}
	q, err := pgstore.NewBatches(rb.store.Pool(), nil).Question(ctx, id, 1)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionCancelled, q.State)
	require.Empty(t, q.Answers)
	require.Equal(t, cancelled, rb.money(t, rb.acme.ID), "nothing more refunded")

	// A complete batch has nothing left to cancel.
	r = rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1}}`)
	require.Equal(t, 200, r.status, r.raw)
	done := r.body["batch_id"].(string)
	require.NoError(t, exec.RunQuestion(ctx, done, 0))
	charged := rb.money(t, rb.acme.ID)
	requireError(t, rb.do(t, "DELETE", "/v1/tests?batch_id="+done, rb.key, ""), 409, core.CodeBatchFinished, "invalid_request_error")
	require.Equal(t, "complete", obj(rb.do(t, "GET", "/v1/tests?batch_id="+done, rb.key, "").body["batch"])["status"])
	require.Equal(t, charged, rb.money(t, rb.acme.ID))
}

// A queued certification cancelled: its $50 back in one certify_refund
// posting, no verdict, and its attempt number stays used.
func TestCancelCertification(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	rb.approve(t)
	_, err := rb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: rb.acme.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	r := rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["batch_id"].(string)
	before := rb.money(t, rb.acme.ID)
	c := rb.do(t, "DELETE", "/v1/certify?batch_id="+id, rb.key, "")
	require.Equal(t, 200, c.status, c.raw)
	require.NotContains(t, c.body, "certification")
	b := obj(c.body["batch"])
	require.Equal(t, "cancelled", b["status"])
	require.Nil(t, b["started_at"])
	require.Equal(t, 50.0, num(b["refunded_usd"]))
	require.Equal(t, 150.0, num(obj(b["progress"])["cancelled"]))
	rb.requireCharged(t, rb.acme.ID, before, core.PostingCertifyRefund, -core.CertificationPrice)

	r = rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`)
	require.Equal(t, 200, r.status, r.raw)
	p := rb.do(t, "GET", "/v1/certify?batch_id="+r.body["batch_id"].(string), rb.key, "")
	require.Equal(t, 2.0, num(obj(p.body["batch"])["attempt"]), "the cancelled attempt stays counted")
}

// A question given up on after its last attempt is refunded its price, in
// one test_refund posting; the batch still completes with the others.
func TestFailedQuestionRefunded(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1,"hard":1}}`)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["batch_id"].(string)
	before := rb.money(t, rb.acme.ID)
	runToEnd(t, rb.executorWith(t, failingMode{1: true}, standIn{}), id, 2)

	rb.requireCharged(t, rb.acme.ID, before, core.PostingTestRefund, -182_548)
	b := obj(rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.key, "").body["batch"])
	require.Equal(t, "complete", b["status"])
	require.Equal(t, map[string]any{"total": 2.0, "answered": 1.0, "judged": 1.0, "failed": 1.0, "cancelled": 0.0}, b["progress"])
	require.Equal(t, 0.182548, num(b["refunded_usd"]), "the hard question's price")
}

// A batch that fails is refunded in full: every question failed (each
// refunded as it failed), or the scorer refused it (what was judged is
// refunded as the batch fails).
func TestFailedBatchRefunded(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	body := `{"model":"acme-panl","buckets":{"light":1,"medium":1}}`

	r := rb.launch(t, "/v1/tests", rb.key, body)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["batch_id"].(string)
	before := rb.money(t, rb.acme.ID)
	runToEnd(t, rb.executorWith(t, failingMode{0: true, 1: true}, standIn{}), id, 2)
	b := obj(rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.key, "").body["batch"])
	require.Equal(t, "failed", b["status"])
	require.Equal(t, 0.191172, num(b["refunded_usd"]))
	require.Equal(t, before.Balance+191_172, rb.money(t, rb.acme.ID).Balance, "the whole charge back")
	require.Len(t, rb.money(t, rb.acme.ID).Postings, len(before.Postings)+2, "one refund per question")

	r = rb.launch(t, "/v1/tests", rb.key, body)
	require.Equal(t, 200, r.status, r.raw)
	id = r.body["batch_id"].(string)
	exec := rb.executorWith(t, failingMode{1: true}, refusingScorer{})
	require.NoError(t, exec.RunQuestion(context.Background(), id, 0))
	judged := rb.money(t, rb.acme.ID)
	runToEnd(t, exec, id, 2)
	b = obj(rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.key, "").body["batch"])
	require.Equal(t, "failed", b["status"])
	require.Equal(t, "the batch could not be scored", b["failure"])
	require.Equal(t, 0.191172, num(b["refunded_usd"]))
	require.Equal(t, judged.Balance+191_172, rb.money(t, rb.acme.ID).Balance)
	ps := rb.money(t, rb.acme.ID).Postings
	require.Len(t, ps, len(judged.Postings)+2, "the failed question's refund, then the rest as the batch failed")
	storetest.RequireCharged(t, rb.store, rb.acme.ID,
		storetest.Money{Balance: judged.Balance + 114_336, Postings: ps[:len(ps)-1]}, core.PostingTestRefund, -76_836)
}

type standIn struct{}

func (standIn) Answer(_ context.Context, r *runs.AnswerRequest) (*runs.Answer, error) {
	return &runs.Answer{Text: string(r.Side) + " on " + r.Question.QuestionID, Engine: string(r.Side), Latency: time.Second}, nil
}

func (standIn) Judge(context.Context, *runs.JudgeRequest) (*runs.Ruling, error) {
	return &runs.Ruling{Verdict: runs.VerdictMode}, nil
}

func (standIn) Score(_ context.Context, b *runs.Batch, qs []*runs.Question) (*runs.Scored, error) {
	var n, wins int
	for _, q := range qs {
		for _, j := range q.Judgments {
			n++
			if j.Verdict == runs.VerdictMode {
				wins++
			}
		}
	}
	w := float64(wins) / float64(n)
	res, _ := json.Marshal(map[string]any{"w": w, "judgments": n})
	out := &runs.Scored{Result: res}
	if b.Kind == runs.KindCertify && w >= 0.5 {
		out.Certification = &runs.Certification{Verdict: runs.CertCertified, W: w, L: w - 0.05, U: 1,
			Gates: []runs.Gate{{Name: "valid_judgments", Passed: true}}}
	}
	return out, nil
}

// A judge whose engine failed its last calls is provider_unavailable at
// launch (409, param judges), and nothing is charged; a dry run still
// quotes, and a run naming only working judges launches.
func TestLaunchRefusesAJudgeWithoutAWorkingEngine(t *testing.T) {
	t.Parallel()
	health := execute.NewHealth(nil)
	engines := map[runs.Judge]string{runs.JudgeNovaPro: "sim/nova-pro", runs.JudgeMistralLarge: "sim/mistral-large",
		runs.JudgeLlama4Maverick: "sim/llama4-maverick"}
	rb := setupRuns(t, func(o *setupOpts) {
		o.judgeWorking = func(j runs.Judge) bool { return health.Working(engines[j]) }
	})
	for range execute.DownAfter {
		health.Record("sim/nova-pro", false)
	}
	before := rb.money(t, rb.acme.ID)

	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1}}`)
	requireError(t, r, 409, core.CodeProviderUnavailable, "api_error")
	require.Equal(t, "judges", obj(r.body["error"])["param"])
	require.Contains(t, obj(r.body["error"])["message"], "nova_pro")
	require.Equal(t, before, rb.money(t, rb.acme.ID), "a refused launch charges nothing")

	r = rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1},"dry_run":true}`)
	require.Equal(t, 200, r.status, r.raw)

	r = rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1},"judges":["mistral_large","llama4_maverick"]}`)
	require.Equal(t, 200, r.status, r.raw)

	health.Record("sim/nova-pro", true)
	r = rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1}}`)
	require.Equal(t, 200, r.status, "an answer puts the judge back: %s", r.raw)
}

// A key limited to named modes sees only the batches of those modes: the
// poll and the cancel of another mode's batch are batch_not_found, word
// for word an unknown id's answer, and cancel nothing; a key limited to
// the batch's mode, by id or by ticker, polls it.
func TestBatchOfAnotherModeIsNotFound(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	rb.save(t, 201, map[string]any{"spec": panelSpec("Acme Other Panel", "OTHR")})
	require.Equal(t, 200, rb.do(t, "POST", "/v1/modes/acme-othr/release", rb.key, "").status)
	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1}}`)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["batch_id"].(string)
	before := rb.money(t, rb.acme.ID)

	other := rb.newKey(t, &core.CreateKeyParams{OrgID: rb.acme.ID, Modes: []string{"acme-othr"}})
	unknown := "00000000-0000-4000-8000-000000000000"
	for _, method := range []string{"GET", "DELETE"} {
		hidden := rb.do(t, method, "/v1/tests?batch_id="+id, other, "")
		requireError(t, hidden, 404, core.CodeBatchNotFound, "invalid_request_error")
		none := rb.do(t, method, "/v1/tests?batch_id="+unknown, other, "")
		requireError(t, none, 404, core.CodeBatchNotFound, "invalid_request_error")
		require.Equal(t, strings.ReplaceAll(obj(none.body["error"])["message"].(string), unknown, id),
			obj(hidden.body["error"])["message"], "%s: the answer of an unknown id", method)
		require.Equal(t, obj(none.body["error"])["param"], obj(hidden.body["error"])["param"])
	}
	require.Equal(t, before, rb.money(t, rb.acme.ID), "nothing refunded")

	for _, modes := range [][]string{{"acme-panl"}, {"ACME:PANL"}} {
		own := rb.newKey(t, &core.CreateKeyParams{OrgID: rb.acme.ID, Modes: modes})
		p := rb.do(t, "GET", "/v1/tests?batch_id="+id, own, "")
		require.Equal(t, 200, p.status, "%v: %s", modes, p.raw)
		require.Equal(t, "queued", obj(p.body["batch"])["status"], "the other key's cancel cancelled nothing")
	}
	own := rb.newKey(t, &core.CreateKeyParams{OrgID: rb.acme.ID, Modes: []string{"acme-panl"}})
	c := rb.do(t, "DELETE", "/v1/tests?batch_id="+id, own, "")
	require.Equal(t, 200, c.status, c.raw)
	require.Equal(t, "cancelled", obj(c.body["batch"])["status"])

	// A certification alike.
	rb.approve(t)
	_, err := rb.store.AddFunds(context.Background(), &core.AddFundsParams{OrgID: rb.acme.ID, Amount: core.USD(100)})
	require.NoError(t, err)
	r = rb.launch(t, "/v1/certify", rb.key, `{"model":"acme-panl"}`)
	require.Equal(t, 200, r.status, r.raw)
	cert := r.body["batch_id"].(string)
	for _, method := range []string{"GET", "DELETE"} {
		requireError(t, rb.do(t, method, "/v1/certify?batch_id="+cert, other, ""), 404, core.CodeBatchNotFound,
			"invalid_request_error")
	}
	require.Equal(t, "queued", obj(rb.do(t, "GET", "/v1/certify?batch_id="+cert, rb.key, "").body["batch"])["status"])
}

// A cancel never refunds a question that has an answer: launched, one
// question judged, one answered by the mode only and one by both sides
// (their jobs mid-question), the cancel refunds exactly the prices of the
// questions nothing was answered to. The answered questions run to their
// end, judged and charged; the batch stays cancelled and is never scored.
func TestCancelRefundsOnlyUnansweredQuestions(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	ctx := context.Background()
	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":3,"medium":1,"hard":1}}`)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["batch_id"].(string)
	price := map[string]core.Micros{}
	for b, q := range obj(r.body["per_bucket"]) {
		price[b] = core.Micros(math.Round(num(obj(q)["price_per_question_usd"]) * 1e6))
	}
	// Questions 0–2 are light, 3 medium, 4 hard (the bank draws in bucket
	// order).
	exec, store := rb.executor(t), pgstore.NewBatches(rb.store.Pool(), nil)
	require.NoError(t, exec.RunQuestion(ctx, id, 0))
	_, err := store.RecordAnswer(ctx, id, 1, runs.SideMode, &runs.Answer{Text: "the mode's answer", Engine: "acme-panl"})
	require.NoError(t, err)
	for _, side := range []runs.Side{runs.SideMode, runs.SideBaseline} {
		_, err := store.RecordAnswer(ctx, id, 3, side, &runs.Answer{Text: string(side) + "'s answer", Engine: string(side)})
		require.NoError(t, err)
	}
	p := obj(rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.key, "").body["batch"])
	require.Greater(t, num(obj(p["progress"])["answered"]), num(obj(p["progress"])["judged"]), "answered > judged")
	before := rb.money(t, rb.acme.ID)

	c := rb.do(t, "DELETE", "/v1/tests?batch_id="+id, rb.key, "")
	require.Equal(t, 200, c.status, c.raw)
	b := obj(c.body["batch"])
	require.Equal(t, "cancelled", b["status"])
	unanswered := price["light"] + price["hard"] // questions 2 and 4
	require.Equal(t, unanswered, core.Micros(math.Round(num(b["refunded_usd"])*1e6)))
	rb.requireCharged(t, rb.acme.ID, before, core.PostingTestRefund, -unanswered)
	require.Equal(t, map[string]any{"total": 5.0, "answered": 2.0, "judged": 1.0, "failed": 0.0, "cancelled": 2.0},
		b["progress"])
	cancelled := rb.money(t, rb.acme.ID)

	// The answered questions' jobs finish them; the others' record nothing.
	for i := 1; i < 5; i++ {
		require.NoError(t, exec.RunQuestion(ctx, id, i))
	}
	p = obj(rb.do(t, "GET", "/v1/tests?batch_id="+id, rb.key, "").body["batch"])
	require.Equal(t, "cancelled", p["status"])
	require.Equal(t, map[string]any{"total": 5.0, "answered": 3.0, "judged": 3.0, "failed": 0.0, "cancelled": 2.0},
		p["progress"])
	require.Nil(t, p["result"], "a cancelled batch is never scored")
	require.Equal(t, b["refunded_usd"], p["refunded_usd"])
	require.Equal(t, cancelled, rb.money(t, rb.acme.ID), "the answered questions stay charged")
	q, err := store.Question(ctx, id, 1)
	require.NoError(t, err)
	require.Equal(t, runs.QuestionJudged, q.State)
	require.Len(t, q.Judgments, 3)
}

// A mode an organisation owns is floored so that its test questions pay
// what they cost: acme-panl priced $0.03 for light questions clears its
// panel's share ($0.01) but not the test floor ($0.04 here, where no bench
// judges are wired: its deep question's deliberation, 88,950 µ$, and its
// baseline's answer on sim/sonnet, 10,500, need a standard price of
// 132,600, so a surcharge of 132,600 − 88,950 − 4,448 = 39,202 µ$), and is
// refused with price_below_floor; at the floor it saves.
func TestAModeUnderTheTestFloorIsRefused(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	priced := func(light float64) func(map[string]any) {
		return func(s map[string]any) {
			s["api_commercial"].(map[string]any)["q_surcharge_by_depth"].(map[string]any)["light"] = light
		}
	}
	spec := panelSpec("Acme Review Panel", "PANL", priced(0.03))
	r := ab.do(t, "POST", "/v1/modes", ab.key, jsonOf(t, map[string]any{"spec": spec}))
	requireError(t, r, 422, core.CodeModeInvalid, "invalid_request_error")
	refusals := obj(r.body["conclave"])["refusals"]
	require.Equal(t, []string{string(core.CodePriceBelowFloor)}, refusalCodes(refusals))
	below := refusal(t, refusals, core.CodePriceBelowFloor)
	require.Equal(t, "api_commercial.q_surcharge_by_depth.light", below["path"])
	require.Equal(t, 0.04, below["floor_usd"])
	require.Equal(t, 0.04, below["recommended_usd"])

	ab.save(t, 201, map[string]any{"spec": panelSpec("Acme Review Panel", "PANL", priced(0.04))})
}

// Every change made through the API is one row of the organisation's audit
// trail, naming the key that made it and the client address: the mode
// drafted and released (setupRuns), the test run launched and cancelled.
func TestChangesThroughTheAPIAreAudited(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t)
	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1}}`)
	require.Equal(t, 200, r.status, r.raw)
	id := r.body["batch_id"].(string)
	c := rb.do(t, "DELETE", "/v1/tests?batch_id="+id, rb.key, "")
	require.Equal(t, 200, c.status, c.raw)

	k, _, err := rb.store.KeyByHash(context.Background(), core.HashKey(rb.key))
	require.NoError(t, err)
	rows, err := rb.store.Audit(context.Background(), &core.AuditQuery{OrgID: rb.acme.ID})
	require.NoError(t, err)
	byAction := map[string]*core.AuditEntry{}
	for _, row := range rows {
		byAction[row.Action] = row
	}
	for _, action := range []string{core.AuditModeDrafted, core.AuditModeReleased, core.AuditTestLaunched, core.AuditTestCancelled} {
		row, ok := byAction[action]
		require.True(t, ok, "the trail has %s: %+v", action, rows)
		require.Equal(t, core.Actor{Kind: core.ActorKey, ID: k.ID, Address: "127.0.0.1"}, row.Actor, action)
		require.NotContains(t, row.Detail+row.Object, rb.key)
	}
	require.Equal(t, "acme-panl", byAction[core.AuditModeReleased].Object)
	require.Equal(t, "version 1", byAction[core.AuditModeReleased].Detail)
	require.Equal(t, id, byAction[core.AuditTestLaunched].Object)
	require.Equal(t, id, byAction[core.AuditTestCancelled].Object)
}

// A deployment whose configuration names no engine for a judge (judges: [])
// still serves; a launch that needs the judge is provider_unavailable,
// saying the judge is not configured, and charges nothing.
func TestLaunchRefusesAJudgeNotConfigured(t *testing.T) {
	t.Parallel()
	rb := setupRuns(t, func(o *setupOpts) {
		o.judgeConfigured = func(j runs.Judge) bool { return j != runs.JudgeNovaPro }
	})
	before := rb.money(t, rb.acme.ID)
	r := rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1}}`)
	requireError(t, r, 409, core.CodeProviderUnavailable, "api_error")
	require.Equal(t, "judges", obj(r.body["error"])["param"])
	require.Contains(t, obj(r.body["error"])["message"], "nova_pro is not configured")
	require.Equal(t, before, rb.money(t, rb.acme.ID), "a refused launch charges nothing")
	r = rb.launch(t, "/v1/tests", rb.key, `{"model":"acme-panl","buckets":{"light":1},"judges":["mistral_large","llama4_maverick"]}`)
	require.Equal(t, 200, r.status, r.raw)
}
