package sim

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSolve(t *testing.T) {
	t.Parallel()
	cases := []struct {
		question string
		key      string // "" means not solvable
	}{
		{"What is 17 * 23?", "391"},
		{"what is (2 + 3) * 4?", "20"},
		{"Compute 2.5 / 0.5.", "5"},
		{"What is 0.1 + 0.2?", "0.3"},
		{"What is 10 / 4?", "2.5"},
		{"What is 1/3?", "0.3333333333"},
		{"What is 3 - 5?", "-2"},
		{"What is -4 * -2?", "8"},
		{"What is 2^10?", "1024"},
		{"What is 2 ** 3 ** 2?", "512"},
		{"Calculate 1,234 + 766", "2000"},
		{"What is 12 times 12?", "144"},
		{"What is 7 multiplied by 6?", "42"},
		{"What is 100 divided by 8?", "12.5"},
		{"What is 6 x 7?", "42"},
		{"What is 15% of 80?", "12"},
		{"17*23", "391"},
		{"How much is 3 + 4 + 5?", "12"},
		{"What is 5 / 0?", "undefined"},
		{"Is 7 greater than 3?", "yes"},
		{"Is 2 larger than 9?", "no"},
		{"Is 3 * 4 less than 13?", "yes"},
		{"Is 0.5 equal to 1/2?", "yes"},
		{"Is 10 >= 11?", "no"},
		{"Which is larger, 0.9 or 0.11?", "0.9"},
		{"Which is smaller: 3/4 or 2/3?", "0.6666666667"},
		{"All cats are mammals. Tom is a cat. Is Tom a mammal?", "yes"},
		{"All men are mortal. Socrates is a man. Is Socrates mortal?", "yes"},
		{"All bloops are razzies. All razzies are lazzies. Zig is a bloop. Is Zig a lazzie?", "yes"},
		{"No reptiles are mammals. Rex is a reptile. Is Rex a mammal?", "no"},
		{"Some birds are pets. Tweety is a bird. Is Tweety a pet?", "undetermined"},
		{"All squares are rectangles. All rectangles are polygons. Are all squares polygons?", "yes"},
		{"All dogs are animals. Are all animals dogs?", "undetermined"},
		{"What is the capital of France?", ""},
		{"Should we rewrite the billing service in Rust?", ""},
		{"Rate each answer from 0-1 and explain.", ""},
		{"The meeting is on 2024-05-01; who should attend?", ""},
	}
	for _, c := range cases {
		sol, ok := solve(c.question)
		if c.key == "" {
			require.False(t, ok, "%q solved as %q", c.question, sol.key)
			continue
		}
		require.True(t, ok, "%q not solved", c.question)
		require.Equal(t, c.key, sol.key, c.question)
		require.Equal(t, c.key, conclusionKey(sol.statement), "the statement of %q keeps its key findable", c.question)
		for _, style := range styles {
			require.Equal(t, c.key, conclusionKey(styleSolution(style, sol)), "style %s of %q", style, c.question)
		}
	}
}

func TestAnswersSolveOverHTTP(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	for _, f := range formats {
		for _, model := range []string{"swift", "atlas", "atlas-frontier", "sonnet", "opus", "gemini-flash", "gemini-pro", "some-other-model"} {
			a := b.do(t, ask{format: f, model: model, user: "What is (12 + 8) * 3.5?"})
			require.Equal(t, http.StatusOK, a.status)
			require.Equal(t, "70", conclusionKey(a.text), "%s/%s: %q", f, model, a.text)
			a = b.do(t, ask{format: f, model: model, user: "All whales are mammals. Moby is a whale. Is Moby a mammal?"})
			require.True(t, strings.HasPrefix(strings.ToLower(a.text), "yes"), "%s/%s: %q", f, model, a.text)
		}
	}
}

func TestAnswersAreDeterministic(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01, Seed: 42})
	other := setup(t, Config{TimeScale: 0.01, Seed: 43})
	q := ask{format: "anthropic", model: "sonnet", system: "You are on a panel.", user: "Should a small team adopt microservices or a monolith?"}
	first, second := b.do(t, q), b.do(t, q)
	require.Equal(t, first.text, second.text)
	require.Equal(t, first.inTokens, second.inTokens)
	require.Equal(t, first.outTokens, second.outTokens)
	require.Equal(t, TokenCount(q.system+q.user), first.inTokens)
	require.Equal(t, TokenCount(first.text), first.outTokens)

	q.model = "opus"
	require.NotEqual(t, first.text, b.do(t, q).text, "another engine writes differently")
	q.model = "sonnet"
	require.NotEqual(t, first.text, other.do(t, q).text, "another seed writes differently")
	q.format = "openai"
	require.Equal(t, first.text, b.do(t, q).text, "the wire format does not change the answer")
}

func TestEnginesSometimesDisagree(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	questions := []string{
		"Should we adopt a four-day work week?", "Is remote work better for junior engineers?",
		"Should a startup use Kubernetes or plain VMs?", "Should we open-source our SDK?",
		"Is it worth rewriting the app in Rust?", "Should we raise prices this year?",
		"Should the API use REST or GraphQL?", "Is pair programming worth the cost?",
		"Should we hire generalists or specialists?", "Should we build or buy our billing system?",
		"Is a monorepo better than many repos?", "Should the team adopt trunk-based development?",
		"How should we plan the migration to the new database?", "What matters most when choosing a vendor?",
	}
	split, agreed := 0, 0
	for _, q := range questions {
		keys := map[string]bool{}
		for _, m := range []string{"atlas", "sonnet", "gemini-flash"} {
			a := b.do(t, ask{format: "openai", model: m, user: q})
			require.Equal(t, http.StatusOK, a.status)
			k := conclusionKey(a.text)
			require.NotEmpty(t, k, a.text)
			keys[k] = true
		}
		if len(keys) > 1 {
			split++
		} else {
			agreed++
		}
	}
	require.Positive(t, split, "some panels disagree")
	require.Positive(t, agreed, "some panels agree")
}

func TestJudgeJSON(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	judgePrompt := func(question string, answers map[string]string, order ...string) string {
		var sb strings.Builder
		sb.WriteString("You are the judge of a panel. Read the question and the anonymised answers.\n\nQuestion: " + question + "\n\n")
		for _, id := range order {
			sb.WriteString("[Answer " + id + "]\n" + answers[id] + "\n\n")
		}
		sb.WriteString("Respond with a JSON object: scores 0-1 per answer, best, divergence, converged, factual_conflict, contested_passage.")
		return sb.String()
	}
	read := func(a answer) verdict {
		require.Equal(t, http.StatusOK, a.status, "%s", a.body)
		var v verdict
		require.NoError(t, json.Unmarshal([]byte(a.text), &v), a.text)
		return v
	}

	t.Run("arithmetic with a wrong answer", func(t *testing.T) {
		t.Parallel()
		p := judgePrompt("What is 17 * 23?", map[string]string{"Q7": "17 * 23 = 391.", "K2": "I believe it is 401.", "M4": "391"}, "Q7", "K2", "M4")
		for _, f := range formats {
			v := read(b.do(t, ask{format: f, model: "sonnet", user: p, jsonMode: f == "openai" || f == "gemini"}))
			require.Len(t, v.Scores, 3)
			require.Greater(t, v.Scores["Q7"], 0.7)
			require.Greater(t, v.Scores["M4"], 0.7)
			require.Less(t, v.Scores["K2"], 0.35)
			require.Contains(t, []string{"Q7", "M4"}, v.Best)
			require.False(t, v.Converged)
			require.True(t, v.FactualConflict)
			require.Greater(t, v.Divergence, 0.3)
			require.NotNil(t, v.ContestedPassage)
			require.Equal(t, "K2", v.ContestedPassage.Answer)
			require.Contains(t, "I believe it is 401.", v.ContestedPassage.Quote, "the quote is verbatim")
			require.NotEmpty(t, v.ContestedPassage.Why)
		}
	})
	t.Run("agreement converges", func(t *testing.T) {
		t.Parallel()
		p := judgePrompt("Is 7 greater than 3?", map[string]string{"A": "Yes — 7 is greater than 3.", "B": "Yes.", "C": "Yes, seven exceeds three."}, "A", "B", "C")
		v := read(b.do(t, ask{format: "openai", model: "opus", user: p, jsonMode: true}))
		require.True(t, v.Converged)
		require.False(t, v.FactualConflict)
		require.Nil(t, v.ContestedPassage)
		require.Less(t, v.Divergence, 0.3)
		require.Contains(t, v.Scores, v.Best)
		require.Contains(t, b.do(t, ask{format: "openai", model: "opus", user: p, jsonMode: true}).text, `"contested_passage":null`)
	})
	t.Run("open question with a dissenter", func(t *testing.T) {
		t.Parallel()
		p := judgePrompt("Should we use Postgres or MySQL?", map[string]string{
			"x1": "Postgres has better extensions.\n\nConclusion: postgres.",
			"x2": "Its JSON support wins.\n\nConclusion: postgres.",
			"x3": "MySQL is simpler to run.\n\nConclusion: mysql.",
		}, "x1", "x2", "x3")
		v := read(b.do(t, ask{format: "gemini", model: "gemini-pro", user: p, jsonMode: true}))
		require.False(t, v.Converged)
		require.False(t, v.FactualConflict, "a difference of opinion is not a factual conflict")
		require.Equal(t, "x3", v.ContestedPassage.Answer)
		require.Equal(t, "Conclusion: mysql.", v.ContestedPassage.Quote)
		require.Less(t, v.Scores["x3"], max(v.Scores["x1"], v.Scores["x2"]))
		require.NotEqual(t, "x3", v.Best)
	})
	t.Run("answer blocks without a request for JSON are a revision", func(t *testing.T) {
		t.Parallel()
		p := "Question: Should we use Postgres or MySQL?\n\n[Answer A]\nConclusion: postgres.\n\n[Answer B]\nConclusion: postgres.\n\nWrite the final answer for the user."
		a := b.do(t, ask{format: "anthropic", model: "atlas", user: p})
		require.False(t, json.Valid([]byte(a.text)))
		require.NotEmpty(t, conclusionKey(a.text))
	})
}

func TestJSONMode(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.01})
	for _, c := range []ask{
		{format: "openai", model: "atlas", user: "Name a good first programming language.", jsonMode: true},
		{format: "gemini", model: "gemini-flash", user: "What is 6 * 7?", jsonMode: true},
		{format: "anthropic", model: "sonnet", user: "What is 6 * 7? Respond with JSON only."},
		{format: "bedrock", model: "atlas", user: "Reply in JSON: should we ship on Friday?"},
	} {
		a := b.do(t, c)
		require.Equal(t, http.StatusOK, a.status)
		var v struct {
			Answer string `json:"answer"`
		}
		require.NoError(t, json.Unmarshal([]byte(a.text), &v), "%s: %q", c.format, a.text)
		require.NotEmpty(t, v.Answer)
		if strings.Contains(c.user, "6 * 7") {
			require.Equal(t, "42", conclusionKey(v.Answer))
		}
	}
	a := b.do(t, ask{format: "openai", model: "atlas", user: "How do I parse JSON in Go?"})
	require.False(t, json.Valid([]byte(a.text)), "mentioning JSON is not asking for it")
}

func TestConclusionKey(t *testing.T) {
	t.Parallel()
	cases := map[string]string{
		"17 * 23 = 391.":                              "391",
		"**Yes.** It follows.":                        "yes",
		"No — the premises rule it out.":              "no",
		"Cannot be determined from the premises":      "undetermined",
		"Blah blah.\n\nConclusion: Postgres.":         "postgres",
		"## Conclusion: the deciding factor is cost.": "the deciding factor is cost",
		"I could not say.":                            "",
		"The answer is -2.5":                          "-2.5",
	}
	for text, want := range cases {
		require.Equal(t, want, conclusionKey(text), text)
	}
}

func TestAnswerBlocks(t *testing.T) {
	t.Parallel()
	head, blocks := answerBlocks("Intro\nQuestion: What is 2+2?\n\n[Answer A] 4\n[Answer B-2]\nfour\nstill B\n\nRespond with JSON, scores 0-1.")
	require.Equal(t, "What is 2+2?", questionIn(head))
	require.Equal(t, []answerBlock{{id: "A", text: "4"}, {id: "B-2", text: "four\nstill B"}}, blocks)
}

func FuzzJudge(f *testing.F) {
	f.Add("Question: What is 2+2?\n\n[Answer A]\n4\n\n[Answer B]\nfive\n\nRespond with JSON.")
	f.Add("[Answer x] Conclusion: yes.\n[Answer y]\n[Answer z]   \n---")
	f.Fuzz(func(t *testing.T, prompt string) {
		head, blocks := answerBlocks(prompt)
		if len(blocks) == 0 {
			return
		}
		var v verdict
		require.NoError(t, json.Unmarshal([]byte(judgeJSON(questionIn(head), blocks, 1, "judge")), &v))
		require.Contains(t, v.Scores, v.Best)
		for id, s := range v.Scores {
			require.NotEmpty(t, id)
			require.True(t, s >= 0 && s <= 1, "score %v", s)
		}
		require.True(t, v.Divergence >= 0 && v.Divergence <= 1)
	})
}
