package pairwise_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/protocoltest"
	"github.com/conclavehq/conclave/plugins/protocol/pairwise"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	protocoltest.Run(t, "pairwise", pairwise.New())
}

func FuzzScore(f *testing.F) {
	protocoltest.FuzzScore(f, "pairwise", pairwise.New())
}

// TestDocumentedPrompt keeps docs/judging.md, the contract the run executor
// and the simulated provider follow, in step with the prompt sent.
func TestDocumentedPrompt(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "judging.md"))
	require.NoError(t, err)
	plan, err := pairwise.New().Plan(t.Context(), &core.JudgeTask{Question: "Q?", Answers: []core.JudgeAnswer{{ID: "a", Text: "A."}, {ID: "b", Text: "B."}}})
	require.NoError(t, err)
	system := plan.Prompts[0].System
	require.True(t, strings.HasPrefix(system, pairwise.FirstLine+"\n"))
	require.Contains(t, string(doc), "```text\n"+system+"\n```", "docs/judging.md shows the system prompt exactly")
}
