package api_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/internal/nodetest"
)

// The tools people point at an OpenAPI document read ours: Redocly's
// linter with its recommended rules, and openapi-typescript, which
// generates a client's types (both pinned in compat/, installed by npm ci).

// keptWarnings are the recommended rules' warnings the document keeps on
// purpose, each for its reason (docs/rationale.md, "The OpenAPI document
// and the tools that read it"); any other warning fails the test.
var keptWarnings = map[string]string{
	// The project names no licence; the document does not invent one.
	"info-license #/info": "no licence is chosen",
	// GET /v1/receipts without an id is documented so that a client
	// learns its 400 missing_request_id; it has no success to describe.
	"operation-2xx-response #/paths/~1v1~1receipts/get/responses": "an error-only operation",
	// UnroutedError is the answer to every path and method the document
	// does not list; OpenAPI has nowhere to attach such an answer, and the
	// contract tests read it from components.
	"no-unused-components #/components/schemas/UnroutedError": "the answer to what is not listed",
}

func TestOpenAPIPassesRedoclyLint(t *testing.T) {
	t.Parallel()
	doc, err := filepath.Abs(openAPIPath)
	require.NoError(t, err)
	res := nodetest.Command(t, 2*time.Minute, map[string]string{"REDOCLY_TELEMETRY": "off", "REDOCLY_SUPPRESS_UPDATE_NOTICE": "true"},
		nodetest.Bin(t, "redocly"), "lint", doc, "--extends=recommended", "--format=json")
	var report struct {
		Problems []struct {
			RuleID   string `json:"ruleId"`
			Severity string `json:"severity"`
			Message  string `json:"message"`
			Location []struct {
				Pointer string `json:"pointer"`
			} `json:"location"`
		} `json:"problems"`
	}
	require.NoError(t, json.Unmarshal(res.Stdout, &report), "redocly lint exited %d:\n%s\n%s", res.ExitCode, res.Stdout, res.Stderr)
	var unexpected, kept []string
	for _, p := range report.Problems {
		where := ""
		if len(p.Location) > 0 {
			where = p.Location[0].Pointer
		}
		id := p.RuleID + " " + where
		if _, ok := keptWarnings[id]; ok && p.Severity == "warn" {
			kept = append(kept, id)
			continue
		}
		unexpected = append(unexpected, p.Severity+" "+id+": "+p.Message)
	}
	require.Empty(t, unexpected, "redocly lint --extends=recommended")
	require.Zero(t, res.ExitCode, "%s", res.Stderr)
	// A kept warning that no longer occurs is taken off the list.
	for id := range keptWarnings {
		require.True(t, slices.Contains(kept, id), "%s no longer occurs: take it off keptWarnings", id)
	}
}

func TestOpenAPIGeneratesTypeScriptTypes(t *testing.T) {
	t.Parallel()
	doc, err := filepath.Abs(openAPIPath)
	require.NoError(t, err)
	out := filepath.Join(t.TempDir(), "conclave.d.ts")
	res := nodetest.Command(t, 2*time.Minute, nil, nodetest.Bin(t, "openapi-typescript"), doc, "-o", out)
	require.Zero(t, res.ExitCode, "openapi-typescript:\n%s\n%s", res.Stdout, res.Stderr)
	types, err := os.ReadFile(out)
	require.NoError(t, err)
	// The mode spec's parts are types of their own, reachable from paths.
	for _, want := range []string{`"/v1/chat/completions"`, "ModeSpec:", "ModeSpecSeat:", "ModeSpecTier:", `"/v1/modes/validate"`} {
		require.True(t, strings.Contains(string(types), want), "the generated types have %s", want)
	}
}
