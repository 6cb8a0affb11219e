package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/modes/modestest"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// The served binary prices a test question and floors a mode with the
// configured bench judges (the default configuration's three): the corpus's
// valid spec has a floor of $0.08 — its deep question at plus,
// ⌈(88,950 + 10,500 + 3 × 8,125) / 0.75⌉ − 88,950 − 4,448 = 71,702 µ$ —
// so a light price of $0.05 is price_below_floor; and a dry run prices
// its light question at plus (0.20 + 0.04995 + 0.002498) × 75% = $0.189336.
func TestServedFloorAndTestPriceCountTheJudges(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	env := []string{"DATABASE_URL=" + url}
	p := startServe(t, t.TempDir(), env)
	defer p.stop(t)
	acme := adminJSON(t, env, "org", "create", "--name", "Acme Research", "--ticker", "ACME")
	key := adminJSON(t, env, "key", "create", "--org", acme["org_id"].(string), "--name", "authoring")["key"].(string)
	modes := p.base + "/v1/modes"

	v := jsonOf(t, "POST", modes+"/validate", key, `{"spec":`+modestest.ValidSpec+`}`, http.StatusOK)
	require.Equal(t, true, v["ok"], "%v", v)
	require.Equal(t, 0.08, v["floor_usd"])
	require.Equal(t, 0.08, v["recommended_usd"])
	cheap := strings.Replace(modestest.ValidSpec, `"light": 0.20`, `"light": 0.05`, 1)
	require.NotEqual(t, modestest.ValidSpec, cheap, "the corpus's light price changed: update this test")
	v = jsonOf(t, "POST", modes+"/validate", key, `{"spec":`+cheap+`}`, http.StatusOK)
	require.Equal(t, false, v["ok"])
	refusals := v["refusals"].([]any)
	require.Len(t, refusals, 1, "%v", refusals)
	require.Equal(t, "price_below_floor", refusals[0].(map[string]any)["code"])
	require.Equal(t, 0.08, refusals[0].(map[string]any)["floor_usd"])

	jsonOf(t, "POST", modes, key, `{"spec":`+modestest.ValidSpec+`}`, http.StatusCreated)
	jsonOf(t, "POST", modes+"/ACME:PANL/release", key, `{}`, http.StatusOK)
	q := jsonOf(t, "POST", p.base+"/v1/tests", key, `{"model":"acme-panl","buckets":{"light":2},"dry_run":true}`, http.StatusOK)
	require.Equal(t, map[string]any{"questions": 2.0, "price_per_question_usd": 0.189336, "cost_usd": 0.378672},
		q["per_bucket"].(map[string]any)["light"])
	require.Equal(t, 0.378672, q["total_cost_usd"])
}
