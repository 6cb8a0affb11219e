package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core/modes/modestest"
	"github.com/conclavehq/conclave/internal/pgtest"
)

// panelSpec is the corpus's valid spec (ACME's "PANL") with the plus row's
// first seat set to plusFirst: another engine changes what runs, and so the
// mode_config_hash.
func panelSpec(plusFirst string) string {
	spec := strings.Replace(modestest.ValidSpec, `{"engine": "sim/atlas", "backup": "sim/gemini-flash"}`,
		`{"engine": "`+plusFirst+`", "backup": "sim/gemini-flash"}`, 1)
	if plusFirst != "sim/atlas" && spec == modestest.ValidSpec {
		panic("the corpus's plus row changed: update panelSpec")
	}
	return spec
}

// jsonOf sends a request and decodes its JSON answer, requiring status.
func jsonOf(t testing.TB, method, url, key, body string, status int) map[string]any {
	t.Helper()
	res, text := send(t, method, url, key, body)
	require.Equal(t, status, res.StatusCode, "%s %s: %s", method, url, text)
	var v map[string]any
	require.NoError(t, json.Unmarshal([]byte(text), &v), text)
	return v
}

// errorCode is the error.code of an error envelope.
func errorCode(t *testing.T, v map[string]any) string {
	t.Helper()
	e, ok := v["error"].(map[string]any)
	require.True(t, ok, "an error envelope: %v", v)
	return e["code"].(string)
}

func modelListed(t *testing.T, base, key, id string) map[string]any {
	t.Helper()
	list := jsonOf(t, "GET", base+"/v1/models", key, "", http.StatusOK)
	for _, m := range list["data"].([]any) {
		if m := m.(map[string]any); m["id"] == id {
			return m
		}
	}
	return nil
}

// chatOn runs one billed deliberation on model for key and returns the
// completion's panel. Each call asks its own question, so that none is a
// repeat of another (which would be answered with its replay).
func chatOn(t *testing.T, base, key, model string) map[string]any {
	t.Helper()
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"Should team %d adopt trunk-based development? Weigh the risks."}]}`,
		model, asked.Add(1))
	c := jsonOf(t, "POST", base+"/v1/chat/completions", key, body, http.StatusOK)
	return c["panel"].(map[string]any)
}

// asked counts chatOn's questions.
var asked atomic.Int64

// The whole life of an organisation's mode, through the built binary: one
// organisation validates, saves, releases and lists a mode over REST; the
// operator approves the listing with the CLI; a second organisation sees it
// in GET /v1/models and runs a billed deliberation on it whose receipt
// names the version; a new release changes the mode_config_hash, reaches
// the second organisation only through the lab it was invited to, and
// cannot be published uncertified.
func TestAuthoredModeEndToEnd(t *testing.T) {
	t.Parallel()
	url := pgtest.NewEmptyDatabase(t)
	env := []string{"DATABASE_URL=" + url}
	p := startServe(t, t.TempDir(), env)
	defer p.stop(t)

	acme := adminJSON(t, env, "org", "create", "--name", "Acme Research", "--ticker", "ACME")
	beta := adminJSON(t, env, "org", "create", "--name", "Beta Labs", "--ticker", "BETA")
	acmeKey := adminJSON(t, env, "key", "create", "--org", acme["org_id"].(string), "--name", "authoring")["key"].(string)
	betaKey := adminJSON(t, env, "key", "create", "--org", beta["org_id"].(string), "--name", "calls")["key"].(string)
	modes := p.base + "/v1/modes"

	// Validate, save, release, list — the author's steps.
	v := jsonOf(t, "POST", modes+"/validate", acmeKey, `{"spec":`+panelSpec("sim/atlas")+`}`, http.StatusOK)
	require.Equal(t, true, v["ok"], "%v", v)
	require.Empty(t, v["refusals"])
	saved := jsonOf(t, "POST", modes, acmeKey, `{"spec":`+panelSpec("sim/atlas")+`}`, http.StatusCreated)
	require.Equal(t, "acme-panl", saved["id"])
	require.Equal(t, "ACME:PANL", saved["ticker"])
	rel := jsonOf(t, "POST", modes+"/ACME:PANL/release", acmeKey, `{}`, http.StatusOK)
	v1 := rel["version"].(map[string]any)
	require.Equal(t, 1.0, v1["version"])
	hash1 := v1["mode_config_hash"].(string)
	require.NotEmpty(t, hash1)
	own := jsonOf(t, "GET", modes, acmeKey, "", http.StatusOK)
	require.Len(t, own["data"], 1)
	require.NotNil(t, modelListed(t, p.base, acmeKey, "acme-panl"), "the owner calls its release at once")

	// Before the marketplace serves it, the other organisation is told so.
	require.Nil(t, modelListed(t, p.base, betaKey, "acme-panl"))
	refused := jsonOf(t, "POST", p.base+"/v1/chat/completions", betaKey,
		`{"model":"ACME:PANL","messages":[{"role":"user","content":"hi"}]}`, http.StatusForbidden)
	require.Equal(t, "mode_not_published", errorCode(t, refused))

	listed := jsonOf(t, "POST", modes+"/ACME:PANL/listing", acmeKey, `{}`, http.StatusOK)
	require.Equal(t, "pending", listed["listing"].(map[string]any)["state"])

	// The operator approves the version reviewed.
	review := adminJSON(t, env, "listing", "approve", "--mode", "ACME:PANL")
	require.Equal(t, "approved", review["listing"])
	require.Equal(t, 1.0, review["published_version"])

	// The second organisation sees it and runs a billed deliberation.
	m := modelListed(t, p.base, betaKey, "acme-panl")
	require.NotNil(t, m, "an approved listing is in every organisation's models")
	require.Equal(t, hash1, m["conclave"].(map[string]any)["mode_config_hash"])
	panel := chatOn(t, p.base, betaKey, "ACME:PANL")
	require.Equal(t, hash1, panel["mode_config_hash"])
	require.Equal(t, 1.0, panel["mode_version"])
	answer := jsonOf(t, "GET", p.base+"/v1/receipts/"+panel["request_id"].(string), betaKey, "", http.StatusOK)
	require.Equal(t, true, answer["receipt_available"])
	receipt := answer["receipt"].(map[string]any)
	require.Equal(t, "acme-panl", receipt["mode"])
	require.Equal(t, 1.0, receipt["mode_version"])
	require.Equal(t, hash1, receipt["mode_config_hash"])
	require.Positive(t, receipt["billed_usd"].(float64))

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var payer string
	var billed int64
	require.NoError(t, conn.QueryRow(ctx, "SELECT org_id, billed_micros FROM receipts WHERE mode_id = 'acme-panl' AND mode_version = 1").
		Scan(&payer, &billed))
	require.Equal(t, beta["org_id"], payer, "the caller pays, not the author")
	var charged int64
	require.NoError(t, conn.QueryRow(ctx, `SELECT coalesce(sum(-l.amount_micros), 0) FROM journal_legs l JOIN postings p ON p.id = l.posting_id
		WHERE p.kind = 'call_charge' AND l.org_id = $1 AND l.account = 'org_balance'`, beta["org_id"]).Scan(&charged))
	require.Equal(t, billed, charged, "the journal holds the charge the receipt states")

	// A new release changes what runs, and its hash.
	next := jsonOf(t, "POST", modes, acmeKey, `{"mode_id":"ACME:PANL","spec":`+panelSpec("sim/gemini-pro")+`}`, http.StatusOK)
	require.Equal(t, "pending", next["draft"].(map[string]any)["state"])
	rel = jsonOf(t, "POST", modes+"/acme-panl/release", acmeKey, "", http.StatusOK)
	v2 := rel["version"].(map[string]any)
	require.Equal(t, 2.0, v2["version"])
	hash2 := v2["mode_config_hash"].(string)
	require.NotEqual(t, hash1, hash2, "different seats, a different mode_config_hash")
	require.Equal(t, hash2, chatOn(t, p.base, acmeKey, "acme-panl")["mode_config_hash"], "the owner runs its latest release")

	// The marketplace still serves version 1; version 2 is a lab version.
	require.Equal(t, hash1, chatOn(t, p.base, betaKey, "ACME:PANL")["mode_config_hash"])
	refused = jsonOf(t, "POST", p.base+"/v1/chat/completions", betaKey,
		`{"model":"ACME:PANL@lab","messages":[{"role":"user","content":"hi"}]}`, http.StatusForbidden)
	require.Equal(t, "lab_not_available", errorCode(t, refused))
	jsonOf(t, "PUT", modes+"/ACME:PANL/lab_invites/BETA", acmeKey, "", http.StatusOK)
	lab := chatOn(t, p.base, betaKey, "ACME:PANL@lab")
	require.Equal(t, hash2, lab["mode_config_hash"])
	require.Equal(t, 2.0, lab["mode_version"])

	// Publishing version 2 needs it certified first.
	refused = jsonOf(t, "POST", modes+"/ACME:PANL/listing", acmeKey, `{"version":2}`, http.StatusConflict)
	require.Equal(t, "published_version_uncertified", errorCode(t, refused))
}
