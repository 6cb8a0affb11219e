package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/plugins/protocol/pairwise"
	"github.com/conclavehq/conclave/plugins/protocol/plurality"
)

// skillOf is a skill equal in every bucket.
func skillOf(v float64) *Skill { return &Skill{Light: v, Medium: v, Hard: v} }

// qualityConfig is a simulator whose answer engines have fixed skills and
// whose answers carry no noise, so that each answer's quality is its
// engine's skill: strong 1, and peer-a, peer-b and weak 0, each of its own
// family. judges adds judge engines, each of family "fam-judge" unless its
// name says "self", which makes it of peer-a's family.
func qualityConfig(judges map[string]JudgeConfig) Config {
	engines := map[string]EngineProfile{
		"strong": {Family: "fam-strong", Skill: skillOf(1), Style: "plain"},
		"peer-a": {Family: "fam-a", Skill: skillOf(0), Style: "balanced"},
		"peer-b": {Family: "fam-b", Skill: skillOf(0), Style: "structured"},
		"weak":   {Family: "fam-weak", Skill: skillOf(0), Style: "brisk"},
	}
	for name, j := range judges {
		family := "fam-judge"
		if strings.Contains(name, "self") {
			family = "fam-a"
		}
		engines[name] = EngineProfile{Family: family, Judge: &j}
	}
	return Config{TimeScale: 0.001, Seed: 3, Engines: engines, Quality: QualityConfig{AnswerNoise: -1}}
}

// each runs fn(i) for i in [0, n) on a few goroutines.
func each(n int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range 8 {
		wg.Go(func() {
			for i := range next {
				fn(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// trialQuestion is the i-th of a set of distinct open questions.
func trialQuestion(i int) string {
	return fmt.Sprintf("Should team %d move its nightly batch job to a streaming pipeline this quarter?", i)
}

// answers has each engine answer n trial questions: answers[engine][i].
func (b *testBundle) answers(t *testing.T, n int, engines ...string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range engines {
		out[e] = make([]string, n)
	}
	var mu sync.Mutex
	each(n*len(engines), func(k int) {
		e, i := engines[k%len(engines)], k/len(engines)
		a := b.do(t, ask{format: "openai", model: e, user: trialQuestion(i)})
		require.Equal(t, http.StatusOK, a.status)
		mu.Lock()
		out[e][i] = a.text
		mu.Unlock()
	})
	return out
}

// judgeCall asks judge, through format, the prompt the protocol plans for
// the answers, in the order given, and returns the judge's reply.
func (b *testBundle) judgeCall(t *testing.T, format, judge string, p core.Protocol, question string, answers ...string) (string, *core.JudgeTask) {
	t.Helper()
	task := &core.JudgeTask{Question: question, Seed: 1}
	for i, a := range answers {
		task.Answers = append(task.Answers, core.JudgeAnswer{ID: fmt.Sprintf("id%d", i), Text: a})
	}
	plan, err := p.Plan(t.Context(), task)
	require.NoError(t, err)
	require.Len(t, plan.Prompts, 1)
	pr := plan.Prompts[0]
	a := b.do(t, ask{format: format, model: judge, system: pr.System, user: pr.User, jsonMode: pr.JSONOutput})
	require.Equal(t, http.StatusOK, a.status, "%s", a.body)
	return a.text, task
}

// rate is a share of n trials with its binomial standard error.
type rate struct{ hits, n int }

func (r rate) p() float64 { return float64(r.hits) / float64(r.n) }

// requireNear checks that the observed rate is within four standard errors
// of want: the simulator draws from the model, so a rate further off means
// the model is not what it says.
func requireNear(t *testing.T, want float64, r rate, what string) {
	t.Helper()
	se := math.Sqrt(want * (1 - want) / float64(r.n))
	t.Logf("%s: %.3f (%d of %d), model %.3f ± %.3f", what, r.p(), r.hits, r.n, want, 4*se)
	require.InDeltaf(t, want, r.p(), 4*se, "%s: %d of %d", what, r.hits, r.n)
}

// TestQualityOfAnswers: each answer's quality is its engine's skill for
// the question's bucket and task type plus a deviation drawn from (seed,
// engine, question); the server remembers it by the answer's normalised
// text, so a judge finds it after whitespace and markdown changes.
func TestQualityOfAnswers(t *testing.T) {
	t.Parallel()
	cfg := Config{TimeScale: 0.001, Seed: 9, Engines: map[string]EngineProfile{
		"graded": {Family: "fam-g", Skill: &Skill{Light: 0.5, Medium: 0, Hard: -2,
			TaskType: map[string]float64{"judgement": 0.25}}},
	}}
	b := setup(t, cfg)
	const q = "Should we adopt a four-day work week for the support team?"
	a := b.do(t, ask{format: "openai", model: "graded", user: q})
	rec, ok := b.srv.Answer(a.text)
	require.True(t, ok)
	require.Equal(t, "graded", rec.Engine)
	require.Equal(t, "fam-g", rec.Family)
	require.Equal(t, KindAnswer, rec.Kind)
	require.Equal(t, "judgement", rec.TaskType)

	// The same question answered again, by a second server with the same
	// seed: the same quality. Another seed draws another deviation.
	again := answerOn(t, cfg, q)
	require.Equal(t, rec.Quality, again.Quality)
	other := cfg
	other.Seed = 10
	require.NotEqual(t, rec.Quality, answerOn(t, other, q).Quality)

	// Found through a host's normalisation of whitespace, case and markdown.
	mangled := "**" + strings.ToUpper(strings.Join(strings.Fields(a.text), "  \n ")) + "**"
	got, ok := b.srv.Answer(mangled)
	require.True(t, ok)
	require.Equal(t, rec, got)
	_, ok = b.srv.Answer("An answer the simulator never wrote.")
	require.False(t, ok)

	// Without noise the quality is the skill: the bucket directive picks
	// the bucket, the task type adds its offset. (One question per bucket:
	// a directive is stripped before the answer is written, so the same
	// question would get the same text.)
	cfg.Quality.AnswerNoise = -1
	quiet := setup(t, cfg)
	for bucket, want := range map[string]float64{BucketLight: 0.75, BucketMedium: 0.25, BucketHard: -1.75} {
		user := strings.Replace(q, "support team", bucket+" team", 1) + " [[sim: bucket=" + bucket + "]]"
		a := quiet.do(t, ask{format: "openai", model: "graded", user: user})
		rec, ok := quiet.srv.Answer(a.text)
		require.True(t, ok, bucket)
		require.Equal(t, bucket, rec.Bucket)
		require.InDelta(t, want, rec.Quality, 1e-12, bucket)
	}
	a = quiet.do(t, ask{format: "openai", model: "graded", user: "What is the capital of France?"})
	rec, ok = quiet.srv.Answer(a.text)
	require.True(t, ok)
	require.Equal(t, BucketLight, rec.Bucket, "the heuristic's depth when no directive names the bucket")
	require.Equal(t, 0.5, rec.Quality)

	// A directed answer is the test's, not the engine's: not remembered.
	a = quiet.do(t, ask{format: "openai", model: "graded", user: "Anything. [[sim: answer=Directed words.]]"})
	require.Equal(t, "Directed words.", a.text)
	_, ok = quiet.srv.Answer(a.text)
	require.False(t, ok)
}

// doMessages sends a conversation in the OpenAI format and returns the
// answer's text.
func (b *testBundle) doMessages(t *testing.T, model string, msgs []map[string]any) string {
	t.Helper()
	body, err := json.Marshal(map[string]any{"model": model, "messages": msgs})
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, b.srv.Endpoint("openai")+"/chat/completions", bytes.NewReader(body))
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+testKey)
	res, err := b.client.Do(req)
	require.NoError(t, err)
	a := readAnswer(t, "openai", res)
	require.Equal(t, http.StatusOK, a.status)
	return a.text
}

// answerOn has engine graded answer q on a fresh server and returns the
// answer's record.
func answerOn(t *testing.T, cfg Config, q string) AnswerRecord {
	t.Helper()
	b := setup(t, cfg)
	rec, ok := b.srv.Answer(b.do(t, ask{format: "anthropic", model: "graded", user: q}).text)
	require.True(t, ok)
	return rec
}

// synthesisUser is the user text of Conclave's synthesis prompt: the
// question, then the answers labelled A, B, ….
func synthesisUser(question string, answers []string) string {
	var user strings.Builder
	user.WriteString("Question:\n" + question + "\n")
	for i, a := range answers {
		fmt.Fprintf(&user, "\n[Answer %c]\n%s\n", 'A'+rune(i), a)
	}
	user.WriteString("\n[End of answers]\nWrite the one answer.")
	return user.String()
}

// TestSynthesisLift: a synthesis — the panel's one answer, written from the
// seats' answers under Conclave's synthesis prompt — is worth the mean of
// their qualities (or a blend with the best), plus the configured lift; a
// revision in a critique round keeps its engine's quality.
func TestSynthesisLift(t *testing.T) {
	t.Parallel()
	const q = "Should we keep the nightly batch job or move the pipeline to streaming?"
	synthesise := func(t *testing.T, quality QualityConfig) (synth AnswerRecord, seats []AnswerRecord) {
		cfg := qualityConfig(nil)
		cfg.Quality = quality
		cfg.Quality.AnswerNoise = 0.7
		b := setup(t, cfg)
		var texts []string
		for _, e := range []string{"strong", "peer-a", "weak"} {
			a := b.do(t, ask{format: "openai", model: e, user: q})
			rec, ok := b.srv.Answer(a.text)
			require.True(t, ok)
			seats = append(seats, rec)
			texts = append(texts, a.text)
		}
		a := b.do(t, ask{format: "anthropic", model: "peer-b", system: synthesisLead + " Combine what is correct.", user: synthesisUser(q, texts)})
		synth, ok := b.srv.Answer(a.text)
		require.True(t, ok)
		require.Equal(t, KindSynthesis, synth.Kind)
		require.Equal(t, "peer-b", synth.Engine)
		return synth, seats
	}
	mean := func(rs []AnswerRecord) (m, best float64) {
		best = math.Inf(-1)
		for _, r := range rs {
			m += r.Quality / float64(len(rs))
			best = max(best, r.Quality)
		}
		return m, best
	}

	flat, seats := synthesise(t, QualityConfig{})
	m, best := mean(seats)
	require.InDelta(t, m, flat.Quality, 1e-9, "no lift: the mean of the answers read")
	lifted, _ := synthesise(t, QualityConfig{SynthesisLift: 0.6})
	require.InDelta(t, m+0.6, lifted.Quality, 1e-9)
	require.Greater(t, lifted.Quality, flat.Quality)
	lost, _ := synthesise(t, QualityConfig{SynthesisLift: -0.6})
	require.InDelta(t, m-0.6, lost.Quality, 1e-9)
	blended, _ := synthesise(t, QualityConfig{SynthesisBest: 0.5, SynthesisLift: 0.1})
	require.InDelta(t, 0.5*best+0.5*m+0.1, blended.Quality, 1e-9)

	// A critique round: the seat sees its own answer and the others', and
	// its revision keeps the quality of its answer to the question.
	b := setup(t, qualityConfig(nil))
	own := b.do(t, ask{format: "openai", model: "strong", user: q})
	ownRec, ok := b.srv.Answer(own.text)
	require.True(t, ok)
	other := b.do(t, ask{format: "openai", model: "weak", user: q})
	rev := b.doMessages(t, "strong", []map[string]any{
		{"role": "user", "content": q},
		{"role": "assistant", "content": own.text},
		{"role": "user", "content": "Other members of the panel answered the same question. Their answers follow.\n\n[Answer A]\n" +
			other.text + "\n\n[End of answers]\nReconsider your answer in the light of theirs."},
	})
	revRec, ok := b.srv.Answer(rev)
	require.True(t, ok)
	require.Equal(t, KindRevision, revRec.Kind)
	require.Equal(t, ownRec.Quality, revRec.Quality)
}

// TestPairwiseJudges runs the simulated judges of the pairwise protocol over
// HTTP on many seeded trials and checks each configured effect against the
// model's own probabilities (JudgeConfig.Pairwise): the better answer wins
// more often than not in either position; position bias and self-family
// preference move the win rate by about the configured amount; a tie band
// yields ties; a malformed rate yields unreadable replies, and a retry of the
// same prompt gives the same verdict. Every readable reply scores with the
// protocol's Score.
func TestPairwiseJudges(t *testing.T) {
	t.Parallel()
	judges := map[string]JudgeConfig{
		"j-plain": {},
		"j-pos":   {PositionBias: 0.2},
		"j-self":  {SelfPreference: 0.2},
		"j-tie":   {TieBand: 0.5},
		"j-bad":   {MalformedRate: 0.25},
	}
	b := setup(t, qualityConfig(judges))
	const n = 200
	ans := b.answers(t, n, "strong", "peer-a", "peer-b", "weak")
	proto := pairwise.New()

	// verdicts asks judge about pairs (x, y) of trial i in both orders and
	// counts, per order, the verdicts in x's terms: x won, tie, y won,
	// unreadable.
	type tally struct{ xFirst, xSecond [4]int }
	verdicts := func(judge, x, y string) tally {
		var mu sync.Mutex
		var tl tally
		each(2*n, func(k int) {
			i, swapped := k/2, k%2 == 1
			first, second := ans[x][i], ans[y][i]
			if swapped {
				first, second = second, first
			}
			reply, task := b.judgeCall(t, "openai", judge, proto, trialQuestion(i), first, second)
			v, ok := pairwise.Read(reply)
			sc, err := proto.Score(t.Context(), &core.JudgeVerdicts{Task: *task, Verdicts: []core.JudgeVerdict{{PromptID: "pairwise", Judge: judge, Text: reply}}})
			require.NoError(t, err)
			col := 3
			if ok {
				require.Zero(t, sc.Unreadable, "a reply Read accepts, Score reads: %q", reply)
				col = map[string]int{"1": 0, "tie": 1, "2": 2}[v]
				if swapped && col != 1 {
					col = 2 - col
				}
			} else {
				require.Equal(t, 1, sc.Unreadable, "a reply Read refuses, Score counts unreadable: %q", reply)
			}
			mu.Lock()
			if swapped {
				tl.xSecond[col]++
			} else {
				tl.xFirst[col]++
			}
			mu.Unlock()
		})
		return tl
	}

	// The better answer (quality 1 against 0) wins in either position.
	plain := judges["j-plain"]
	win, _, _ := plain.Pairwise(1, 0, false, false)
	better := verdicts("j-plain", "strong", "weak")
	require.Zero(t, better.xFirst[3]+better.xSecond[3], "no malformed replies unless configured")
	require.Greater(t, better.xFirst[0], n/2, "the better answer shown first wins more often than not")
	require.Greater(t, better.xSecond[0], n/2, "the better answer shown second wins more often than not")
	requireNear(t, win, rate{better.xFirst[0], n}, "better first")
	requireNear(t, win, rate{better.xSecond[0], n}, "better second")

	// Equal answers: the first position wins half the time without bias,
	// 0.5 + PositionBias with it.
	even := verdicts("j-plain", "peer-a", "peer-b")
	firstWins := func(tl tally) rate { return rate{tl.xFirst[0] + tl.xSecond[2], 2 * n} }
	requireNear(t, 0.5, firstWins(even), "no position bias")
	biased := verdicts("j-pos", "peer-a", "peer-b")
	requireNear(t, 0.7, firstWins(biased), "position bias 0.2")
	shift := firstWins(biased).p() - firstWins(even).p()
	require.InDelta(t, 0.2, shift, 0.1, "position bias moves the first position's win rate by about 0.2")

	// A judge of peer-a's family prefers peer-a's answers by about 0.2,
	// whatever the position.
	aWins := func(tl tally) rate { return rate{tl.xFirst[0] + tl.xSecond[0], 2 * n} }
	requireNear(t, 0.5, aWins(even), "a judge of another family")
	self := verdicts("j-self", "peer-a", "peer-b")
	requireNear(t, 0.7, aWins(self), "self-family preference 0.2")
	require.InDelta(t, 0.2, aWins(self).p()-aWins(even).p(), 0.1, "self preference moves the win rate by about 0.2")

	// A tie band: ties at the model's rate, and only then.
	tieJudge := judges["j-tie"]
	_, tie, _ := tieJudge.Pairwise(0, 0, false, false)
	ties := verdicts("j-tie", "peer-a", "peer-b")
	requireNear(t, tie, rate{ties.xFirst[1] + ties.xSecond[1], 2 * n}, "ties within the band")
	require.Zero(t, even.xFirst[1]+even.xSecond[1], "no tie band, no ties")

	// Malformed replies at the configured rate; a retry draws again, and
	// every readable reply to one prompt gives one verdict.
	bad := verdicts("j-bad", "strong", "weak")
	requireNear(t, 0.25, rate{bad.xFirst[3] + bad.xSecond[3], 2 * n}, "malformed replies")
	for i := range 40 {
		seen := map[string]bool{}
		unreadable := 0
		for range 4 {
			reply, _ := b.judgeCall(t, "openai", "j-bad", proto, trialQuestion(i), ans["strong"][i], ans["weak"][i])
			if v, ok := pairwise.Read(reply); ok {
				seen[v] = true
			} else {
				unreadable++
			}
		}
		require.LessOrEqual(t, len(seen), 1, "trial %d: a retry changed the verdict", i)
		require.Less(t, unreadable, 4, "trial %d: four malformed replies in a row at rate 0.25", i)
	}
}

// TestPluralityJudges: a plurality judge votes by the softmax of the
// answers' qualities (JudgeConfig.Plurality), on Bedrock as the real judges
// are hosted; every vote scores with the protocol's Score; an answer the
// simulator never wrote counts as quality 0.
func TestPluralityJudges(t *testing.T) {
	t.Parallel()
	judges := map[string]JudgeConfig{"j-plain": {}}
	b := setup(t, qualityConfig(judges))
	const n = 150
	ans := b.answers(t, n, "strong", "peer-a")
	proto := plurality.New()
	var mu sync.Mutex
	votes := map[string]int{}
	each(3*n, func(k int) {
		i, rot := k/3, k%3
		texts := []string{ans["strong"][i], ans["peer-a"][i], fmt.Sprintf("An answer from elsewhere, number %d: it depends.", i)}
		names := []string{"strong", "peer-a", "unknown"}
		texts = append(texts[rot:], texts[:rot]...)
		names = append(names[rot:], names[:rot]...)
		reply, task := b.judgeCall(t, "bedrock", "j-plain", proto, trialQuestion(i), texts...)
		idx, ok := plurality.Read(reply, 3)
		require.True(t, ok, "unreadable vote %q", reply)
		sc, err := proto.Score(t.Context(), &core.JudgeVerdicts{Task: *task, Verdicts: []core.JudgeVerdict{{PromptID: "plurality", Judge: "j", Text: reply}}})
		require.NoError(t, err)
		require.Zero(t, sc.Unreadable)
		require.Equal(t, task.Answers[idx].ID, sc.Best)
		mu.Lock()
		votes[names[idx]]++
		mu.Unlock()
	})
	want := judges["j-plain"].Plurality([]float64{1, 0, 0}, nil)
	requireNear(t, want[0], rate{votes["strong"], 3 * n}, "the better answer's share")
	require.Greater(t, votes["strong"], votes["peer-a"])
	require.Greater(t, votes["strong"], votes["unknown"])
	require.InDelta(t, float64(votes["peer-a"]), float64(votes["unknown"]), 4*math.Sqrt(3*n*want[1]*(1-want[1]))*math.Sqrt2,
		"an answer never written is judged as quality 0, like peer-a's")
}

// TestJudgeVerdictsAreDeterministic: a verdict depends on the prompt, the
// judge engine and the seed — not on the server or the order of calls.
func TestJudgeVerdictsAreDeterministic(t *testing.T) {
	t.Parallel()
	cfg := qualityConfig(map[string]JudgeConfig{"j-1": {}, "j-2": {}})
	cfg.Judging = JudgeConfig{Noise: 3}
	one, two := setup(t, cfg), setup(t, cfg)
	a1 := one.answers(t, 30, "strong", "weak")
	a2 := two.answers(t, 30, "strong", "weak")
	require.Equal(t, a1, a2)
	differ := 0
	for i := range 30 {
		r1, _ := one.judgeCall(t, "openai", "j-1", pairwise.New(), trialQuestion(i), a1["strong"][i], a1["weak"][i])
		r2, _ := two.judgeCall(t, "anthropic", "j-1", pairwise.New(), trialQuestion(i), a2["strong"][i], a2["weak"][i])
		require.Equal(t, r1, r2)
		r3, _ := one.judgeCall(t, "openai", "j-2", pairwise.New(), trialQuestion(i), a1["strong"][i], a1["weak"][i])
		if r3 != r1 {
			differ++
		}
	}
	require.Positive(t, differ, "another judge engine draws its own noise")
}

func TestJudgeModelProbabilities(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		j           JudgeConfig
		q1, q2      float64
		own1, own2  bool
		first, tied float64
	}{
		{"equal, no bias", JudgeConfig{}, 0, 0, false, false, 0.5, 0},
		{"position bias", JudgeConfig{PositionBias: 0.2}, 0, 0, false, false, 0.7, 0},
		{"position bias against", JudgeConfig{PositionBias: -0.1, Noise: 2}, 0, 0, false, false, 0.4, 0},
		{"self preference, first", JudgeConfig{SelfPreference: 0.15}, 0, 0, true, false, 0.65, 0},
		{"self preference, second", JudgeConfig{SelfPreference: 0.15}, 0, 0, false, true, 0.35, 0},
		{"both own", JudgeConfig{SelfPreference: 0.15}, 0, 0, true, true, 0.5, 0},
		{"better by 1", JudgeConfig{}, 1, 0, false, false, 1 / (1 + math.Exp(-1)), 0},
		{"noise 2 halves the logit", JudgeConfig{Noise: 2}, 1, 0, false, false, 1 / (1 + math.Exp(-0.5)), 0},
		{"tie band", JudgeConfig{TieBand: 0.5}, 0, 0, false, false, 1 / (1 + math.Exp(0.5)), 1 - 2/(1+math.Exp(0.5))},
	}
	for _, c := range cases {
		first, tie, second := c.j.Pairwise(c.q1, c.q2, c.own1, c.own2)
		require.InDelta(t, c.first, first, 1e-12, c.name)
		require.InDelta(t, c.tied, tie, 1e-12, c.name)
		require.InDelta(t, 1, first+tie+second, 1e-12, c.name)
	}
	// Two answers: the plurality vote is the pairwise model without ties.
	j := JudgeConfig{PositionBias: 0.1, SelfPreference: 0.05, Noise: 1.5}
	first, _, _ := j.Pairwise(0.3, 0.7, false, true)
	p := j.Plurality([]float64{0.3, 0.7}, []bool{false, true})
	require.InDelta(t, first, p[0], 1e-12)
	p = JudgeConfig{}.Plurality([]float64{1, 0, 0}, nil)
	require.InDelta(t, math.E/(math.E+2), p[0], 1e-12)
}

func TestQualityConfigIsValidated(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		cfg  Config
		want string
	}{
		"position bias":  {Config{Judging: JudgeConfig{PositionBias: 0.5}}, "Judging.PositionBias"},
		"self":           {Config{Judging: JudgeConfig{SelfPreference: -0.6}}, "Judging.SelfPreference"},
		"noise":          {Config{Judging: JudgeConfig{Noise: -1}}, "Judging.Noise"},
		"tie band":       {Config{Judging: JudgeConfig{TieBand: math.NaN()}}, "Judging.TieBand"},
		"malformed":      {Config{Engines: map[string]EngineProfile{"x": {Judge: &JudgeConfig{MalformedRate: 1.5}}}}, `Engines["x"]: Judge.MalformedRate`},
		"task type":      {Config{Engines: map[string]EngineProfile{"x": {Skill: &Skill{TaskType: map[string]float64{"poetry": 1}}}}}, `unknown task type "poetry"`},
		"skill":          {Config{Engines: map[string]EngineProfile{"x": {Skill: &Skill{Hard: math.Inf(-1)}}}}, "Skill"},
		"synthesis best": {Config{Quality: QualityConfig{SynthesisBest: 2}}, "Quality.SynthesisBest"},
		"lift":           {Config{Quality: QualityConfig{SynthesisLift: math.NaN()}}, "Quality.SynthesisLift"},
	}
	for name, c := range cases {
		_, err := Start(t.Context(), c.cfg)
		require.ErrorContains(t, err, c.want, name)
	}
}

// TestBuiltinEngineFamilies: the built-in engines' families match the
// built-in configuration's (internal/config/default.yaml), which the
// in-process wiring passes on anyway; the judges' three are distinct.
func TestBuiltinEngineFamilies(t *testing.T) {
	t.Parallel()
	want := map[string]string{
		"swift": "sim-openai", "atlas": "sim-openai", "atlas-frontier": "sim-openai",
		"sonnet": "sim-anthropic", "opus": "sim-anthropic", "gemini-flash": "sim-google", "gemini-pro": "sim-google",
		"nova-pro": "sim-amazon", "mistral-large": "sim-mistral", "llama4-maverick": "sim-meta",
	}
	require.Len(t, builtinEngines, len(want))
	for model, family := range want {
		p := DefaultEngineProfile(ProfileQuick, model)
		require.Equal(t, family, p.Family, model)
		require.NotNil(t, p.Skill, model)
		require.GreaterOrEqual(t, p.Skill.Light, p.Skill.Hard, "%s: hard questions are no easier than light ones", model)
	}
	require.Empty(t, DefaultEngineProfile(ProfileQuick, "someone-else").Family)
}
