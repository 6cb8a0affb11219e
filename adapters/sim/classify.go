package sim

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/classify"
)

// asksToClassify recognises a classifier prompt: one whose JSON reply must
// hold a difficulty "score" and a "task_type", as Conclave's classifier
// prompt asks (`{"score":0.0,"depth":…,"task_type":…,…}`). A judge prompt
// asks for "scores", never for a task type.
func asksToClassify(text string) bool {
	return strings.Contains(text, `"score"`) && strings.Contains(text, `"task_type"`)
}

// classification is the JSON a classifier prompt asks for.
type classification struct {
	Score             float64    `json:"score"`
	Depth             core.Depth `json:"depth"`
	TaskType          string     `json:"task_type"`
	HallucinationRisk string     `json:"hallucination_risk"`
}

// classifyJSON answers a classifier prompt whose conversation is in user:
// the deterministic heuristic's classification of it (core/classify), so a
// simulated classifier engine scores on the heuristic's scale and exactly
// as the heuristic would — a simulated deployment's lanes and surcharges
// do not depend on which of the two classified. The conversation is
// classified as sent, directives included, as Conclave's fallback sees it.
func classifyJSON(ctx context.Context, user string) string {
	res, err := classify.Heuristic{}.Classify(ctx, conversationIn(user))
	if err != nil { // the heuristic never fails; answer as a model that could not tell would
		res = &classify.Result{Score: 0.5, Depth: classify.DepthFor(0.5), TaskType: classify.TaskOpenQuestion, HallucinationRisk: "medium"}
	}
	b, _ := json.Marshal(classification{Score: res.Score, Depth: res.Depth, TaskType: res.TaskType, HallucinationRisk: res.HallucinationRisk})
	return string(b)
}

// conversationIn reads the conversation a classifier prompt carries, one
// message a line opening "user: ", "assistant: " or "system: " (the lines
// after it, up to the next such line, continue the message); what precedes
// the first is the prompt's instruction. Text with no such line is one user
// message.
func conversationIn(text string) []core.Message {
	var msgs []core.Message
	for line := range strings.Lines(text) {
		role, content, ok := roleLine(line)
		switch {
		case ok:
			msgs = append(msgs, core.Message{Role: role, Content: content})
		case len(msgs) > 0:
			msgs[len(msgs)-1].Content += line
		}
	}
	if len(msgs) == 0 {
		return []core.Message{{Role: core.RoleUser, Content: text}}
	}
	for i := range msgs {
		msgs[i].Content = strings.TrimRight(msgs[i].Content, "\n")
	}
	return msgs
}

// roleLine splits a line "<role>: <content>" for the three chat roles.
func roleLine(line string) (role, content string, ok bool) {
	for _, r := range []string{core.RoleUser, core.RoleAssistant, core.RoleSystem} {
		if rest, found := strings.CutPrefix(line, r+": "); found {
			return r, rest, true
		}
	}
	return "", "", false
}
