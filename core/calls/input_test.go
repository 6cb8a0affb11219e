package calls

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
)

func parseChatBody(t *testing.T, body string) (*ChatParams, error) {
	t.Helper()
	var b ChatInput
	require.NoError(t, json.Unmarshal([]byte(body), &b))
	return ParseChat(&b)
}

func TestChatRequestValidation(t *testing.T) {
	t.Parallel()
	msgs := `"messages":[{"role":"user","content":"hi"}]`
	cases := []struct {
		name, body string
		code       core.Code
		param      string
	}{
		{"model missing", `{` + msgs + `}`, core.CodeInvalidMessages, "model"},
		{"model not a string", `{"model":1,` + msgs + `}`, core.CodeInvalidMessages, "model"},
		{"messages missing", `{"model":"m"}`, core.CodeInvalidMessages, "messages"},
		{"messages empty", `{"model":"m","messages":[]}`, core.CodeInvalidMessages, "messages"},
		{"bad role", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, core.CodeInvalidMessages, "messages[0].role"},
		{"content not a string", `{"model":"m","messages":[{"role":"user","content":{"a":1}}]}`, core.CodeInvalidMessages, "messages[0].content"},
		{"stream true", `{"model":"m",` + msgs + `,"stream":true}`, core.CodeStreamNotSupported, "stream"},
		{"stream not bool", `{"model":"m",` + msgs + `,"stream":"yes"}`, core.CodeInvalidJSON, "stream"},
		{"tier unknown", `{"model":"m",` + msgs + `,"tier":"gold"}`, core.CodeInvalidTier, "tier"},
		{"tier not a string", `{"model":"m",` + msgs + `,"tier":2}`, core.CodeInvalidTier, "tier"},
		{"panel not an object", `{"model":"m",` + msgs + `,"panel":[1]}`, core.CodeInvalidJSON, "panel"},
		{"max cost zero", `{"model":"m",` + msgs + `,"panel":{"max_cost_usd":0}}`, core.CodeInvalidMaxCostUSD, "panel.max_cost_usd"},
		{"max cost negative", `{"model":"m",` + msgs + `,"panel":{"max_cost_usd":-1}}`, core.CodeInvalidMaxCostUSD, "panel.max_cost_usd"},
		{"max cost string", `{"model":"m",` + msgs + `,"panel":{"max_cost_usd":"1.00"}}`, core.CodeInvalidMaxCostUSD, "panel.max_cost_usd"},
		{"max cost below a micro-dollar", `{"model":"m",` + msgs + `,"panel":{"max_cost_usd":1e-7}}`, core.CodeInvalidMaxCostUSD, "panel.max_cost_usd"},
		{"max cost null is absent", `{"model":"m",` + msgs + `,"panel":{"max_cost_usd":true}}`, core.CodeInvalidMaxCostUSD, "panel.max_cost_usd"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseChatBody(t, tc.body)
			e := core.AsError(err)
			require.Equal(t, tc.code, e.Code, "%v", err)
			require.Equal(t, tc.param, e.Param)

			// The estimate takes the same body and refuses it with the
			// same code, but for a missing model: invalid_model there.
			var in EstimateInput
			require.NoError(t, json.Unmarshal([]byte(tc.body), &in))
			_, err = ParseEstimate(&in)
			e = core.AsError(err)
			want := tc.code
			if tc.param == "model" {
				want = core.CodeInvalidModel
			}
			require.Equal(t, want, e.Code, "estimate: %v", err)
			require.Equal(t, tc.param, e.Param, "estimate")
		})
	}
}

func TestChatRequestDefaultsAndExactMoney(t *testing.T) {
	t.Parallel()
	r, err := parseChatBody(t, `{"model":"conclave-standard","messages":[{"role":"user","content":"hi"}],"stream":false}`)
	require.NoError(t, err)
	require.Equal(t, core.TierPlus, r.Tier, "tier defaults to plus")
	require.Nil(t, r.MaxCost)

	for body, want := range map[string]core.Micros{
		`0.25`: 250_000, `1`: 1_000_000, `2.5e-1`: 250_000, `0.0000019`: 1, `1E2`: 100_000_000, `0.1`: 100_000,
	} {
		r, err := parseChatBody(t, `{"model":"m","messages":[{"role":"user","content":"hi"}],"tier":"pro","panel":{"max_cost_usd":`+body+`,"future_field":1}}`)
		require.NoError(t, err, body)
		require.Equal(t, want, *r.MaxCost, body)
		require.Equal(t, core.TierPro, r.Tier)
	}
}

// FuzzChatRequest: any body either parses or is refused with a code the
// error table knows; it never panics.
func FuzzChatRequest(f *testing.F) {
	f.Add(`{"model":"m","messages":[{"role":"user","content":"hi"}],"panel":{"max_cost_usd":1e-3}}`)
	f.Add(`{"model":"m","messages":[{"role":"assistant","content":""}],"tier":"experience","stream":false}`)
	f.Add(`{"panel":{"max_cost_usd":1e400}}`)
	f.Fuzz(func(t *testing.T, body string) {
		var b ChatInput
		if json.Unmarshal([]byte(body), &b) != nil {
			return
		}
		r, err := ParseChat(&b)
		if err != nil {
			if !core.KnownCode(core.AsError(err).Code) || core.AsError(err).Code == core.CodeInternalError {
				t.Fatalf("refused %q with %v", body, err)
			}
			return
		}
		if r.Model == "" || len(r.Messages) == 0 || !r.Tier.Valid() || (r.MaxCost != nil && *r.MaxCost < 1) {
			t.Fatalf("accepted a bad request %q: %+v", body, r)
		}
	})
}
