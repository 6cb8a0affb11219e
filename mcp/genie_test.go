package mcp_test

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// askAnswer is ask_genie's structured result, as far as these tests read it.
type askAnswer struct {
	Answer string `json:"answer"`
	Facts  struct {
		Mode            string           `json:"mode"`
		ConfidenceLevel float64          `json:"confidence_level"`
		Runs            []map[string]any `json:"runs"`
		NextTest        struct {
			Buckets map[string]int `json:"buckets"`
			Reason  string         `json:"reason"`
		} `json:"next_test"`
		Readiness struct {
			Ready   bool     `json:"ready"`
			Missing []string `json:"missing"`
		} `json:"certification_readiness"`
	} `json:"facts"`
	QuoteUnavailable string `json:"quote_unavailable"`
	Regenerated      bool   `json:"regenerated"`
}

// ask_genie over the tool server: an answer with its facts (a first test
// run of 20 a bucket recommended for a mode never tested; readiness says
// why it cannot be certified), no quote where the deployment keeps no
// chat history; every refusal in the self-answered shape; arguments that
// are neither a question nor a status are -32602.
func TestAskGenieTool(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	var ans askAnswer
	tb.succeed(t, tb.key, "ask_genie", map[string]any{"mode": "conclave-standard", "message": "What should I test first?"}, &ans)
	require.NotEmpty(t, ans.Answer)
	require.Equal(t, "conclave-standard", ans.Facts.Mode)
	require.Equal(t, 0.95, ans.Facts.ConfidenceLevel)
	require.Empty(t, ans.Facts.Runs)
	require.Equal(t, map[string]int{"light": 20, "medium": 20, "hard": 20}, ans.Facts.NextTest.Buckets)
	require.False(t, ans.Facts.Readiness.Ready)
	require.NotEmpty(t, ans.Facts.Readiness.Missing)
	require.Equal(t, "chat_history_required", ans.QuoteUnavailable)

	tb.fail(t, tb.key, "ask_genie", map[string]any{"mode": "conclave-standard@v2", "message": "hi"}, 400, "suffix_not_supported")
	tb.fail(t, tb.key, "ask_genie", map[string]any{"batch_id": "not-a-batch"}, 400, "invalid_batch_id")
	tb.fail(t, tb.key, "ask_genie", map[string]any{"batch_id": "00000000-0000-4000-8000-000000000000"}, 404, "batch_not_found")
	tb.fail(t, tb.key, "ask_genie", map[string]any{"mode": "no-such-mode", "message": "hi"}, 404, "model_not_found")
	tb.fail(t, tb.key, "ask_genie", map[string]any{"mode": "conclave-standard", "message": "Well? [[sim: error=server_error]]"},
		502, "genie_unavailable")
	for _, args := range []map[string]any{{}, {"mode": "conclave-standard"}, {"message": "hi"},
		{"batch_id": "00000000-0000-4000-8000-000000000000", "mode": "conclave-standard"}} {
		require.Contains(t, tb.invalidParams(t, tb.key, "ask_genie", args), "ask_genie needs mode and message, or batch_id alone")
	}
}
