package api_test

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes/modestest"
)

// authoringBundle is a server with two organisations: ACME, whose modes the
// tests author with key, and the bundle's own (org), another organisation
// to ACME, with otherKey.
type authoringBundle struct {
	*testBundle
	acme     *core.Org
	key      string // a live ACME key with every scope
	otherKey string // a live key of org with every scope
}

func setupAuthoring(t *testing.T, opts ...func(*setupOpts)) *authoringBundle {
	t.Helper()
	tb := setup(t, opts...)
	acme, _, err := tb.store.CreateOrg(context.Background(), &core.CreateOrgParams{Name: "Acme", Ticker: "ACME"})
	require.NoError(t, err)
	return &authoringBundle{
		testBundle: tb,
		acme:       acme,
		key:        tb.newKey(t, &core.CreateKeyParams{OrgID: acme.ID}),
		otherKey:   tb.key,
	}
}

// panelSpec is the example of docs/modes.md, priced as conclave-standard
// (light $0.05, medium $0.10, deep $0.15), with its name and ticker,
// changed by edits. Its floor here is $0.04 (recommended $0.04): the test
// floor of a mode an organisation owns, with no bench judges wired
// (modes.TestFloor; the default judges make it $0.08); its panel share
// alone is $0.01 (recommended $0.03).
func panelSpec(name, ticker string, edits ...func(map[string]any)) map[string]any {
	seat := func(engine, backup string) map[string]any { return map[string]any{"engine": engine, "backup": backup} }
	s := map[string]any{
		"name": name, "ticker": ticker,
		"description": "Three seats from three provider families.",
		"use_when":    "Trade-offs where a second and a third opinion are worth a few cents.",
		"seats_by_tier": map[string]any{
			"experience": []any{
				seat("sim/swift", "sim/gemini-flash"), seat("sim/gemini-flash", "sim/swift"), seat("sim/sonnet", "sim/swift"),
			},
			"plus": []any{
				seat("sim/atlas", "sim/gemini-flash"), seat("sim/sonnet", "sim/atlas"), seat("sim/gemini-flash", "sim/sonnet"),
			},
		},
		"staff": map[string]any{
			"classifier": map[string]any{"engine": "sim/swift"},
			"judge":      seat("sim/sonnet", "sim/atlas"),
			"synthesis":  seat("sim/atlas", "sim/sonnet"),
		},
		"critique": "deep", "max_rounds": 2, "quorum": 2, "straggler_deadline_s": 20, "express_threshold": 0.2,
		"cost_ceiling_usd": 1.5,
		"api_commercial": map[string]any{
			"price_tier":           "standard",
			"q_surcharge_by_depth": map[string]any{"light": 0.05, "medium": 0.10, "deep": 0.15},
			"q_surcharge_usd":      0.15,
		},
	}
	for _, edit := range edits {
		edit(s)
	}
	return s
}

// cheap sets the light price under the floor ($0.04).
func cheap(s map[string]any) {
	s["api_commercial"].(map[string]any)["q_surcharge_by_depth"].(map[string]any)["light"] = 0.005
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return string(b)
}

// save saves a draft and requires status.
func (ab *authoringBundle) save(t *testing.T, status int, fields map[string]any) *response {
	t.Helper()
	r := ab.do(t, "POST", "/v1/modes", ab.key, jsonOf(t, fields))
	require.Equal(t, status, r.status, r.raw)
	return r
}

// savePanel saves a new valid mode ACME:PANL.
func (ab *authoringBundle) savePanel(t *testing.T) *response {
	t.Helper()
	return ab.save(t, 201, map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")})
}

// release releases acme-panl's draft and requires status.
func (ab *authoringBundle) release(t *testing.T, status int, body string) *response {
	t.Helper()
	r := ab.do(t, "POST", "/v1/modes/acme-panl/release", ab.key, body)
	require.Equal(t, status, r.status, r.raw)
	return r
}

// listing asks for acme-panl's listing step with body.
func (ab *authoringBundle) listing(t *testing.T, body string) *response {
	t.Helper()
	return ab.do(t, "POST", "/v1/modes/acme-panl/listing", ab.key, body)
}

func obj(v any) map[string]any { return v.(map[string]any) }

// refusalCodes are the codes of a list of refusals, in order.
func refusalCodes(v any) []string {
	var out []string
	for _, r := range v.([]any) {
		out = append(out, obj(r)["code"].(string))
	}
	return out
}

// refusal is the first refusal with code.
func refusal(t *testing.T, v any, code core.Code) map[string]any {
	t.Helper()
	for _, r := range v.([]any) {
		if obj(r)["code"] == string(code) {
			return obj(r)
		}
	}
	t.Fatalf("no %s among %v", code, refusalCodes(v))
	return nil
}

func requireParam(t *testing.T, r *response, param string) {
	t.Helper()
	require.Equal(t, param, obj(r.body["error"])["param"], r.raw)
}

func TestValidateModeAnswersEveryRefusal(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	validate := func(fields map[string]any) map[string]any {
		t.Helper()
		r := ab.do(t, "POST", "/v1/modes/validate", ab.key, jsonOf(t, fields))
		require.Equal(t, 200, r.status, r.raw)
		require.Equal(t, "mode.validation", r.body["object"])
		return r.body
	}

	good := validate(map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")})
	require.Equal(t, true, good["ok"])
	require.Equal(t, []any{}, good["refusals"], "an empty list, never null")
	require.NotEmpty(t, good["mode_config_hash"])
	require.Equal(t, 0.04, good["floor_usd"])
	require.Equal(t, 0.04, good["recommended_usd"])
	r := ab.do(t, "GET", "/v1/modes", ab.key, "")
	require.Empty(t, r.body["data"], "validating saves nothing")

	// Several rules broken at once: all are answered, the override first.
	ab.savePanel(t)
	bad := validate(map[string]any{"spec": panelSpec("Acme Second Panel", "PANL", cheap, func(s map[string]any) {
		s["api_commercial"].(map[string]any)["price_override_acknowledged"] = true
	})})
	require.Equal(t, false, bad["ok"])
	require.Nil(t, bad["mode_config_hash"])
	codes := refusalCodes(bad["refusals"])
	require.Equal(t, string(core.CodePriceOverrideNotAllowed), codes[0], "listed first: %v", codes)
	require.Subset(t, codes, []string{string(core.CodeTickerTaken), string(core.CodePriceBelowFloor)})
	taken := refusal(t, bad["refusals"], core.CodeTickerTaken)
	require.Equal(t, "ticker", taken["path"])
	require.Equal(t, "PANA", taken["suggested_ticker"], "the first free ticker (docs/modes.md)")
	floor := refusal(t, bad["refusals"], core.CodePriceBelowFloor)
	require.Equal(t, "api_commercial.q_surcharge_by_depth.light", floor["path"])
	require.Equal(t, 0.04, floor["floor_usd"])
	require.Equal(t, 0.04, floor["recommended_usd"])
	require.Equal(t, 0.04, bad["floor_usd"], "the floor is known when the spec decodes")

	// As a new draft of its own mode, a spec keeps the mode's ticker.
	for _, id := range []string{"acme-panl", "ACME:PANL"} {
		own := validate(map[string]any{"spec": panelSpec("Acme Review Panel", "PANL"), "mode_id": id})
		require.Equal(t, true, own["ok"], id)
		require.Equal(t, good["mode_config_hash"], own["mode_config_hash"])
	}

	// A spec that does not decode has no floor.
	broken := validate(map[string]any{"spec": map[string]any{"name": "Acme Broken", "max_rounds": "two"}})
	require.Equal(t, false, broken["ok"])
	require.Nil(t, broken["floor_usd"])
	require.Nil(t, broken["recommended_usd"])
}

func TestValidateModeBodies(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	spec := panelSpec("Acme Review Panel", "PANL")
	cases := []struct {
		name, body string
		status     int
		code       core.Code
		param      any
	}{
		{"unknown field", jsonOf(t, map[string]any{"spec": spec, "colour": "blue"}), 400, core.CodeInvalidRequest, "colour"},
		{"no spec", `{}`, 400, core.CodeInvalidRequest, "spec"},
		{"null spec", `{"spec": null}`, 400, core.CodeInvalidRequest, "spec"},
		{"spec not an object", `{"spec": ["PANL"]}`, 400, core.CodeInvalidJSON, "spec"},
		{"mode_id not a string", jsonOf(t, map[string]any{"spec": spec, "mode_id": 7}), 400, core.CodeInvalidJSON, "mode_id"},
		{"no body", ``, 400, core.CodeInvalidJSON, nil},
		{"a version suffix", jsonOf(t, map[string]any{"spec": spec, "mode_id": "acme-panl@lab"}),
			400, core.CodeSuffixNotSupported, "mode_id"},
		{"no such mode", jsonOf(t, map[string]any{"spec": spec, "mode_id": "acme-zzzz"}), 404, core.CodeModeNotFound, "mode_id"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ab.do(t, "POST", "/v1/modes/validate", ab.key, tc.body, "Content-Type", "application/json")
			requireError(t, r, tc.status, tc.code, "invalid_request_error")
			require.Equal(t, tc.param, obj(r.body["error"])["param"])
		})
	}
}

// A spec that fails validation is not saved: 422 mode_invalid, with every
// refusal in the conclave block beside the request id.
func TestSaveModeRefusesAnInvalidSpec(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	r := ab.do(t, "POST", "/v1/modes", ab.key, jsonOf(t, map[string]any{"spec": panelSpec("Acme Review Panel", "panl", cheap)}))
	requireError(t, r, 422, core.CodeModeInvalid, "invalid_request_error")
	block := obj(r.body["conclave"])
	require.Len(t, block, 2, "request_id and refusals: %s", r.raw)
	require.ElementsMatch(t, []string{string(core.CodePriceBelowFloor), string(core.CodeTickerInvalid)},
		refusalCodes(block["refusals"]))
	require.Equal(t, 0.04, refusal(t, block["refusals"], core.CodePriceBelowFloor)["floor_usd"])

	list := ab.do(t, "GET", "/v1/modes", ab.key, "")
	require.Equal(t, 200, list.status, list.raw)
	require.Equal(t, []any{}, list.body["data"], "nothing was saved")
}

func TestSaveReleaseAndReadAMode(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	spec := panelSpec("Acme Review Panel", "PANL")
	hash := ab.do(t, "POST", "/v1/modes/validate", ab.key, jsonOf(t, map[string]any{"spec": spec})).body["mode_config_hash"]

	created := ab.savePanel(t)
	require.Equal(t, "/v1/modes/acme-panl", created.header.Get("Location"))
	m := created.body
	require.Equal(t, "mode", m["object"])
	require.Equal(t, "acme-panl", m["id"])
	require.Equal(t, "ACME:PANL", m["ticker"])
	require.Equal(t, "Acme Review Panel", m["name"])
	draft := obj(m["draft"])
	require.Equal(t, 1.0, draft["revision"])
	require.Equal(t, "pending", draft["state"])
	require.Equal(t, true, draft["validated"])
	require.NotContains(t, draft, "spec", "the spec is sent only when one mode is read in full")
	require.Nil(t, m["latest_version"])
	require.Equal(t, map[string]any{"state": "none", "revision": 0.0}, m["listing"])
	require.Nil(t, m["certified_version"])
	require.Nil(t, m["published_version"])
	require.NotContains(t, m, "refusals")
	require.NotContains(t, m, "owner_org")

	// A new draft names the revision it replaces.
	renamed := panelSpec("Acme Panel Two", "PANL")
	m = ab.save(t, 200, map[string]any{"spec": renamed, "mode_id": "ACME:PANL", "revision": 1}).body
	require.Equal(t, "Acme Panel Two", m["name"])
	require.Equal(t, 2.0, obj(m["draft"])["revision"])

	// An empty body releases the draft as it stands.
	rel := ab.release(t, 200, "").body
	require.Equal(t, 1.0, obj(rel["mode"])["latest_version"])
	require.Equal(t, "released", obj(obj(rel["mode"])["draft"])["state"])
	require.Equal(t, 3.0, obj(obj(rel["mode"])["draft"])["revision"], "a release adds one to the revision")
	version := obj(rel["version"])
	require.Equal(t, 1.0, version["version"])
	require.Equal(t, hash, version["mode_config_hash"], "the hash the validation announced")
	require.NotEmpty(t, version["released_at"])

	list := ab.do(t, "GET", "/v1/modes", ab.key, "")
	require.Equal(t, 200, list.status, list.raw)
	require.Equal(t, "list", list.body["object"])
	require.Len(t, list.body["data"], 1)
	require.Equal(t, rel["mode"], list.body["data"].([]any)[0])
	require.Equal(t, []any{}, ab.do(t, "GET", "/v1/modes", ab.otherKey, "").body["data"],
		"another organisation lists its own modes only")

	for _, path := range []string{"/v1/modes/acme-panl", "/v1/modes/ACME:PANL", "/v1/modes/ACME%3APANL", "/v1/modes/acme%2Dpanl"} {
		r := ab.do(t, "GET", path, ab.key, "")
		require.Equal(t, 200, r.status, "%s: %s", path, r.raw)
		require.Equal(t, "acme-panl", r.body["id"])
		require.JSONEq(t, jsonOf(t, renamed), jsonOf(t, obj(r.body["draft"])["spec"]))
		latest := obj(r.body["latest_release"])
		require.Equal(t, 1.0, latest["version"])
		require.Equal(t, hash, latest["mode_config_hash"])
		require.JSONEq(t, jsonOf(t, renamed), jsonOf(t, latest["spec"]))
		require.Equal(t, []any{}, r.body["lab_invites"])
	}

	// Released, the mode is one its owner can call.
	model := ab.do(t, "GET", "/v1/models/acme-panl", ab.key, "")
	require.Equal(t, 200, model.status, model.raw)
	require.Equal(t, hash, obj(model.body["conclave"])["mode_config_hash"])
	require.Contains(t, modelIDs(ab.do(t, "GET", "/v1/models", ab.key, "")), "acme-panl")
}

// Every refusal of a draft and a release, with its status, over REST.
func TestModeDraftAndReleaseCodes(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	spec := panelSpec("Acme Review Panel", "PANL")
	conflict := func(status int, code core.Code, fields map[string]any) *response {
		t.Helper()
		r := ab.do(t, "POST", "/v1/modes", ab.key, jsonOf(t, fields))
		requireError(t, r, status, code, "invalid_request_error")
		return r
	}

	r := conflict(400, core.CodeDraftRequired, map[string]any{"mode_id": "acme-panl"})
	requireParam(t, r, "spec")
	conflict(400, core.CodeInvalidRequest, map[string]any{"keep_invalid": true})
	conflict(400, core.CodeInvalidRequest, map[string]any{"spec": spec, "revision": -1})
	ab.savePanel(t)

	// The ticker in use: refused by validation, or by the store for a
	// draft kept invalid.
	r = conflict(422, core.CodeModeInvalid, map[string]any{"spec": panelSpec("Acme Other Panel", "PANL")})
	require.Equal(t, []string{string(core.CodeTickerTaken)}, refusalCodes(obj(r.body["conclave"])["refusals"]))
	r = conflict(409, core.CodeTickerTaken, map[string]any{"spec": panelSpec("Acme Other Panel", "PANL"), "keep_invalid": true})
	requireParam(t, r, "ticker")
	requireParam(t, conflict(409, core.CodeNameTaken, map[string]any{"spec": panelSpec("Acme Review Panel", "PANX")}), "name")
	conflict(400, core.CodeTickerInvalid, map[string]any{"spec": panelSpec("Acme Other Panel", "PX"), "keep_invalid": true})

	conflict(409, core.CodeDraftPending, map[string]any{"spec": spec, "mode_id": "acme-panl"})
	conflict(409, core.CodeDraftChanged, map[string]any{"spec": spec, "mode_id": "acme-panl", "revision": 7})
	conflict(409, core.CodeConflict,
		map[string]any{"spec": panelSpec("Acme Review Panel", "PANQ"), "mode_id": "acme-panl", "revision": 1})

	// A draft kept invalid is saved with its refusals, and cannot be
	// released.
	kept := ab.save(t, 200, map[string]any{"spec": panelSpec("Acme Review Panel", "PANL", cheap), "mode_id": "acme-panl",
		"revision": 1, "keep_invalid": true}).body
	require.Equal(t, false, obj(kept["draft"])["validated"])
	require.Equal(t, []string{string(core.CodePriceBelowFloor)}, refusalCodes(kept["refusals"]))
	r = ab.do(t, "POST", "/v1/modes/acme-panl/release", ab.key, "{}")
	requireError(t, r, 409, core.CodeDraftUnvalidated, "invalid_request_error")

	ab.save(t, 200, map[string]any{"spec": spec, "mode_id": "acme-panl", "revision": 2})
	requireError(t, ab.do(t, "POST", "/v1/modes/acme-panl/release", ab.key, `{"revision": 2}`),
		409, core.CodeDraftChanged, "invalid_request_error")
	ab.release(t, 200, `{"revision": 3}`)
	requireError(t, ab.do(t, "POST", "/v1/modes/acme-panl/release", ab.key, ""), 409, core.CodeNoDraft, "invalid_request_error")
	requireError(t, ab.do(t, "POST", "/v1/modes/acme-panl/release", ab.key, `{"version": 1}`),
		400, core.CodeInvalidRequest, "invalid_request_error")
}

// The listing, through every refusal, with the operator's review done as
// the operator CLI does it (ModeStore.ReviewListing).
func TestModeListingCodes(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	ctx := context.Background()
	review := func(kind core.ModeActionKind, version int, revision int64) {
		t.Helper()
		_, err := ab.store.ReviewListing(ctx, "acme-panl", core.ModeAction{Kind: kind, Version: version, ListingRevision: revision})
		require.NoError(t, err)
	}
	refused := func(code core.Code, body string) {
		t.Helper()
		requireError(t, ab.listing(t, body), 409, code, "invalid_request_error")
	}

	ab.savePanel(t)
	refused(core.CodeModeNotReleased, "")
	ab.release(t, 200, "")
	r := ab.listing(t, "")
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, map[string]any{"state": "pending", "revision": 1.0}, r.body["listing"])
	refused(core.CodeConflict, "{}")

	review(core.ActionReject, 0, 1)
	refused(core.CodeListingRejected, "")

	// Approval certifies and publishes the version reviewed.
	review(core.ActionApprove, 1, 2)
	m := ab.do(t, "GET", "/v1/modes/acme-panl", ab.key, "").body
	require.Equal(t, map[string]any{"state": "approved", "revision": 3.0}, m["listing"])
	require.Equal(t, 1.0, m["certified_version"])
	require.Equal(t, 1.0, m["published_version"])

	ab.save(t, 200, map[string]any{"spec": panelSpec("Acme Review Panel", "PANL"), "mode_id": "acme-panl", "revision": 2})
	ab.release(t, 200, "")
	refused(core.CodePublishedVersionUncertified, `{"version": 2}`)
	refused(core.CodeListingChanged, `{"listing_revision": 1}`)
	r = ab.listing(t, `{"version": 1, "listing_revision": 3}`)
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, 1.0, r.body["published_version"])
	require.Equal(t, 1.0, r.body["certified_version"])
	require.Equal(t, 2.0, r.body["latest_version"])
	require.Equal(t, map[string]any{"state": "approved", "revision": 4.0}, r.body["listing"])

	review(core.ActionDelist, 0, 4)
	refused(core.CodeListingDelisted, "")
	requireError(t, ab.listing(t, `{"version": -1}`), 400, core.CodeInvalidRequest, "invalid_request_error")
	requireError(t, ab.listing(t, `{"state": "approved"}`), 400, core.CodeInvalidRequest, "invalid_request_error")
}

// Who may author what: the policy's refusals over REST.
func TestModeAuthoringRefusalsOfTheCaller(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	ab.savePanel(t)
	saveBody := jsonOf(t, map[string]any{"spec": panelSpec("Acme Other Panel", "OTHR")})

	// Another organisation's mode, and a configured mode, are not the
	// caller's to read or change.
	requireError(t, ab.do(t, "GET", "/v1/modes/acme-panl", ab.otherKey, ""), 403, core.CodeForbidden, "permission_error")
	requireError(t, ab.do(t, "POST", "/v1/modes/ACME:PANL/release", ab.otherKey, ""), 403, core.CodeForbidden, "permission_error")
	for _, id := range []string{"conclave-standard", "CNCL:STND"} {
		requireError(t, ab.do(t, "GET", "/v1/modes/"+id, ab.key, ""), 403, core.CodeForbidden, "permission_error")
		requireError(t, ab.do(t, "POST", "/v1/modes/"+id+"/release", ab.key, ""), 403, core.CodeForbidden, "permission_error")
	}

	r := ab.do(t, "GET", "/v1/modes/acme-zzzz", ab.key, "")
	requireError(t, r, 404, core.CodeModeNotFound, "invalid_request_error")
	requireParam(t, r, "mode")
	for _, req := range []struct{ method, path string }{
		{"GET", "/v1/modes/acme-panl@lab"}, {"GET", "/v1/modes/acme-panl%40v1"}, {"POST", "/v1/modes/acme-panl@v1/release"},
	} {
		r := ab.do(t, req.method, req.path, ab.key, "")
		requireError(t, r, 400, core.CodeSuffixNotSupported, "invalid_request_error")
		requireParam(t, r, "mode")
	}

	// A test key validates and reads, and changes nothing.
	test := ab.newKey(t, &core.CreateKeyParams{OrgID: ab.acme.ID, Test: true})
	requireError(t, ab.do(t, "POST", "/v1/modes", test, saveBody), 403, core.CodeTestKeyNotAllowed, "permission_error")
	requireError(t, ab.do(t, "POST", "/v1/modes/acme-panl/release", test, ""), 403, core.CodeTestKeyNotAllowed, "permission_error")
	require.Equal(t, 200, ab.do(t, "POST", "/v1/modes/validate", test, saveBody).status)
	require.Equal(t, 200, ab.do(t, "GET", "/v1/modes/acme-panl", test, "").status)

	// A key limited to other modes neither reads nor changes this one.
	limited := ab.newKey(t, &core.CreateKeyParams{OrgID: ab.acme.ID, Modes: []string{"acme-othr"}})
	requireError(t, ab.do(t, "GET", "/v1/modes/acme-panl", limited, ""), 403, core.CodeModeNotAllowed, "permission_error")
	requireError(t, ab.do(t, "POST", "/v1/modes/acme-panl/release", limited, ""), 403, core.CodeModeNotAllowed, "permission_error")
	requireError(t, ab.do(t, "PUT", "/v1/modes/acme-panl/lab_invites/"+ab.org.Ticker, limited, ""),
		403, core.CodeModeNotAllowed, "permission_error")
	created := ab.do(t, "POST", "/v1/modes", limited, saveBody)
	require.Equal(t, 201, created.status, "it may create the mode it names: %s", created.raw)
	listed := ab.do(t, "GET", "/v1/modes", limited, "")
	require.Equal(t, 200, listed.status, listed.raw)
	var ids []string
	for _, m := range listed.body["data"].([]any) {
		ids = append(ids, obj(m)["id"].(string))
	}
	require.Equal(t, []string{"acme-othr"}, ids, "it lists only the modes it is limited to")
	require.Len(t, ab.do(t, "GET", "/v1/modes", ab.key, "").body["data"], 2, "an unlimited key lists both")

	// Scopes: modes:write to validate and change, models:read to read.
	reader := ab.newKey(t, &core.CreateKeyParams{OrgID: ab.acme.ID, Scopes: []string{core.ScopeModelsRead}})
	requireError(t, ab.do(t, "POST", "/v1/modes", reader, saveBody), 403, core.CodeInsufficientScope, "permission_error")
	requireError(t, ab.do(t, "POST", "/v1/modes/validate", reader, saveBody), 403, core.CodeInsufficientScope, "permission_error")
	require.Equal(t, 200, ab.do(t, "GET", "/v1/modes", reader, "").status)
	estimator := ab.newKey(t, &core.CreateKeyParams{OrgID: ab.acme.ID, Scopes: []string{core.ScopeEstimate}})
	requireError(t, ab.do(t, "GET", "/v1/modes", estimator, ""), 403, core.CodeInsufficientScope, "permission_error")
	requireError(t, ab.do(t, "GET", "/v1/modes/acme-panl", estimator, ""), 403, core.CodeInsufficientScope, "permission_error")
}

// A release checks the draft again: an engine gone since the save refuses
// it with the refusal's code and every refusal.
func TestReleaseRechecksTheDraft(t *testing.T) {
	t.Parallel()
	var gone atomic.Bool
	ab := setupAuthoring(t, func(o *setupOpts) {
		o.available = func(id string) bool { return !(gone.Load() && id == "sim/gemini-flash") }
	})
	ab.savePanel(t)
	gone.Store(true)
	r := ab.do(t, "POST", "/v1/modes/acme-panl/release", ab.key, "")
	requireError(t, r, 400, core.CodeEngineUnavailable, "invalid_request_error")
	refusals := obj(r.body["conclave"])["refusals"]
	require.NotEmpty(t, refusals)
	for _, c := range refusalCodes(refusals) {
		require.Equal(t, string(core.CodeEngineUnavailable), c)
	}
	require.Nil(t, ab.do(t, "GET", "/v1/modes/acme-panl", ab.key, "").body["latest_version"], "nothing was released")
	gone.Store(false)
	ab.release(t, 200, "")
}

// Two releases of one draft at once: exactly one wins; the other is told
// the draft changed.
func TestConcurrentReleasesOfOneDraft(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	ab.savePanel(t)
	var wg sync.WaitGroup
	start := make(chan struct{})
	results := make([]*response, 2)
	errs := make([]error, 2)
	for i := range results {
		wg.Go(func() {
			<-start
			results[i], errs[i] = sendRequest(ab.srv.URL, "POST", "/v1/modes/acme-panl/release", ab.key, `{"revision": 1}`)
		})
	}
	close(start)
	wg.Wait()
	var statuses []int
	for i, r := range results {
		require.NoError(t, errs[i])
		statuses = append(statuses, r.status)
		if r.status == 409 {
			requireError(t, r, 409, core.CodeDraftChanged, "invalid_request_error")
		}
	}
	require.ElementsMatch(t, []int{200, 409}, statuses)
	m := ab.do(t, "GET", "/v1/modes/acme-panl", ab.key, "").body
	require.Equal(t, 1.0, m["latest_version"], "one version was written")
}

func TestModeLabInvites(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	ab.savePanel(t)
	ab.release(t, 200, "")
	other := ab.org.Ticker
	path := "/v1/modes/acme-panl/lab_invites/"
	invites := func() any { return ab.do(t, "GET", "/v1/modes/acme-panl", ab.key, "").body["lab_invites"] }

	for range 2 { // inviting again changes nothing
		r := ab.do(t, "PUT", path+other, ab.key, "")
		require.Equal(t, 200, r.status, r.raw)
		require.Equal(t, true, r.body["ok"])
		require.Equal(t, "acme-panl", r.body["mode"])
		require.Equal(t, other, r.body["org"])
		require.Equal(t, true, r.body["invited"])
	}
	require.Equal(t, []any{other}, invites())
	r := ab.do(t, "PUT", path+strings.ToLower(other), ab.key, "")
	require.Equal(t, 200, r.status, "a ticker in any case: %s", r.raw)
	require.Equal(t, other, r.body["org"])
	require.Equal(t, []any{other}, invites())

	r = ab.do(t, "PUT", path+"acme", ab.key, "")
	requireError(t, r, 400, core.CodeInvalidValue, "invalid_request_error")
	requireParam(t, r, "org")
	// A ticker no organisation has is answered exactly as one that an
	// organisation has — a fresh invitation and a repeat alike — but for
	// the ticker it names, and is not recorded.
	require.Equal(t, 200, ab.do(t, "DELETE", path+other, ab.key, "").status)
	fresh := ab.do(t, "PUT", path+other, ab.key, "")
	repeat := ab.do(t, "PUT", path+other, ab.key, "")
	unknown := ab.do(t, "PUT", path+"ZZZZ", ab.key, "")
	require.Equal(t, 200, unknown.status, unknown.raw)
	require.Equal(t, fresh.raw, repeat.raw)
	require.Equal(t, fresh.raw, strings.ReplaceAll(unknown.raw, "ZZZZ", other), "the answer tells whether an organisation has the ticker")
	require.Equal(t, fresh.header.Get("Content-Type"), unknown.header.Get("Content-Type"))
	require.Equal(t, []any{other}, invites(), "nothing is recorded for ZZZZ")
	// What is not a ticker at all is refused, whether or not any
	// organisation exists: a NUL byte is never sent to the database.
	for _, bad := range []string{"ZZ", "ZZZZZ", "Z%00ZZ", "ZZ%20Z"} {
		for _, method := range []string{"PUT", "DELETE"} {
			r := ab.do(t, method, path+bad, ab.key, "")
			requireError(t, r, 400, core.CodeInvalidValue, "invalid_request_error")
			requireParam(t, r, "org")
		}
	}
	requireError(t, ab.do(t, "PUT", "/v1/modes/acme-zzzz/lab_invites/"+other, ab.key, ""),
		404, core.CodeModeNotFound, "invalid_request_error")

	for range 2 { // withdrawing one that does not exist changes nothing
		r := ab.do(t, "DELETE", path+other, ab.key, "")
		require.Equal(t, 200, r.status, r.raw)
		require.Equal(t, false, r.body["invited"])
		require.Equal(t, other, r.body["org"])
		require.Equal(t, []any{}, invites())
	}
	gone := ab.do(t, "DELETE", path+"ZZZZ", ab.key, "")
	require.Equal(t, ab.do(t, "DELETE", path+other, ab.key, "").raw, strings.ReplaceAll(gone.raw, "ZZZZ", other))
}

// Each /v1/modes request spends one request of the key's rate, whatever
// it is answered.
func TestModeRoutesSpendTheRateOnce(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t, func(o *setupOpts) { o.cfg.RPM = 3 })
	require.Equal(t, 200, ab.do(t, "GET", "/v1/modes", ab.key, "").status)
	requireError(t, ab.do(t, "POST", "/v1/modes", ab.key, `{"colour": "blue"}`), 400, core.CodeInvalidRequest, "invalid_request_error")
	requireError(t, ab.do(t, "GET", "/v1/modes/acme-zzzz", ab.key, ""), 404, core.CodeModeNotFound, "invalid_request_error")
	r := ab.do(t, "POST", "/v1/modes/validate", ab.key, jsonOf(t, map[string]any{"spec": panelSpec("Acme Review Panel", "PANL")}))
	requireError(t, r, 429, core.CodeRateLimitExceeded, "rate_limit_error")
	require.NotEmpty(t, r.header.Get("Retry-After"))
}

func TestModeRoutesAndMethods(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	r := ab.do(t, "DELETE", "/v1/modes", ab.key, "")
	requireError(t, r, 405, core.CodeMethodNotAllowed, "invalid_request_error")
	require.Equal(t, []string{"GET", "POST"}, r.header.Values("Allow"))
	r = ab.do(t, "PUT", "/v1/modes/acme-panl", ab.key, "")
	requireError(t, r, 405, core.CodeMethodNotAllowed, "invalid_request_error")
	require.Equal(t, []string{"GET"}, r.header.Values("Allow"))
	requireError(t, ab.do(t, "GET", "/v1/modes/acme-panl/versions", ab.key, ""), 404, core.CodeUnknownURL, "invalid_request_error")
	requireError(t, ab.do(t, "GET", "/v1/modes", "", ""), 401, core.CodeInvalidAPIKey, "authentication_error")
	requireError(t, ab.do(t, "POST", "/v1/modes", ab.key, "spec=x", "Content-Type", "text/plain"),
		415, core.CodeUnsupportedMediaType, "invalid_request_error")

	// Without a mode service, /v1/modes is not served. (The document
	// describes the whole API, so this server is not held to it.)
	bare := setupWith(t, "Bare", func(p *parts) { p.withoutModes, p.uncontracted = true, true })
	requireError(t, bare.do(t, "GET", "/v1/modes", bare.key, ""), 404, core.CodeUnknownURL, "invalid_request_error")
}

// Another organisation reaches ACME's mode only as the marketplace and the
// lab allow, on every endpoint that names a mode; each refusal is a
// documented one (the contract test checks every answer).
func TestCallsOnAnotherOrganisationsMode(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	ab.savePanel(t)
	ab.release(t, 200, "")
	estimate := func(model string) *response {
		return ab.do(t, "POST", "/v1/estimate", ab.otherKey,
			`{"model":"`+model+`","messages":[{"role":"user","content":"Which database should we pick?"}]}`)
	}

	// Released, not listed: the owner reaches it, the other is told it is
	// not published.
	require.Equal(t, 200, ab.do(t, "GET", "/v1/models/ACME:PANL", ab.key, "").status)
	requireError(t, ab.do(t, "GET", "/v1/models/ACME:PANL", ab.otherKey, ""), 403, core.CodeModeNotPublished, "permission_error")
	requireError(t, estimate("acme-panl"), 403, core.CodeModeNotPublished, "permission_error")
	requireError(t, estimate("acme-panl@lab"), 403, core.CodeLabNotAvailable, "permission_error")
	requireError(t, estimate("conclave-standard@lab"), 400, core.CodeSuffixNotSupported, "invalid_request_error")
	requireError(t, ab.do(t, "GET", "/v1/models/conclave-standard@v1", ab.key, ""), 400, core.CodeSuffixNotSupported, "invalid_request_error")
	requireError(t, estimate("acme-panl@v9"), 404, core.CodeModelNotFound, "invalid_request_error")
	require.NotContains(t, modelIDs(ab.do(t, "GET", "/v1/models", ab.otherKey, "")), "acme-panl")

	// Listed and approved: version 1 is published to every organisation.
	require.Equal(t, 200, ab.listing(t, "").status)
	ctx := context.Background()
	m, err := ab.store.AuthoredModeByRef(ctx, "acme-panl")
	require.NoError(t, err)
	_, err = ab.store.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionApprove, ListingRevision: m.ListingRevision, Version: 1})
	require.NoError(t, err)
	require.Contains(t, modelIDs(ab.do(t, "GET", "/v1/models", ab.otherKey, "")), "acme-panl")
	r := estimate("ACME:PANL")
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, 200, estimate("acme-panl@v1").status, "the published version by its number")

	// Version 2 is a lab version until invited.
	ab.save(t, 200, map[string]any{"mode_id": "acme-panl", "spec": panelSpec("Acme Review Panel", "PANL")})
	ab.release(t, 200, "")
	requireError(t, estimate("acme-panl@v2"), 403, core.CodeLabNotAvailable, "permission_error")
	require.Equal(t, 200, ab.do(t, "PUT", "/v1/modes/acme-panl/lab_invites/"+ab.org.Ticker, ab.key, "").status)
	require.Equal(t, 200, estimate("acme-panl@v2").status)
	require.Equal(t, 200, estimate("ACME:PANL@lab").status)

	// Delisted: nothing is published any more.
	m, err = ab.store.AuthoredModeByRef(ctx, "acme-panl")
	require.NoError(t, err)
	_, err = ab.store.ReviewListing(ctx, m.ID, core.ModeAction{Kind: core.ActionDelist, ListingRevision: m.ListingRevision})
	require.NoError(t, err)
	requireError(t, estimate("acme-panl"), 403, core.CodeModeNotPublished, "permission_error")
}

// Every validation code of the spec an organisation can produce, through
// REST: validate answers 200 with exactly the case's refusal and its extra
// fields; a save answers 422 mode_invalid carrying the same refusal, and
// saves nothing. engine_unavailable is produced by a deployment whose
// engine cannot fill a seat (the setup's availability); the system-mode
// rules and org_required need an author no API key is (an operator, a
// person without an organisation) and are reached by the policy tests.
func TestEveryValidationCodeOverREST(t *testing.T) {
	t.Parallel()
	// The engines the case being run makes unavailable (its subtests run
	// one at a time).
	var mu sync.Mutex
	var unavailable []string
	ab := setupAuthoring(t, func(o *setupOpts) {
		o.available = func(id string) bool {
			mu.Lock()
			defer mu.Unlock()
			return !slices.Contains(unavailable, id)
		}
	})
	ab.key = ab.newKey(t, &core.CreateKeyParams{OrgID: ab.acme.ID, RPM: 1000}) // four requests a case
	ctx := context.Background()
	// ticker_taken runs last: the modes it takes the tickers of stay.
	cases := modestest.Cases()
	slices.SortStableFunc(cases, func(a, b modestest.Case) int {
		return cmp.Compare(boolInt(a.Code == core.CodeTickerTaken), boolInt(b.Code == core.CodeTickerTaken))
	})
	reached := map[core.Code]bool{}
	for _, c := range cases {
		if c.Author.System || c.Author.OrgID == "" {
			continue
		}
		t.Run(string(c.Code), func(t *testing.T) {
			mu.Lock()
			unavailable = c.Unavailable
			mu.Unlock()
			for _, full := range c.TakenTickers {
				owner, mode, _ := strings.Cut(full, ":")
				if owner != ab.acme.Ticker {
					continue // a configured mode's ticker, taken already
				}
				_, err := ab.store.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: ab.acme.ID, Name: "Taken " + mode, Ticker: mode,
					Spec: json.RawMessage(`{}`)})
				require.NoError(t, err)
			}
			body := `{"spec":` + string(c.Spec) + `}`
			r := ab.do(t, "POST", "/v1/modes/validate", ab.key, body)
			require.Equal(t, 200, r.status, r.raw)
			require.Equal(t, false, r.body["ok"])
			require.Equal(t, []string{string(c.Code)}, refusalCodes(r.body["refusals"]), r.raw)
			got := refusal(t, r.body["refusals"], c.Code)
			require.Equal(t, c.Path, got["path"])
			if c.SuggestedTicker != "" {
				require.Equal(t, c.SuggestedTicker, got["suggested_ticker"])
			}
			if c.FloorUSD != "" {
				require.Equal(t, c.FloorUSD, fmt.Sprint(got["floor_usd"]))
				require.Equal(t, c.RecommendedUSD, fmt.Sprint(got["recommended_usd"]))
			}

			before := len(ab.do(t, "GET", "/v1/modes", ab.key, "").body["data"].([]any))
			r = ab.do(t, "POST", "/v1/modes", ab.key, body)
			requireError(t, r, 422, core.CodeModeInvalid, "invalid_request_error")
			require.Equal(t, []string{string(c.Code)}, refusalCodes(obj(r.body["conclave"])["refusals"]), r.raw)
			require.Len(t, ab.do(t, "GET", "/v1/modes", ab.key, "").body["data"], before, "nothing saved")
			reached[c.Code] = true
		})
	}
	require.Len(t, reached, len(cases)-4, "every case but the three system-mode rules and org_required")
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
