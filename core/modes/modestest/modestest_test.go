package modestest_test

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes/modestest"
)

// documentedCodes are the codes of docs/modes.md's "The rules, code by
// code": the first cell of each table row of that section.
func documentedCodes(t *testing.T) []core.Code {
	t.Helper()
	doc, err := os.ReadFile("../../../docs/modes.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n## The rules, code by code\n")
	require.True(t, ok, "docs/modes.md has the section")
	section, _, _ = strings.Cut(section, "\n## ")
	var out []core.Code
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(section, -1) {
		out = append(out, core.Code(m[1]))
	}
	require.Greater(t, len(out), 40)
	return out
}

// The corpus has one case for every code docs/modes.md documents, and no
// other; each case is a JSON object, and its extra fields belong to its
// code.
func TestCorpusCoversEveryDocumentedCode(t *testing.T) {
	t.Parallel()
	var codes []core.Code
	for _, c := range modestest.Cases() {
		codes = append(codes, c.Code)
		require.True(t, core.KnownCode(c.Code), c.Code)
		var obj map[string]any
		require.NoError(t, json.Unmarshal(c.Spec, &obj), "%s: the spec is one JSON object", c.Code)
		require.Equal(t, c.Code == core.CodeTickerTaken, c.SuggestedTicker != "", c.Code)
		require.Equal(t, c.Code == core.CodePriceBelowFloor, c.FloorUSD != "" && c.RecommendedUSD != "", c.Code)
		got, ok := modestest.CaseOf(c.Code)
		require.True(t, ok)
		require.Equal(t, c, got)
	}
	require.ElementsMatch(t, documentedCodes(t), codes, "one case per documented code")
	_, ok := modestest.CaseOf(core.CodeModeInvalid)
	require.False(t, ok, "mode_invalid answers refusals; it refuses no rule")
}

// ByOrganisation leaves out exactly the cases an organisation's request
// cannot produce.
func TestByOrganisation(t *testing.T) {
	t.Parallel()
	var not []core.Code
	for _, c := range modestest.Cases() {
		if !c.ByOrganisation() {
			not = append(not, c.Code)
		}
	}
	require.ElementsMatch(t, []core.Code{core.CodeSystemModeSeats, core.CodeSystemModeSeatsUntiered,
		core.CodeSystemModeTierDropped, core.CodeOrgRequired, core.CodeEngineUnavailable}, not)
}

// Cases are fresh on every call: changing one changes no other caller's.
func TestCasesAreFresh(t *testing.T) {
	t.Parallel()
	a, _ := modestest.CaseOf(core.CodeTickerTaken)
	b, _ := modestest.CaseOf(core.CodeTickerTaken)
	a.Spec[0] = 'x'
	a.TakenTickers[0] = "X:X"
	require.Equal(t, byte('{'), b.Spec[0])
	require.Equal(t, "ACME:PANL", b.TakenTickers[0])
}
