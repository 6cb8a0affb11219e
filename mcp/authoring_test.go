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
	"github.com/conclavehq/conclave/mcp"
)

// panelSpec is a valid mode spec (docs/modes.md's example): a fixed panel
// at the experience and plus tiers, named name with the ticker ticker.
func panelSpec(name, ticker string) map[string]any {
	var s map[string]any
	if err := json.Unmarshal([]byte(`{
		"use_when": "Trade-offs where a second and a third opinion are worth a few cents.",
		"description": "Three seats from three provider families.",
		"seats_by_tier": {
			"experience": [
				{"engine": "sim/swift", "backup": "sim/gemini-flash"},
				{"engine": "sim/gemini-flash", "backup": "sim/swift"},
				{"engine": "sim/sonnet", "backup": "sim/swift"}],
			"plus": [
				{"engine": "sim/atlas", "backup": "sim/gemini-flash"},
				{"engine": "sim/sonnet", "backup": "sim/atlas"},
				{"engine": "sim/gemini-flash", "backup": "sim/sonnet"}]},
		"staff": {
			"classifier": {"engine": "sim/swift"},
			"judge": {"engine": "sim/sonnet", "backup": "sim/atlas"},
			"synthesis": {"engine": "sim/atlas", "backup": "sim/sonnet"}},
		"critique": "deep", "max_rounds": 2, "quorum": 2, "straggler_deadline_s": 20,
		"express_threshold": 0.2, "cost_ceiling_usd": 1.5,
		"api_commercial": {"price_tier": "standard", "q_surcharge_by_depth": {"light": 0.05, "medium": 0.10, "deep": 0.15},
			"q_surcharge_usd": 0.15}}`), &s); err != nil {
		panic(err)
	}
	s["name"], s["ticker"] = name, ticker
	return s
}

// twoSeatPlus is spec with a plus row of two seats instead of three: what
// runs changes, so the mode_config_hash does.
func twoSeatPlus(spec map[string]any) map[string]any {
	spec["seats_by_tier"].(map[string]any)["plus"] = []any{
		map[string]any{"engine": "sim/atlas", "backup": "sim/gemini-flash"},
		map[string]any{"engine": "sim/sonnet", "backup": "sim/atlas"},
	}
	return spec
}

// newOrg creates an organisation with ticker and issues it a live key.
func (tb *testBundle) newOrg(t testing.TB, name, ticker string) (*core.Org, string) {
	t.Helper()
	org, _, err := tb.store.CreateOrg(context.Background(), &core.CreateOrgParams{Name: name, Ticker: ticker})
	require.NoError(t, err)
	return org, tb.newKey(t, org.ID)
}

// issueKey issues a key for orgID as p describes it (a test key, a key
// limited to modes).
func (tb *testBundle) issueKey(t testing.TB, p core.CreateKeyParams) string {
	t.Helper()
	secret, hash := core.NewKeySecret(p.Test)
	p.Hash, p.Hint = hash, core.KeyHint(secret)
	_, err := tb.store.CreateKey(context.Background(), &p)
	require.NoError(t, err)
	return secret
}

// succeed calls a tool that must succeed and decodes its structured
// content, which must be its text's JSON, into v.
func (tb *testBundle) succeed(t testing.TB, key, name string, args any, v any) {
	t.Helper()
	res := tb.callTool(t, key, name, args)
	require.False(t, res.IsError, res.Content[0].Text)
	require.NotEmpty(t, res.StructuredContent, res.Content[0].Text)
	require.JSONEq(t, string(res.StructuredContent), res.Content[0].Text)
	res.text(t, v)
}

// selfAnswered is a self-answered tool's failure.
type selfAnswered struct {
	HTTPStatus int `json:"http_status"`
	Error      struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	Conclave map[string]json.RawMessage `json:"conclave"`
}

// fail calls a tool that must fail with the self-answered shape, code and
// status.
func (tb *testBundle) fail(t testing.TB, key, name string, args any, status int, code string) selfAnswered {
	t.Helper()
	res := tb.callTool(t, key, name, args)
	require.True(t, res.IsError, res.Content[0].Text)
	require.Empty(t, res.StructuredContent)
	var out selfAnswered
	res.text(t, &out)
	require.Equal(t, code, out.Error.Code, res.Content[0].Text)
	require.Equal(t, status, out.HTTPStatus, res.Content[0].Text)
	require.NotEmpty(t, out.Error.Message)
	require.NotNil(t, out.Conclave, "the extra block is always there")
	var raw map[string]any
	res.text(t, &raw)
	require.ElementsMatch(t, []string{"http_status", "error", "conclave"}, keys(raw), res.Content[0].Text)
	require.ElementsMatch(t, []string{"code", "message"}, keys(raw["error"].(map[string]any)), res.Content[0].Text)
	return out
}

type refusal struct {
	Code            string   `json:"code"`
	Message         string   `json:"message"`
	Path            string   `json:"path"`
	SuggestedTicker string   `json:"suggested_ticker"`
	FloorUSD        *float64 `json:"floor_usd"`
	RecommendedUSD  *float64 `json:"recommended_usd"`
}

type validated struct {
	OK             bool      `json:"ok"`
	Refusals       []refusal `json:"refusals"`
	ModeConfigHash *string   `json:"mode_config_hash"`
	FloorUSD       *float64  `json:"floor_usd"`
	RecommendedUSD *float64  `json:"recommended_usd"`
}

type authoredMode struct {
	ID     string `json:"id"`
	Ticker string `json:"ticker"`
	Name   string `json:"name"`
	Draft  struct {
		Revision  int64  `json:"revision"`
		State     string `json:"state"`
		Validated bool   `json:"validated"`
	} `json:"draft"`
	LatestVersion int `json:"latest_version"`
	Listing       struct {
		State    string `json:"state"`
		Revision int64  `json:"revision"`
	} `json:"listing"`
	CertifiedVersion int `json:"certified_version"`
	PublishedVersion int `json:"published_version"`
}

type savedMode struct {
	Mode    authoredMode `json:"mode"`
	Version *struct {
		Version        int    `json:"version"`
		ModeConfigHash string `json:"mode_config_hash"`
	} `json:"version"`
}

func refusalCodes(rs []refusal) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = r.Code
	}
	return out
}

// validate_mode answers every refusal at once with its path and facts, the
// floor and recommendation, and for a spec that passes the hash its mode
// would run with — the hash a release then records. A test key may
// validate (it saves nothing).
func TestValidateMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	acme, key := tb.newOrg(t, "Acme", "ACME")

	var ok validated
	tb.succeed(t, key, "validate_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}, &ok)
	require.True(t, ok.OK)
	require.NotNil(t, ok.Refusals, "refusals is a list, empty when none")
	require.Empty(t, ok.Refusals)
	require.NotNil(t, ok.ModeConfigHash)
	require.NotEmpty(t, *ok.ModeConfigHash)
	require.Equal(t, 0.04, *ok.FloorUSD, "the test floor (modes.TestFloor), with no bench judges wired")
	require.Equal(t, 0.04, *ok.RecommendedUSD)

	var saved savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL"), "release": true}, &saved)
	require.Equal(t, *ok.ModeConfigHash, saved.Version.ModeConfigHash, "the release runs what validation hashed")

	// The ticker is now taken: another spec of the organisation's may not
	// have it, and is told a free one; a new draft of the mode itself may.
	var taken validated
	tb.succeed(t, key, "validate_mode", map[string]any{"spec": panelSpec("Acme Second Panel", "PANL")}, &taken)
	require.False(t, taken.OK)
	require.Equal(t, []string{"ticker_taken"}, refusalCodes(taken.Refusals))
	require.Equal(t, "ticker", taken.Refusals[0].Path)
	require.Equal(t, "PANA", taken.Refusals[0].SuggestedTicker)
	require.Nil(t, taken.ModeConfigHash)
	require.NotNil(t, taken.FloorUSD, "the floor is worked out for any spec that decodes")
	tb.succeed(t, key, "validate_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL"), "mode_id": "acme-panl"}, &ok)
	require.True(t, ok.OK, "%+v", ok.Refusals)

	cheap := panelSpec("Acme Cheap Panel", "CHEP")
	cheap["api_commercial"].(map[string]any)["q_surcharge_by_depth"].(map[string]any)["light"] = 0.005
	var below validated
	tb.succeed(t, key, "validate_mode", map[string]any{"spec": cheap}, &below)
	require.Equal(t, []string{"price_below_floor"}, refusalCodes(below.Refusals))
	require.Equal(t, "api_commercial.q_surcharge_by_depth.light", below.Refusals[0].Path)
	require.Equal(t, 0.04, *below.Refusals[0].FloorUSD)
	require.Equal(t, 0.04, *below.Refusals[0].RecommendedUSD)

	// price_override_not_allowed comes first, whatever else is refused.
	override := panelSpec("Acme Override Panel", "OVER")
	override["api_commercial"].(map[string]any)["price_override_acknowledged"] = true
	override["seats_by_tier"].(map[string]any)["plus"].([]any)[0].(map[string]any)["engine"] = "sim/nowhere"
	override["api_commercial"].(map[string]any)["q_surcharge_usd"] = 0.001
	var many validated
	tb.succeed(t, key, "validate_mode", map[string]any{"spec": override}, &many)
	require.False(t, many.OK)
	require.Greater(t, len(many.Refusals), 2, "%+v", many.Refusals)
	require.Equal(t, "price_override_not_allowed", many.Refusals[0].Code)
	require.Equal(t, "api_commercial.price_override_acknowledged", many.Refusals[0].Path)
	require.Contains(t, refusalCodes(many.Refusals), "seat_engine_not_found")
	for _, r := range many.Refusals {
		require.NotEmpty(t, r.Message, r.Code)
	}

	testKey := tb.issueKey(t, core.CreateKeyParams{OrgID: acme.ID, Test: true})
	tb.succeed(t, testKey, "validate_mode", map[string]any{"spec": panelSpec("Acme Test Panel", "TEST")}, &ok)
	require.True(t, ok.OK)
}

// A spec that fails validation saves nothing: mode_invalid (422) with
// every refusal in the extra block, and no mode in PostgreSQL.
func TestSaveModeInvalidSavesNothing(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	org, key := tb.newOrg(t, "Acme", "ACME")
	bad := panelSpec("Acme Review Panel", "PANL")
	bad["max_rounds"] = 9
	bad["seats_by_tier"].(map[string]any)["plus"].([]any)[0].(map[string]any)["engine"] = "sim/swift"
	// Priced over the floor its rounds raise (five, the most counted), so
	// that only the two rules above are broken.
	price := map[string]any{"light": 0.20, "medium": 0.20, "deep": 0.20}
	bad["api_commercial"].(map[string]any)["q_surcharge_by_depth"] = price
	for _, release := range []bool{false, true} {
		out := tb.fail(t, key, "save_mode", map[string]any{"spec": bad, "release": release}, 422, "mode_invalid")
		var rs []refusal
		require.NoError(t, json.Unmarshal(out.Conclave["refusals"], &rs))
		require.ElementsMatch(t, []string{"invalid_value", "seat_engine_above_tier"}, refusalCodes(rs))
		for _, r := range rs {
			require.NotEmpty(t, r.Path)
			require.NotEmpty(t, r.Message)
		}
	}
	own, err := tb.store.ListAuthoredModes(context.Background(), org.ID)
	require.NoError(t, err)
	require.Empty(t, own)
	var n int
	require.NoError(t, tb.pool.QueryRow(context.Background(), `SELECT count(*) FROM authored_modes`).Scan(&n))
	require.Zero(t, n, "nothing saved")
}

// The lifecycle through the tools, with the code and status of every
// refusal along the way: save, release (mode_id + release), new drafts
// (draft_pending, draft_changed, replacing one by its revision), no_draft,
// draft_required, mode_not_released, the listing request and its refusals
// (conflict, listing_changed).
func TestSaveReleaseAndListMode(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, key := tb.newOrg(t, "Acme", "ACME")
	spec := panelSpec("Acme Review Panel", "PANL")

	var s savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": spec}, &s)
	require.Equal(t, "acme-panl", s.Mode.ID)
	require.Equal(t, "ACME:PANL", s.Mode.Ticker)
	require.Equal(t, "Acme Review Panel", s.Mode.Name)
	require.Equal(t, int64(1), s.Mode.Draft.Revision)
	require.Equal(t, "pending", s.Mode.Draft.State)
	require.True(t, s.Mode.Draft.Validated)
	require.Zero(t, s.Mode.LatestVersion)
	require.Equal(t, "none", s.Mode.Listing.State)
	require.Nil(t, s.Version, "a save releases nothing")

	tb.fail(t, key, "list_mode", map[string]any{"mode_id": "acme-panl"}, 409, "mode_not_released")
	tb.fail(t, key, "save_mode", map[string]any{"spec": spec, "mode_id": "acme-panl"}, 409, "draft_pending")
	tb.fail(t, key, "save_mode", map[string]any{"mode_id": "acme-panl"}, 400, "draft_required")
	tb.fail(t, key, "save_mode", map[string]any{"mode_id": "acme-panl", "release": false}, 400, "draft_required")
	tb.fail(t, key, "save_mode", map[string]any{"mode_id": "acme-panl", "release": true, "revision": 7}, 409, "draft_changed")

	var r savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"mode_id": "ACME:PANL", "release": true, "revision": 1}, &r)
	require.Equal(t, 1, r.Version.Version)
	require.NotEmpty(t, r.Version.ModeConfigHash)
	require.Equal(t, 1, r.Mode.LatestVersion)
	require.Equal(t, "released", r.Mode.Draft.State)
	require.Equal(t, int64(2), r.Mode.Draft.Revision)
	tb.fail(t, key, "save_mode", map[string]any{"mode_id": "acme-panl", "release": true}, 409, "no_draft")

	// A new draft of a released mode needs no revision; a second one does.
	var d savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": twoSeatPlus(panelSpec("Acme Review Panel", "PANL")), "mode_id": "acme-panl"}, &d)
	require.Equal(t, int64(3), d.Mode.Draft.Revision)
	require.Equal(t, 1, d.Mode.LatestVersion)
	tb.fail(t, key, "save_mode", map[string]any{"spec": spec, "mode_id": "acme-panl"}, 409, "draft_pending")
	tb.fail(t, key, "save_mode", map[string]any{"spec": spec, "mode_id": "acme-panl", "revision": 2}, 409, "draft_changed")
	tb.succeed(t, key, "save_mode", map[string]any{"spec": spec, "mode_id": "acme-panl", "revision": 3}, &d)
	require.Equal(t, int64(4), d.Mode.Draft.Revision, "naming the draft's revision replaces it")

	// The listing: requested once (pending), then refused until reviewed.
	var l struct {
		Mode authoredMode `json:"mode"`
	}
	tb.fail(t, key, "list_mode", map[string]any{"mode_id": "acme-panl", "listing_revision": 5}, 409, "listing_changed")
	tb.succeed(t, key, "list_mode", map[string]any{"mode": "ACME:PANL"}, &l)
	require.Equal(t, "pending", l.Mode.Listing.State)
	require.Equal(t, int64(1), l.Mode.Listing.Revision)
	require.Equal(t, int64(4), l.Mode.Draft.Revision, "the listing leaves the draft alone")
	tb.fail(t, key, "list_mode", map[string]any{"mode_id": "acme-panl"}, 409, "conflict")
	tb.fail(t, key, "list_mode", map[string]any{"mode_id": "acme-panl", "listing_revision": 7}, 409, "listing_changed")

	// Approved (by the operator), the listing publishes the version
	// reviewed; list_mode then publishes only the certified version.
	m, err := tb.store.AuthoredModeByRef(context.Background(), "acme-panl")
	require.NoError(t, err)
	_, err = tb.store.ReviewListing(context.Background(), m.ID, core.ModeAction{Kind: core.ActionApprove,
		ListingRevision: m.ListingRevision, Version: m.LatestVersion})
	require.NoError(t, err)
	tb.succeed(t, key, "save_mode", map[string]any{"mode_id": "acme-panl", "release": true}, &r)
	require.Equal(t, 2, r.Version.Version)
	tb.fail(t, key, "list_mode", map[string]any{"mode_id": "acme-panl", "version": 2}, 409, "published_version_uncertified")
	tb.succeed(t, key, "list_mode", map[string]any{"mode_id": "acme-panl", "version": 1}, &l)
	require.Equal(t, "approved", l.Mode.Listing.State)
	require.Equal(t, 1, l.Mode.PublishedVersion)
	require.Equal(t, 1, l.Mode.CertifiedVersion)
	require.Equal(t, 2, l.Mode.LatestVersion)
}

// Who may change a mode, and what names one: another organisation's mode
// and a configured mode are forbidden, a test key test_key_not_allowed, a
// key limited to other modes mode_not_allowed, an unknown mode
// mode_not_found, a suffix suffix_not_supported — each in the self-answered
// shape with its status.
func TestAuthoringRefusals(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	acme, key := tb.newOrg(t, "Acme", "ACME")
	_, other := tb.newOrg(t, "Beta", "BETA")
	var s savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL"), "release": true}, &s)

	testKey := tb.issueKey(t, core.CreateKeyParams{OrgID: acme.ID, Test: true})
	limited := tb.issueKey(t, core.CreateKeyParams{OrgID: acme.ID, Modes: []string{"conclave-standard"}})
	spec := panelSpec("Acme Review Panel", "PANL")
	for _, tc := range []struct {
		name   string
		key    string
		tool   string
		args   map[string]any
		status int
		code   string
	}{
		{"another organisation's mode", other, "save_mode", map[string]any{"spec": spec, "mode_id": "acme-panl"}, 403, "forbidden"},
		{"another organisation's release", other, "save_mode", map[string]any{"mode_id": "ACME:PANL", "release": true}, 403, "forbidden"},
		{"another organisation's listing", other, "list_mode", map[string]any{"mode_id": "acme-panl"}, 403, "forbidden"},
		{"a configured mode", key, "list_mode", map[string]any{"mode_id": "conclave-standard"}, 403, "forbidden"},
		{"a test key saving", testKey, "save_mode", map[string]any{"spec": panelSpec("Acme Other Panel", "OTHR")}, 403, "test_key_not_allowed"},
		{"a test key listing", testKey, "list_mode", map[string]any{"mode_id": "acme-panl"}, 403, "test_key_not_allowed"},
		{"a key limited to other modes, new mode", limited, "save_mode", map[string]any{"spec": panelSpec("Acme Other Panel", "OTHR")},
			403, "mode_not_allowed"},
		{"a key limited to other modes, its mode", limited, "save_mode", map[string]any{"mode_id": "acme-panl", "release": true},
			403, "mode_not_allowed"},
		{"an unknown mode", key, "save_mode", map[string]any{"mode_id": "acme-nope", "release": true}, 404, "mode_not_found"},
		{"an unknown mode listed", key, "list_mode", map[string]any{"mode": "ACME:NOPE"}, 404, "mode_not_found"},
		{"an unknown mode validated", key, "validate_mode", map[string]any{"spec": spec, "mode_id": "acme-nope"}, 404, "mode_not_found"},
		{"a lab suffix", key, "save_mode", map[string]any{"mode_id": "acme-panl@lab", "release": true}, 400, "suffix_not_supported"},
		{"a version suffix", key, "list_mode", map[string]any{"mode_id": "acme-panl@v1"}, 400, "suffix_not_supported"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tb.fail(t, tc.key, tc.tool, tc.args, tc.status, tc.code)
		})
	}
	m, err := tb.store.AuthoredModeByRef(context.Background(), "acme-panl")
	require.NoError(t, err)
	require.Equal(t, s.Mode.Draft.Revision, m.DraftRevision, "nothing changed the mode")
	require.Equal(t, core.ListingNone, m.Listing)
}

// A release checks the draft again against today's engines: a draft that
// no longer passes is refused with its first refusal's code, every refusal
// in the extra block, and nothing released.
func TestReleaseRechecksTheDraft(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, key := tb.newOrg(t, "Acme", "ACME")
	var s savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}, &s)
	tb.gone.Store("sim/sonnet", true)
	out := tb.fail(t, key, "save_mode", map[string]any{"mode_id": "acme-panl", "release": true}, 400, "engine_unavailable")
	var rs []refusal
	require.NoError(t, json.Unmarshal(out.Conclave["refusals"], &rs))
	require.NotEmpty(t, rs)
	for _, r := range rs {
		require.Equal(t, "engine_unavailable", r.Code)
		require.Regexp(t, `\.(engine|backup)$`, r.Path, "each seat or role that names sim/sonnet")
	}
	tb.gone.Delete("sim/sonnet")
	var r savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"mode_id": "acme-panl", "release": true}, &r)
	require.Equal(t, 1, r.Version.Version, "the refused release released nothing")
}

// Each authoring call spends one request of the key's rate, refused or
// not; past it the call is rate_limit_exceeded with its wait.
func TestAuthoringToolsMeterOnce(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.rpm = 3 })
	_, key := tb.newOrg(t, "Acme", "ACME")
	var v validated
	tb.succeed(t, key, "validate_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}, &v)
	tb.fail(t, key, "list_mode", map[string]any{"mode_id": "acme-nope"}, 404, "mode_not_found")
	var s savedMode
	tb.succeed(t, key, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL"), "release": true}, &s)
	out := tb.fail(t, key, "validate_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}, 429, "rate_limit_exceeded")
	require.Contains(t, out.Conclave, "retry_after_seconds")
}

// Arguments are checked before anything runs: a missing required one, an
// undeclared one, or one of the wrong type is -32602.
func TestAuthoringArgumentsAreChecked(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, key := tb.newOrg(t, "Acme", "ACME")
	spec := panelSpec("Acme Review Panel", "PANL")
	for _, tc := range []struct {
		tool string
		args map[string]any
	}{
		{"validate_mode", map[string]any{}},
		{"validate_mode", map[string]any{"mode_id": "acme-panl"}},
		{"validate_mode", map[string]any{"spec": nil}},
		{"validate_mode", map[string]any{"spec": "{}"}},
		{"validate_mode", map[string]any{"spec": spec, "mode_id": ""}},
		{"validate_mode", map[string]any{"spec": spec, "release": true}},
		{"save_mode", map[string]any{}},
		{"save_mode", map[string]any{"release": true}},
		{"save_mode", map[string]any{"revision": 1}},
		{"save_mode", map[string]any{"spec": spec, "release": "yes"}},
		{"save_mode", map[string]any{"spec": spec, "revision": 1.5}},
		{"save_mode", map[string]any{"spec": spec, "revision": -1}},
		{"save_mode", map[string]any{"spec": []any{spec}}},
		{"save_mode", map[string]any{"spec": spec, "mode": "acme-panl"}},
		{"list_mode", map[string]any{}},
		{"list_mode", map[string]any{"version": 1}},
		{"list_mode", map[string]any{"mode_id": 3}},
		{"list_mode", map[string]any{"mode_id": "acme-panl", "mode": "acme-other"}},
		{"list_mode", map[string]any{"mode_id": "acme-panl", "version": 0}},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.tool, tc.args), func(t *testing.T) {
			body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 3, "method": "tools/call",
				"params": map[string]any{"name": tc.tool, "arguments": tc.args}})
			require.NoError(t, err)
			r := tb.post(t, mcp.Path, key, string(body))
			require.Equal(t, http.StatusOK, r.status, r.raw)
			res := r.rpc(t)
			require.NotNil(t, res.Error, r.raw)
			require.Equal(t, -32602, res.Error.Code, r.raw)
			require.True(t, strings.HasPrefix(res.Error.Message, "Invalid params: "+tc.tool), res.Error.Message)
		})
	}
	var n int
	require.NoError(t, tb.pool.QueryRow(context.Background(), `SELECT count(*) FROM authored_modes`).Scan(&n))
	require.Zero(t, n, "nothing ran")
	// The same mode named twice the same way is one argument.
	tb.fail(t, key, "list_mode", map[string]any{"mode_id": "acme-panl", "mode": "acme-panl"}, 404, "mode_not_found")
}

// The authoring tools count toward a batch's limit of 8 self-answered
// calls: the calls past the 8th do not run, and save nothing.
func TestBatchLimitCountsAuthoringTools(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, key := tb.newOrg(t, "Acme", "ACME")
	call := func(id int, name string, args any) string {
		b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call",
			"params": map[string]any{"name": name, "arguments": args}})
		require.NoError(t, err)
		return string(b)
	}
	var elems []string
	for i := 1; i <= 6; i++ {
		elems = append(elems, call(i, "validate_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}))
	}
	elems = append(elems,
		call(7, "list_engines", map[string]any{}),
		call(8, "save_mode", map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}),
		call(9, "save_mode", map[string]any{"spec": panelSpec("Acme Ninth Panel", "NINE")}),
		call(10, "list_mode", map[string]any{"mode_id": "acme-panl"}),
		call(11, "list_modes", map[string]any{}))
	r := tb.post(t, mcp.Path, key, "["+strings.Join(elems, ",")+"]")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	var out []rpcResponse
	r.json(t, &out)
	require.Len(t, out, 11, r.raw)
	for i, res := range out {
		require.JSONEq(t, fmt.Sprint(i+1), string(res.ID))
		if i == 8 || i == 9 {
			require.NotNil(t, res.Error, r.raw)
			var data selfAnswered
			require.NoError(t, json.Unmarshal(res.Error.Data, &data), r.raw)
			require.Equal(t, 413, data.HTTPStatus)
			require.Equal(t, "batch_too_large", data.Error.Code)
			continue
		}
		require.Nil(t, res.Error, r.raw)
		var tr toolResult
		require.NoError(t, json.Unmarshal(res.Result, &tr))
		require.False(t, tr.IsError, string(res.Result))
	}
	_, err := tb.store.AuthoredModeByRef(context.Background(), "acme-nine")
	require.ErrorIs(t, err, core.ErrNotFound, "the ninth call did not run")
	m, err := tb.store.AuthoredModeByRef(context.Background(), "acme-panl")
	require.NoError(t, err)
	require.Equal(t, core.ListingNone, m.Listing, "the tenth call did not run")
}

// Without mode authoring the tool server lists and serves no authoring
// tool, as before it had them.
func TestAuthoringToolsNeedModes(t *testing.T) {
	t.Parallel()
	tb := setup(t, func(o *setupOpts) { o.noAuthoring = true })
	var names []string
	for _, tl := range tb.listTools(t) {
		names = append(names, tl.Name)
	}
	require.Equal(t, []string{"deliberate", "estimate", "list_modes", "get_receipt", "run_test", "certify_mode", "list_engines"}, names)
	r := tb.post(t, mcp.Path, tb.key, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"validate_mode","arguments":{"spec":{}}}}`)
	require.Equal(t, -32602, r.rpc(t).Error.Code)
}
