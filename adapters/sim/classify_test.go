package sim

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
)

// classifierSystem is the shape of Conclave's classifier prompt
// (core/deliberate): JSON with a score and a task type.
const classifierSystem = `You classify how hard a question is. Reply with one JSON object only:
{"score":0.0,"depth":"light|medium|deep","task_type":"…","hallucination_risk":"low|medium|high"}`

// A classifier prompt gets the heuristic's classification of the
// conversation it carries, in every wire format, with or without JSON mode
// (the prompt asks for JSON itself).
func TestClassifierPrompt(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	conversation := []core.Message{
		{Role: core.RoleUser, Content: "We run billing as one service."},
		{Role: core.RoleAssistant, Content: "Noted."},
		{Role: core.RoleUser, Content: "Should we split it into microservices?\nCompare the risks and recommend a strategy."},
	}
	user := "Classify this conversation's last question.\n\n"
	for _, m := range conversation {
		user += m.Role + ": " + m.Content + "\n"
	}
	want, err := classify.Heuristic{}.Classify(context.Background(), conversation)
	require.NoError(t, err)
	for _, f := range formats {
		t.Run(f, func(t *testing.T) {
			t.Parallel()
			a := b.do(t, ask{format: f, model: "swift", system: classifierSystem, user: user, jsonMode: f == "openai" || f == "gemini"})
			require.Equal(t, http.StatusOK, a.status)
			var got classification
			require.NoError(t, json.Unmarshal([]byte(a.text), &got), a.text)
			require.Equal(t, classification{Score: want.Score, Depth: want.Depth, TaskType: want.TaskType,
				HallucinationRisk: want.HallucinationRisk}, got)
			require.Equal(t, core.DepthDeep, got.Depth)
			require.Equal(t, classify.TaskJudgement, got.TaskType)
		})
	}
}

func TestConversationIn(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		text string
		want []core.Message
	}{
		{"no role lines: one user message", "What is 2 + 2?", []core.Message{{Role: core.RoleUser, Content: "What is 2 + 2?"}}},
		{"instruction then messages", "Classify this.\n\nsystem: Be brief.\nuser: Hi\nassistant: Hello\nuser: Why?\n", []core.Message{
			{Role: core.RoleSystem, Content: "Be brief."}, {Role: core.RoleUser, Content: "Hi"},
			{Role: core.RoleAssistant, Content: "Hello"}, {Role: core.RoleUser, Content: "Why?"},
		}},
		{"a message over several lines", "user: first line\nsecond line\n\nthird\n", []core.Message{
			{Role: core.RoleUser, Content: "first line\nsecond line\n\nthird"},
		}},
		{"a role needs its colon and space", "users: many\nuser:none\n", []core.Message{
			{Role: core.RoleUser, Content: "users: many\nuser:none\n"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, conversationIn(tt.text))
		})
	}
}
