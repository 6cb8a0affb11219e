package runs_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// testRequest decodes a body as the REST carrier does.
func testRequest(t *testing.T, body string) *runs.TestRequest {
	t.Helper()
	var r runs.TestRequest
	require.NoError(t, json.Unmarshal([]byte(body), &r))
	return &r
}

// Every launch code of a test run, with the parameter it names.
func TestParseTestRefusals(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		code       core.Code
		param      string
	}{
		{"no model", `{"buckets":{"light":1}}`, core.CodeInvalidModel, "model"},
		{"model not a string", `{"model":7,"buckets":{"light":1}}`, core.CodeInvalidModel, "model"},
		{"blank model", `{"model":" ","buckets":{"light":1}}`, core.CodeInvalidModel, "model"},
		{"neither form", `{"model":"m"}`, core.CodeInvalidBuckets, "buckets"},
		{"both forms", `{"model":"m","buckets":{"light":1},"questions":{"easy":1}}`, core.CodeLaunchRefused, "questions"},
		{"buckets empty", `{"model":"m","buckets":{}}`, core.CodeInvalidBuckets, "buckets"},
		{"buckets a list", `{"model":"m","buckets":[1]}`, core.CodeInvalidBuckets, "buckets"},
		{"unknown bucket", `{"model":"m","buckets":{"easy":3}}`, core.CodeInvalidBucket, "buckets.easy"},
		{"zero count", `{"model":"m","buckets":{"light":0}}`, core.CodeInvalidBucketCount, "buckets.light"},
		{"count over 100", `{"model":"m","buckets":{"hard":101}}`, core.CodeInvalidBucketCount, "buckets.hard"},
		{"fractional count", `{"model":"m","buckets":{"medium":2.5}}`, core.CodeInvalidBucketCount, "buckets.medium"},
		{"count as text", `{"model":"m","buckets":{"medium":"2"}}`, core.CodeInvalidBucketCount, "buckets.medium"},
		{"over 300", `{"model":"m","buckets":{"light":100,"medium":100,"hard":100},"tiers":["plus","pro"]}`, core.CodeTooManyQuestions, "buckets"},
		{"questions not an object", `{"model":"m","questions":"many"}`, core.CodeInvalidQuestions, "questions"},
		{"questions empty", `{"model":"m","questions":{}}`, core.CodeInvalidQuestions, "questions"},
		{"unknown difficulty", `{"model":"m","questions":{"light":3}}`, core.CodeInvalidDifficulty, "questions.light"},
		{"question count", `{"model":"m","questions":{"easy":-1}}`, core.CodeInvalidQuestionCount, "questions.easy"},
		{"questions over 300", `{"model":"m","questions":{"easy":100,"hard":60},"tiers":["free","pro"]}`, core.CodeTooManyQuestions, "questions"},
		{"tiers empty", `{"model":"m","questions":{"easy":1},"tiers":[]}`, core.CodeInvalidTiers, "tiers"},
		{"unknown tier", `{"model":"m","questions":{"easy":1},"tiers":["gold"]}`, core.CodeInvalidTiers, "tiers"},
		{"tier twice", `{"model":"m","questions":{"easy":1},"tiers":["free","experience"]}`, core.CodeInvalidTiers, "tiers"},
		{"tiers not a list", `{"model":"m","questions":{"easy":1},"tiers":"plus"}`, core.CodeInvalidTiers, "tiers"},
		{"punch_up text", `{"model":"m","questions":{"easy":1},"punch_up":"yes"}`, core.CodeInvalidPunchUp, "punch_up"},
		{"unknown judge", `{"model":"m","buckets":{"light":1},"judges":["gpt"]}`, core.CodeInvalidJudges, "judges"},
		{"judge twice", `{"model":"m","buckets":{"light":1},"judges":["nova_pro","nova_pro"]}`, core.CodeInvalidJudges, "judges"},
		{"no judges", `{"model":"m","buckets":{"light":1},"judges":[]}`, core.CodeInvalidJudges, "judges"},
		{"repeats 0", `{"model":"m","buckets":{"light":1},"judge_repeats":0}`, core.CodeLaunchRefused, "judge_repeats"},
		{"repeats 4", `{"model":"m","buckets":{"light":1},"judge_repeats":4}`, core.CodeLaunchRefused, "judge_repeats"},
		{"protocol", `{"model":"m","buckets":{"light":1},"judging_protocol":"elo"}`, core.CodeLaunchRefused, "judging_protocol"},
		{"dry_run text", `{"model":"m","buckets":{"light":1},"dry_run":"true"}`, core.CodeLaunchRefused, "dry_run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := runs.ParseTest(testRequest(t, tt.body))
			e := core.AsError(err)
			require.Equal(t, tt.code, e.Code, "%v", err)
			require.Equal(t, tt.param, e.Param)
			require.Equal(t, 400, core.InfoFor(e.Code).Status)
		})
	}
}

func TestParseTestDefaultsAndCanonicalOrder(t *testing.T) {
	t.Parallel()
	p, err := runs.ParseTest(testRequest(t, `{"model":"acme-panl","buckets":{"hard":2,"light":3}}`))
	require.NoError(t, err)
	require.Equal(t, runs.FormBuckets, p.Form)
	require.Equal(t, map[runs.Bucket]int{runs.BucketLight: 3, runs.BucketHard: 2}, p.Counts)
	require.Equal(t, []core.Tier{core.TierPlus}, p.Tiers)
	require.Equal(t, runs.Judges, p.Judges)
	require.Equal(t, 1, p.Repeats)
	require.Equal(t, runs.ProtocolPairwise, p.Protocol)
	require.False(t, p.DryRun)
	require.Equal(t, 5, p.Total())

	q, err := runs.ParseTest(testRequest(t, `{"model":"acme-panl","questions":{"easy":4,"hard":1},"tiers":["pro","free"],
		"punch_up":true,"judges":["llama4_maverick","nova_pro"],"judge_repeats":3,"judging_protocol":"plurality","dry_run":true}`))
	require.NoError(t, err)
	require.Equal(t, runs.FormQuestions, q.Form)
	require.Equal(t, map[runs.Bucket]int{runs.BucketLight: 4, runs.BucketHard: 1}, q.Counts)
	require.Equal(t, []core.Tier{core.TierExperience, core.TierPro}, q.Tiers, "lowest tier first; free is experience")
	require.Equal(t, []runs.Judge{runs.JudgeNovaPro, runs.JudgeLlama4Maverick}, q.Judges, "judges in the spec's order")
	require.True(t, q.PunchUp)
	require.Equal(t, 3, q.Repeats)
	require.Equal(t, runs.ProtocolPlurality, q.Protocol)
	require.True(t, q.DryRun)
	require.Equal(t, 10, q.Total(), "five questions at two tiers")
	require.Equal(t, 8, q.PerBucket(runs.BucketLight))

	// 300 questions exactly is allowed.
	_, err = runs.ParseTest(testRequest(t, `{"model":"m","buckets":{"light":100,"medium":100,"hard":100}}`))
	require.NoError(t, err)
}

func TestParseCertify(t *testing.T) {
	t.Parallel()
	p, err := runs.ParseCertify(&runs.CertifyRequest{Model: json.RawMessage(`"ACME:PANL"`)})
	require.NoError(t, err)
	require.Equal(t, runs.KindCertify, p.Kind)
	require.Equal(t, 150, p.Drawn())
	require.Equal(t, runs.Judges, p.Judges)
	require.Equal(t, 2, p.Repeats)
	_, err = runs.ParseCertify(&runs.CertifyRequest{})
	require.Equal(t, core.CodeInvalidModel, core.AsError(err).Code)
	_, err = runs.ParseCertify(&runs.CertifyRequest{Model: json.RawMessage(`"m"`), DryRun: json.RawMessage(`1`)})
	require.Equal(t, core.CodeLaunchRefused, core.AsError(err).Code)
}

// quoteEngines are four engines, priced per million tokens in and out.
var quoteEngines = map[string]*core.Engine{
	"a/one": {ID: "a/one", InputPerMTok: core.USD(2), OutputPerMTok: core.USD(8)},
	"a/two": {ID: "a/two", InputPerMTok: core.USD(3), OutputPerMTok: core.USD(15)},
	"b/one": {ID: "b/one", InputPerMTok: core.USD(1), OutputPerMTok: core.USD(4)},
	"c/big": {ID: "c/big", InputPerMTok: core.USD(10), OutputPerMTok: core.USD(40)},
}

// quoteMode seats a/one (backed by a/two) and b/one at plus, c/big and
// b/one at pro; b/one judges and a/one writes the synthesis; critique runs
// three rounds on deep questions.
func quoteMode() *core.Mode {
	return &core.Mode{ID: "acme-panl", Deliberation: core.Deliberation{
		Seats: map[core.Tier][]core.Seat{
			core.TierPlus: {{Engine: "a/one", Backup: "a/two"}, {Engine: "b/one"}},
			core.TierPro:  {{Engine: "c/big"}, {Engine: "b/one"}},
		},
		Staff:    map[string]core.Staff{"judge": {Engine: "b/one"}, "synthesis": {Engine: "a/one"}},
		Critique: core.CritiqueDeep, MaxRounds: 3,
	}, Pricing: core.Pricing{SurchargeByDepth: map[core.Depth]core.Micros{core.DepthLight: 50_000, core.DepthMedium: 100_000}}}
}

// A test question costs exactly 75% of what a call of its depth to the
// mode at its tier bills: the surcharge for its band, plus the projected
// token charge of the reference question (1,000 tokens in and 500 out per
// engine call, each seat at the dearer of its engine and backup, every seat
// and the judge each round, the synthesis once) and the 5% platform fee on
// it — worked out here by hand from the engines' prices — and never less
// than the question costs the service: its deliberation, its baseline (the
// dearest primary seat's reference call) and the judging the run asks. A
// band the mode has no price for is price_unavailable.
func TestQuoteTest(t *testing.T) {
	t.Parallel()
	// One reference call on an engine priced in and out dollars per
	// million tokens, in micro-dollars.
	call := func(in, out int64) int64 { return 1000*in + 500*out }
	aOne, aTwo, bOne, cBig := call(2, 8), call(3, 15), call(1, 4), call(10, 40)
	plusRound, proRound := max(aOne, aTwo)+bOne, cBig+bOne
	judge, synthesis := bOne, aOne
	tokens := func(round int64, rounds int64) int64 { return round*rounds + judge*rounds + synthesis }
	price := func(surcharge, tokens int64) core.Micros {
		fee := (tokens*5 + 99) / 100 // 5%, rounded up
		return core.Micros((surcharge + tokens + fee) * 3 / 4)
	}
	plusLight, proLight := price(50_000, tokens(plusRound, 1)), price(50_000, tokens(proRound, 1))
	require.Equal(t, core.Micros(55_218), plusLight, "(0.05 + 0.0225 + 0.001125) × 75%")
	// 25% off, a light question at pro would sell for 70,575 µ$ while its
	// deliberation (42,000) and baseline (cBig, 30,000) cost 72,000: it is
	// sold at its cost. (This mode is priced under its test floor, as only
	// a configured mode can be.)
	require.Equal(t, core.Micros(70_575), proLight)
	baseline := cBig
	proLight = max(proLight, core.Micros(tokens(proRound, 1)+baseline))
	require.Equal(t, core.Micros(72_000), proLight)
	plusMedium, proMedium := price(100_000, tokens(plusRound, 1)), price(100_000, tokens(proRound, 1))

	mode := quoteMode()
	p, err := runs.ParseTest(testRequest(t, `{"model":"acme-panl","buckets":{"light":20,"medium":10},"tiers":["plus","pro"]}`))
	require.NoError(t, err)
	q, err := runs.QuoteTest(mode, p, quoteEngines, 0)
	require.NoError(t, err)
	require.Equal(t, 60, q.Total)
	require.Equal(t, runs.BucketQuote{Questions: 40, Cost: 20*plusLight + 20*proLight, Tiers: map[core.Tier]runs.TierQuote{
		core.TierPlus: {Questions: 20, PerQuestion: plusLight, Cost: 20 * plusLight},
		core.TierPro:  {Questions: 20, PerQuestion: proLight, Cost: 20 * proLight},
	}}, q.Buckets[runs.BucketLight], "two tiers, two prices: no one price per question")
	require.Equal(t, proMedium, q.Buckets[runs.BucketMedium].Price(core.TierPro))
	require.Equal(t, 20*plusLight+20*proLight+10*plusMedium+10*proMedium, q.Cost)

	// The judging the run asks counts too: each reading by every judge,
	// times the repeats.
	p.Repeats = 2
	q, err = runs.QuoteTest(mode, p, quoteEngines, 4_000)
	require.NoError(t, err)
	require.Equal(t, core.Micros(tokens(proRound, 1)+baseline+2*4_000), q.Buckets[runs.BucketLight].Price(core.TierPro))
	require.Equal(t, core.Micros(tokens(plusRound, 1)+baseline+2*4_000), q.Buckets[runs.BucketLight].Price(core.TierPlus),
		"22,500 + 30,000 + 8,000 is more than 25%% off, %d", plusLight)
	p.Repeats = 1

	hard, err := runs.ParseTest(testRequest(t, `{"model":"acme-panl","buckets":{"light":1,"hard":1}}`))
	require.NoError(t, err)
	_, err = runs.QuoteTest(mode, hard, quoteEngines, 0)
	require.Equal(t, core.CodePriceUnavailable, core.AsError(err).Code)

	// The flat surcharge prices the hard band, whose deep question runs
	// three rounds.
	flat := core.Micros(200_000)
	mode.Pricing.Surcharge = &flat
	q, err = runs.QuoteTest(mode, hard, quoteEngines, 0)
	require.NoError(t, err)
	plusHard := price(200_000, tokens(plusRound, 3))
	require.Equal(t, core.Micros(193_706), plusHard)
	require.Equal(t, runs.BucketQuote{Questions: 1, PerQuestion: plusHard, Cost: plusHard,
		Tiers: map[core.Tier]runs.TierQuote{core.TierPlus: {Questions: 1, PerQuestion: plusHard, Cost: plusHard}}},
		q.Buckets[runs.BucketHard], "one tier: one price per question")
	require.Equal(t, plusLight+plusHard, q.Cost)

	c, err := runs.ParseCertify(&runs.CertifyRequest{Model: json.RawMessage(`"acme-panl"`)})
	require.NoError(t, err)
	cq := runs.QuoteCertify(c)
	require.Equal(t, core.USD(50), cq.Cost, "a certification stays $50 flat")
	require.Equal(t, 150, cq.Total)
	require.Zero(t, cq.Minutes, "the Service estimates the minutes, from its pace and the queue")
}

// A launch's questions share its charge at their own tier's price.
func TestSharePricesByTier(t *testing.T) {
	t.Parallel()
	p, err := runs.ParseTest(testRequest(t, `{"model":"acme-panl","questions":{"easy":2},"tiers":["plus","pro"]}`))
	require.NoError(t, err)
	q, err := runs.QuoteTest(quoteMode(), p, quoteEngines, 0)
	require.NoError(t, err)
	b := &runs.Batch{Kind: runs.KindTest, Billed: q.Cost, Quote: q}
	var qs []*runs.Question
	for _, tier := range p.Tiers {
		for range 2 {
			qs = append(qs, &runs.Question{Index: len(qs), Bucket: runs.BucketLight, Tier: tier})
		}
	}
	require.NoError(t, runs.SharePrices(b, qs))
	light := q.Buckets[runs.BucketLight]
	require.Equal(t, []core.Micros{light.Tiers[core.TierPlus].PerQuestion, light.Tiers[core.TierPlus].PerQuestion,
		light.Tiers[core.TierPro].PerQuestion, light.Tiers[core.TierPro].PerQuestion},
		[]core.Micros{qs[0].Price, qs[1].Price, qs[2].Price, qs[3].Price})
	require.NotEqual(t, qs[0].Price, qs[2].Price)
}

// The status machine: queued → running → complete | failed, queued |
// running → cancelled, nothing out of a final status.
func TestStatusMoves(t *testing.T) {
	t.Parallel()
	allowed := map[[2]runs.Status]bool{
		{runs.StatusQueued, runs.StatusRunning}:    true,
		{runs.StatusRunning, runs.StatusComplete}:  true,
		{runs.StatusRunning, runs.StatusFailed}:    true,
		{runs.StatusQueued, runs.StatusCancelled}:  true,
		{runs.StatusRunning, runs.StatusCancelled}: true,
	}
	for _, from := range runs.Statuses {
		for _, to := range runs.Statuses {
			require.Equal(t, allowed[[2]runs.Status{from, to}], from.CanMove(to), "%s → %s", from, to)
		}
	}
	require.Equal(t, []runs.Status{runs.StatusRunning}, runs.MovesTo(runs.StatusComplete))
	require.Equal(t, []runs.Status{runs.StatusQueued, runs.StatusRunning}, runs.MovesTo(runs.StatusCancelled))
	require.True(t, runs.StatusComplete.Final())
	require.True(t, runs.StatusCancelled.Final())
	require.False(t, runs.StatusRunning.Final())
}

// Each question's share of the charge: a test question its bucket's
// price, a certification's an exact split of the $50; the shares add up
// to the charge.
func TestSharePrices(t *testing.T) {
	t.Parallel()
	qs := func(buckets ...runs.Bucket) []*runs.Question {
		var out []*runs.Question
		for i, b := range buckets {
			out = append(out, &runs.Question{Index: i, Bucket: b})
		}
		return out
	}
	test := &runs.Batch{Kind: runs.KindTest, Billed: 262_500, Quote: &runs.Quote{Buckets: map[runs.Bucket]runs.BucketQuote{
		runs.BucketLight: {PerQuestion: 37_500}, runs.BucketMedium: {PerQuestion: 75_000}, runs.BucketHard: {PerQuestion: 112_500},
	}}}
	tq := qs(runs.BucketLight, runs.BucketLight, runs.BucketMedium, runs.BucketHard)
	require.NoError(t, runs.SharePrices(test, tq))
	require.Equal(t, []core.Micros{37_500, 37_500, 75_000, 112_500}, []core.Micros{tq[0].Price, tq[1].Price, tq[2].Price, tq[3].Price})
	test.Billed++
	require.Error(t, runs.SharePrices(test, tq), "shares that do not add up to the charge")

	cert := &runs.Batch{Kind: runs.KindCertify, Billed: core.CertificationPrice}
	cq := make([]*runs.Question, 150)
	for i := range cq {
		cq[i] = &runs.Question{Index: i, Bucket: runs.Buckets[i/50]}
	}
	require.NoError(t, runs.SharePrices(cert, cq))
	var sum core.Micros
	for i, q := range cq {
		want := core.Micros(333_333)
		if i < 50 {
			want = 333_334
		}
		require.Equal(t, want, q.Price, "question %d", i)
		sum += q.Price
	}
	require.Equal(t, core.CertificationPrice, sum)
	require.Error(t, runs.SharePrices(cert, nil))
}

// Each judge reads the mode first on half the questions in repeat 1, the
// other way round in repeat 2, and the order depends only on its inputs.
func TestOrderBalancesPositions(t *testing.T) {
	t.Parallel()
	const total, seed = 150, 42
	for _, judge := range runs.Judges {
		first := 0
		for i := range total {
			o1 := runs.Order(seed, total, i, judge, 1)
			o2 := runs.Order(seed, total, i, judge, 2)
			require.ElementsMatch(t, []runs.Side{runs.SideMode, runs.SideBaseline}, o1)
			require.Equal(t, o1[0], o2[1], "repeat 2 swaps repeat 1")
			require.Equal(t, o1, runs.Order(seed, total, i, judge, 1), "the same inputs, the same order")
			if o1[0] == runs.SideMode {
				first++
			}
		}
		require.Equal(t, total/2, first, "%s sees the mode first on half the questions", judge)
	}
	// The judges alternate on a question.
	require.NotEqual(t, runs.Order(seed, total, 0, runs.JudgeNovaPro, 1), runs.Order(seed, total, 0, runs.JudgeMistralLarge, 1))
}

func TestValidUUID(t *testing.T) {
	t.Parallel()
	require.True(t, runs.ValidUUID("0b9a7c1e-32f4-4c1d-9a57-2f1e8d3c4b5a"))
	require.True(t, runs.ValidUUID("0B9A7C1E-32F4-4C1D-9A57-2F1E8D3C4B5A"))
	for _, s := range []string{"", "batch_1", "0b9a7c1e32f44c1d9a572f1e8d3c4b5a", "0b9a7c1e-32f4-4c1d-9a57-2f1e8d3c4b5g", "0b9a7c1e-32f4-4c1d-9a57-2f1e8d3c4b5a0"} {
		require.False(t, runs.ValidUUID(s), s)
	}
}

// FuzzParseTest: no body the carrier can decode panics the parser, and
// every refusal is a launch's code.
func FuzzParseTest(f *testing.F) {
	f.Add(`{"model":"m","buckets":{"light":1}}`)
	f.Add(`{"model":"m","questions":{"easy":100,"hard":3},"tiers":["free","pro"],"punch_up":false}`)
	f.Add(`{"model":"m","buckets":{"light":1e2},"judges":["nova_pro"],"judge_repeats":2}`)
	f.Fuzz(func(t *testing.T, body string) {
		var r runs.TestRequest
		if json.Unmarshal([]byte(body), &r) != nil {
			return
		}
		p, err := runs.ParseTest(&r)
		if err != nil {
			require.Equal(t, 400, core.InfoFor(core.AsError(err).Code).Status, "%v", err)
			return
		}
		require.LessOrEqual(t, p.Total(), runs.MaxQuestions)
		require.Positive(t, p.Total())
	})
}
