package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// letters are n letters that do not repeat in any pattern PostgreSQL could
// compress away.
func letters(n int) string {
	r := rand.New(rand.NewPCG(27, 10))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	b[0] = 'A'
	return string(b)
}

// savedModes counts ACME's modes as the store holds them.
func (ab *authoringBundle) savedModes(t *testing.T) int {
	t.Helper()
	ms, err := ab.store.ListAuthoredModes(context.Background(), ab.acme.ID)
	require.NoError(t, err)
	return len(ms)
}

// A spec over 64 KiB is 413 request_too_large, validated or saved, kept
// invalid or not, and nothing is saved; the body cap (1 MiB) is not what
// refuses it.
func TestModeSpecSizeCapOverREST(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	spec := panelSpec("Acme Review Panel", "PANL", func(s map[string]any) {
		s["description"] = strings.Repeat("a", modes.MaxSpecBytes)
	})
	for _, c := range []struct{ path, body string }{
		{"/v1/modes/validate", jsonOf(t, map[string]any{"spec": spec})},
		{"/v1/modes", jsonOf(t, map[string]any{"spec": spec})},
		{"/v1/modes", jsonOf(t, map[string]any{"spec": spec, "keep_invalid": true})},
	} {
		r := ab.do(t, "POST", c.path, ab.key, c.body)
		requireError(t, r, 413, core.CodeRequestTooLarge, "invalid_request_error")
		requireParam(t, r, "spec")
		require.Contains(t, obj(r.body["error"])["message"], "65536", r.raw)
	}
	require.Zero(t, ab.savedModes(t), "nothing was saved")
}

// A row of a thousand seats is answered at once with the bound it breaks,
// over REST as in Go.
func TestModeSpecBoundsOverREST(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	spec := panelSpec("Acme Review Panel", "PANL", func(s map[string]any) {
		row := make([]any, 1000)
		for i := range row {
			row[i] = map[string]any{"engine": "sim/atlas"}
		}
		s["seats_by_tier"].(map[string]any)["plus"] = row
	})
	r := ab.do(t, "POST", "/v1/modes/validate", ab.key, jsonOf(t, map[string]any{"spec": spec}))
	require.Equal(t, 200, r.status, r.raw)
	require.Equal(t, false, r.body["ok"], r.raw)
	require.Equal(t, []string{string(core.CodeSixSeatsRequired)}, refusalCodes(r.body["refusals"]))
	require.Equal(t, "seats_by_tier.plus", obj(r.body["refusals"].([]any)[0])["path"])
}

// A draft kept invalid still keeps its name, ticker, description and
// use_when within their rules: one that breaks them is refused with the
// first such refusal's code (400; invalid_request for invalid_value, as a
// release's re-check answers), naming the field, with every such refusal,
// and nothing is saved — a 6,000-character name included, which
// PostgreSQL's index could not hold. What a draft may leave out (use_when),
// or break elsewhere (a price), it may still be kept with.
func TestKeepInvalidKeepsTheFieldBounds(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	cases := []struct {
		name  string
		edit  func(s map[string]any)
		code  core.Code
		param string
		codes []string // the refusals answered
	}{
		{"a 6,000-character name", func(s map[string]any) { s["name"] = letters(6000) },
			core.CodeNameTooLong, "name", []string{"name_too_long"}},
		{"a name of markup", func(s map[string]any) { s["name"] = "<b>Acme</b>" },
			core.CodeNameBadChars, "name", []string{"name_bad_chars"}},
		{"a reserved name", func(s map[string]any) { s["name"] = "Conclave Panel" },
			core.CodeNameReserved, "name", []string{"name_reserved"}},
		{"no name", func(s map[string]any) { delete(s, "name") },
			core.CodeNameTooShort, "name", []string{"name_too_short"}},
		{"a name that is not a string", func(s map[string]any) { s["name"] = 7 },
			core.CodeInvalidRequest, "name", []string{"invalid_value"}},
		{"a description too long", func(s map[string]any) { s["description"] = letters(281) },
			core.CodeDescriptionTooLong, "description", []string{"description_too_long"}},
		{"a use_when too long", func(s map[string]any) { s["use_when"] = letters(501) },
			core.CodeUseWhenTooLong, "use_when", []string{"use_when_too_long"}},
		{"a use_when of markup", func(s map[string]any) { s["use_when"] = "<script>x</script>" },
			core.CodeUseWhenInvalid, "use_when", []string{"use_when_invalid"}},
		{"no ticker", func(s map[string]any) { delete(s, "ticker") },
			core.CodeTickerRequired, "ticker", []string{"ticker_required"}},
		{"several at once, the first by path", func(s map[string]any) {
			s["name"] = letters(61)
			s["description"] = "<i>"
			cheap(s)
		}, core.CodeDescriptionBadChars, "description", []string{"description_bad_chars", "name_too_long"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := ab.do(t, "POST", "/v1/modes", ab.key,
				jsonOf(t, map[string]any{"spec": panelSpec("Acme Review Panel", "PANL", tc.edit), "keep_invalid": true}))
			requireError(t, r, 400, tc.code, "invalid_request_error")
			requireParam(t, r, tc.param)
			require.Equal(t, tc.codes, refusalCodes(obj(r.body["conclave"])["refusals"]), r.raw)
		})
	}
	require.Zero(t, ab.savedModes(t), "nothing was saved")

	// Without use_when, and under the floor, the draft is kept, with its
	// refusals.
	kept := ab.save(t, 201, map[string]any{"keep_invalid": true, "spec": panelSpec("Acme Review Panel", "PANL",
		func(s map[string]any) { delete(s, "use_when") }, cheap)}).body
	require.Equal(t, false, obj(kept["draft"])["validated"])
	require.Equal(t, []string{string(core.CodePriceBelowFloor), string(core.CodeUseWhenInvalid)}, refusalCodes(kept["refusals"]))

	// A new draft of the mode is held to the same bounds.
	r := ab.do(t, "POST", "/v1/modes", ab.key, jsonOf(t, map[string]any{"mode_id": "acme-panl", "revision": 1,
		"keep_invalid": true, "spec": panelSpec(letters(6000), "PANL")}))
	requireError(t, r, 400, core.CodeNameTooLong, "invalid_request_error")
	m := ab.do(t, "GET", "/v1/modes/acme-panl", ab.key, "")
	require.Equal(t, "Acme Review Panel", m.body["name"], "the mode is unchanged")
}

// An organisation holds at most limits.modes_per_org modes (100 by
// default): past it a new mode is 409 conflict, saying the cap and what to
// do, and nothing is saved; a new draft of a mode it holds, and another
// organisation's new mode, are not held back.
func TestModesPerOrganisationCap(t *testing.T) {
	t.Parallel()
	ab := setupAuthoring(t)
	ctx := context.Background()
	spec, err := json.Marshal(panelSpec("Acme Review Panel", "PANL"))
	require.NoError(t, err)
	for i := range 99 {
		ticker := fmt.Sprintf("Q%c%c%c", 'A'+i/26/26%26, 'A'+i/26%26, 'A'+i%26)
		_, err := ab.store.SaveModeDraft(ctx, &core.SaveModeDraft{OrgID: ab.acme.ID, Name: "Mode " + ticker, Ticker: ticker,
			Spec: spec, Validated: true})
		require.NoError(t, err)
	}
	ab.savePanel(t) // the hundredth

	r := ab.do(t, "POST", "/v1/modes", ab.key, jsonOf(t, map[string]any{"spec": panelSpec("Acme Other Panel", "OTHR")}))
	requireError(t, r, 409, core.CodeConflict, "invalid_request_error")
	msg := obj(r.body["error"])["message"].(string)
	require.Contains(t, msg, "100 modes")
	require.Contains(t, msg, "mode_id")
	r = ab.do(t, "POST", "/v1/modes", ab.key, jsonOf(t, map[string]any{"keep_invalid": true,
		"spec": panelSpec("Acme Other Panel", "OTHR", cheap)}))
	requireError(t, r, 409, core.CodeConflict, "invalid_request_error")
	require.Equal(t, 100, ab.savedModes(t), "nothing more was saved")

	ab.save(t, 200, map[string]any{"spec": panelSpec("Acme Panel Two", "PANL"), "mode_id": "acme-panl", "revision": 1})
	ab.do(t, "POST", "/v1/modes", ab.otherKey, jsonOf(t, map[string]any{"spec": panelSpec("Other Panel", "OTHR")}))
	other := ab.do(t, "GET", "/v1/modes", ab.otherKey, "")
	require.Len(t, other.body["data"], 1, other.raw)
}
