package modes_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
)

// TestUnkeepable: the refusals of a listing field block a draft kept
// invalid, save ticker_taken and a description or use_when left out;
// every other refusal may be kept.
func TestUnkeepable(t *testing.T) {
	t.Parallel()
	r := func(code core.Code, path string) modes.Refusal { return modes.Refusal{Code: code, Path: path} }
	cases := []struct {
		spec     string
		refusals []modes.Refusal
		want     []modes.Refusal
	}{
		{`{"name": "X"}`, []modes.Refusal{r(core.CodeNameTooShort, "name"), r(core.CodePriceRequired, "api_commercial")},
			[]modes.Refusal{r(core.CodeNameTooShort, "name")}},
		{`{}`, []modes.Refusal{r(core.CodeNameTooShort, "name"), r(core.CodeTickerRequired, "ticker"), r(core.CodeUseWhenInvalid, "use_when")},
			[]modes.Refusal{r(core.CodeNameTooShort, "name"), r(core.CodeTickerRequired, "ticker")}},
		{`{"use_when": null, "description": "<b>"}`, []modes.Refusal{r(core.CodeDescriptionBadChars, "description"), r(core.CodeUseWhenInvalid, "use_when")},
			[]modes.Refusal{r(core.CodeDescriptionBadChars, "description")}},
		{`{"use_when": "  "}`, []modes.Refusal{r(core.CodeUseWhenInvalid, "use_when")}, []modes.Refusal{r(core.CodeUseWhenInvalid, "use_when")}},
		{`{"ticker": "TAKN"}`, []modes.Refusal{r(core.CodeTickerTaken, "ticker")}, nil},
		{`{"name": "Acme", "seats": []}`, []modes.Refusal{r(core.CodeSixSeatsRequired, "seats"), r(core.CodeInvalidValue, "")}, nil},
	}
	for _, c := range cases {
		require.Equal(t, c.want, modes.Unkeepable([]byte(c.spec), c.refusals), c.spec)
	}
}
