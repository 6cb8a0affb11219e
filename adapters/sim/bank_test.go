package sim

import (
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/bank"
	"github.com/conclavehq/conclave/plugins/protocol/pairwise"
)

// verifiableItems are the bank's verifiable items of a bucket.
func verifiableItems(t *testing.T, b bank.Bucket) []bank.Item {
	t.Helper()
	pool, err := bank.Pool(bank.Version, b)
	require.NoError(t, err)
	var out []bank.Item
	for _, it := range pool {
		if it.Kind == bank.Verifiable {
			out = append(out, it)
		}
	}
	return out
}

// answerItems has engine answer every item over HTTP and returns the
// answers and their records, in the items' order. Each answer is checked
// to be what its record says: right by the item's checker exactly when
// the record is Correct, else one of the item's wrong answers, on the
// answer line the question asks for.
func (b *testBundle) answerItems(t *testing.T, engine string, items []bank.Item) ([]string, []AnswerRecord) {
	t.Helper()
	texts := make([]string, len(items))
	recs := make([]AnswerRecord, len(items))
	each(len(items), func(i int) {
		a := b.do(t, ask{format: "openai", model: engine, user: items[i].Question})
		require.Equal(t, http.StatusOK, a.status)
		texts[i] = a.text
	})
	for i, it := range items {
		rec, ok := b.srv.Answer(texts[i])
		require.True(t, ok, it.ID)
		recs[i] = rec
		require.True(t, rec.Verifiable, it.ID)
		require.Equal(t, string(it.Bucket), rec.Bucket, "%s: the bank's bucket, not the heuristic's", it.ID)
		require.Equal(t, rec.Correct, it.Check(texts[i]), "%s: %q", it.ID, texts[i])
		_, final, ok := strings.Cut(texts[i], "\nAnswer: ")
		require.True(t, ok, "%s: %q has no answer line", it.ID, texts[i])
		if !rec.Correct {
			require.Contains(t, it.WrongAnswers(), final, it.ID)
		} else {
			require.Equal(t, it.Answer, final, it.ID)
		}
	}
	return texts, recs
}

// TestVerifiableAnswersFollowQuality: an answer to a verifiable bank item
// states the reference answer with probability σ(quality − difficulty of
// the item's bucket), and otherwise one of the item's plausible wrong
// answers, which its checker refuses: a stronger engine is right more
// often. The same server answers the same way again.
func TestVerifiableAnswersFollowQuality(t *testing.T) {
	t.Parallel()
	diff := Difficulty{Light: -1, Medium: 0, Hard: 1}
	cfg := qualityConfig(nil)
	cfg.Quality.Difficulty = &diff
	b := setup(t, cfg)
	items := verifiableItems(t, bank.Medium)
	_, strong := b.answerItems(t, "strong", items)
	_, weak := b.answerItems(t, "weak", items)
	right := func(recs []AnswerRecord) rate {
		r := rate{n: len(recs)}
		for _, rec := range recs {
			if rec.Correct {
				r.hits++
			}
		}
		return r
	}
	pStrong, pWeak := cfg.Quality.PCorrect(1, BucketMedium), cfg.Quality.PCorrect(0, BucketMedium)
	require.InDelta(t, 1/(1+math.Exp(-1)), pStrong, 1e-12)
	require.InDelta(t, 0.5, pWeak, 1e-12)
	requireNear(t, pStrong, right(strong), "strong (quality 1, difficulty 0)")
	requireNear(t, pWeak, right(weak), "weak (quality 0, difficulty 0)")
	require.Greater(t, right(strong).hits, right(weak).hits)

	hard := verifiableItems(t, bank.Hard)
	_, strongHard := b.answerItems(t, "strong", hard)
	requireNear(t, cfg.Quality.PCorrect(1, BucketHard), right(strongHard), "strong on hard items (difficulty 1)")

	again := setup(t, cfg)
	for _, it := range items[:20] {
		x := b.do(t, ask{format: "openai", model: "strong", user: it.Question})
		y := again.do(t, ask{format: "anthropic", model: "strong", user: it.Question})
		require.Equal(t, x.text, y.text, "deterministic given the seed: %s", it.ID)
	}
}

// TestVerifiableSynthesisFollowsItsLift: the panel's synthesis of
// answers to a verifiable item is right with the probability its own
// quality gives — the seats' mean plus the lift — so a positive lift
// makes the panel right more often than its seats; a critique round's
// revision stays right or wrong with its answer.
func TestVerifiableSynthesisFollowsItsLift(t *testing.T) {
	t.Parallel()
	items := verifiableItems(t, bank.Medium)
	correct := func(lift float64) (synth rate, seats rate) {
		cfg := qualityConfig(nil)
		cfg.Quality.Difficulty = &Difficulty{}
		cfg.Quality.SynthesisLift = lift
		b := setup(t, cfg)
		var mu sync.Mutex
		each(len(items), func(i int) {
			q := items[i].Question
			var texts []string
			hits := 0
			for _, e := range []string{"peer-a", "peer-b"} {
				a := b.do(t, ask{format: "openai", model: e, user: q})
				rec, ok := b.srv.Answer(a.text)
				require.True(t, ok)
				if rec.Correct {
					hits++
				}
				texts = append(texts, a.text)
			}
			a := b.do(t, ask{format: "openai", model: "weak", system: synthesisLead + " Combine what is correct.", user: synthesisUser(q, texts)})
			rec, ok := b.srv.Answer(a.text)
			require.True(t, ok)
			require.Equal(t, KindSynthesis, rec.Kind)
			require.True(t, rec.Verifiable)
			require.Equal(t, rec.Correct, items[i].Check(a.text), a.text)
			mu.Lock()
			defer mu.Unlock()
			seats.n += 2
			seats.hits += hits
			synth.n++
			if rec.Correct {
				synth.hits++
			}
		})
		return synth, seats
	}
	flat, seats := correct(0)
	requireNear(t, 0.5, flat, "a synthesis at the seats' quality, no lift")
	requireNear(t, 0.5, seats, "the seats, quality 0 against difficulty 0")
	lifted, _ := correct(2)
	requireNear(t, QualityConfig{Difficulty: &Difficulty{}}.PCorrect(2, BucketMedium), lifted, "a synthesis lifted by 2")
	require.Greater(t, lifted.hits, flat.hits)

	// A revision keeps its answer's quality and its correctness.
	b := setup(t, qualityConfig(nil))
	for _, it := range items[:12] {
		own := b.do(t, ask{format: "openai", model: "peer-a", user: it.Question})
		other := b.do(t, ask{format: "openai", model: "peer-b", user: it.Question})
		rev := b.doMessages(t, "peer-a", []map[string]any{
			{"role": "user", "content": it.Question},
			{"role": "assistant", "content": own.text},
			{"role": "user", "content": "Other members of the panel answered the same question. Their answers follow.\n\n[Answer A]\n" +
				other.text + "\n\n[End of answers]\nReconsider your answer in the light of theirs."},
		})
		ownRec, _ := b.srv.Answer(own.text)
		revRec, ok := b.srv.Answer(rev)
		require.True(t, ok)
		require.Equal(t, ownRec.Correct, revRec.Correct, it.ID)
		require.Equal(t, it.Check(own.text), it.Check(rev), it.ID)
	}
}

// TestJudgesWithTheReferencePreferTheRightAnswer: with a verifiable item's
// reference answer in the prompt, a pairwise judge prefers a right answer
// to a wrong one of equal quality with probability σ(ReferenceWeight) —
// about 0.95 at the default — in either position; without the reference,
// or with the weight turned off, it cannot tell them apart.
func TestJudgesWithTheReferencePreferTheRightAnswer(t *testing.T) {
	t.Parallel()
	cfg := qualityConfig(map[string]JudgeConfig{"j-plain": {}, "j-blind": {ReferenceWeight: -1}})
	// Difficulty 0 and quality 0: peer-a and peer-b are each right half the
	// time, with equal qualities.
	cfg.Quality.Difficulty = &Difficulty{}
	b := setup(t, cfg)
	var pairs [][2]string // right, wrong
	var pairItems []bank.Item
	for _, bk := range bank.Buckets {
		items := verifiableItems(t, bk)
		ta, ra := b.answerItems(t, "peer-a", items)
		tb, rb := b.answerItems(t, "peer-b", items)
		for i := range items {
			switch {
			case ra[i].Correct && !rb[i].Correct:
				pairs = append(pairs, [2]string{ta[i], tb[i]})
			case rb[i].Correct && !ra[i].Correct:
				pairs = append(pairs, [2]string{tb[i], ta[i]})
			default:
				continue
			}
			pairItems = append(pairItems, items[i])
		}
	}
	require.Greater(t, len(pairs), 300)
	proto := pairwise.New()
	judge := func(judge string, reference bool) rate {
		var mu sync.Mutex
		r := rate{n: 2 * len(pairs)}
		each(2*len(pairs), func(k int) {
			i, swapped := k/2, k%2 == 1
			first, second := pairs[i][0], pairs[i][1]
			if swapped {
				first, second = second, first
			}
			task := &core.JudgeTask{Question: pairItems[i].Question, Seed: 1,
				Answers: []core.JudgeAnswer{{ID: "x", Text: first}, {ID: "y", Text: second}}}
			if reference {
				task.Reference = pairItems[i].Answer
			}
			plan, err := proto.Plan(t.Context(), task)
			require.NoError(t, err)
			pr := plan.Prompts[0]
			a := b.do(t, ask{format: "openai", model: judge, system: pr.System, user: pr.User, jsonMode: pr.JSONOutput})
			v, ok := pairwise.Read(a.text)
			require.True(t, ok, a.text)
			if (v == "1") != swapped {
				mu.Lock()
				r.hits++
				mu.Unlock()
			}
		})
		return r
	}
	first, _, _ := JudgeConfig{}.Pairwise(defaultReferenceWeight, 0, false, false)
	require.InDelta(t, 0.953, first, 0.001)
	requireNear(t, first, judge("j-plain", true), "the right answer's wins, reference shown")
	requireNear(t, 0.5, judge("j-plain", false), "the right answer's wins, no reference")
	requireNear(t, 0.5, judge("j-blind", true), "the right answer's wins, reference ignored")
}

// TestDefaultBaselinePassRatesFallInTheBands: with the default difficulty
// and answer noise, sonnet — the baseline of the built-in standard panel —
// passes each bucket's verifiable items at a rate inside the certification
// design's band (bank.BandOf). Each bucket has 400 items, whose answers
// are independent draws, so the observed rate's binomial standard error is
// at most 0.025; the narrowest band, light's, is ±0.05 around a model rate
// of 0.9, where the error is 0.015, so a rate outside a band would be at
// least a 3.3-SE event (under 0.1% per bucket for a random seed). The rate
// must also be within four standard errors of the model's own expectation,
// which is itself inside the band.
func TestDefaultBaselinePassRatesFallInTheBands(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{TimeScale: 0.001, Seed: 1})
	for _, bk := range bank.Buckets {
		items := verifiableItems(t, bk)
		texts, recs := b.answerItems(t, "sonnet", items)
		got := rate{n: len(items)}
		want := 0.0
		for i, it := range items {
			if it.Check(texts[i]) {
				got.hits++
			}
			want += expectedPCorrect(skillFor(t, "sonnet", recs[i]), string(bk))
		}
		want /= float64(len(items))
		band := bank.BandOf(bk)
		require.True(t, band.Contains(want), "%s: the model's rate %.3f is outside %v", bk, want, band)
		require.Truef(t, band.Contains(got.p()), "%s: %d of %d (%.3f) is outside %v", bk, got.hits, got.n, got.p(), band)
		requireNear(t, want, got, fmt.Sprintf("sonnet on %s items", bk))
	}
}

// expectedPCorrect is the probability that an answer of an engine of the
// skill to a verifiable item of the bucket is right, under the default
// quality model: E[σ(skill + z − difficulty)] over the answer's standard
// normal deviation z (AnswerNoise 1), by Simpson's rule on [−8, 8].
func expectedPCorrect(skill float64, bucket string) float64 {
	const n = 801 // odd
	h := 16.0 / (n - 1)
	var sum, weights float64
	for k := range n {
		z := -8 + float64(k)*h
		w := math.Exp(-z * z / 2)
		switch {
		case k == 0 || k == n-1:
		case k%2 == 1:
			w *= 4
		default:
			w *= 2
		}
		sum += w * QualityConfig{}.PCorrect(skill+z, bucket)
		weights += w
	}
	return sum / weights
}

// skillFor is the built-in engine's skill for the record's question.
func skillFor(t *testing.T, model string, rec AnswerRecord) float64 {
	t.Helper()
	p := DefaultEngineProfile(ProfileQuick, model)
	require.NotNil(t, p.Skill)
	return p.Skill.For(rec.Bucket, rec.TaskType)
}

func TestDifficultyAndReferenceWeightAreValidated(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		cfg  Config
		want string
	}{
		"difficulty":       {Config{Quality: QualityConfig{Difficulty: &Difficulty{Hard: math.NaN()}}}, "Quality.Difficulty"},
		"reference weight": {Config{Judging: JudgeConfig{ReferenceWeight: math.Inf(1)}}, "Judging.ReferenceWeight"},
	} {
		_, err := Start(t.Context(), c.cfg)
		require.ErrorContains(t, err, c.want, name)
	}
	require.True(t, slices.IsSorted([]float64{DefaultDifficulty.Light, DefaultDifficulty.Medium, DefaultDifficulty.Hard}),
		"harder buckets are harder")
}
