package runs

import (
	"github.com/conclavehq/conclave/core"
)

// QuestionsPerMinute is the pace a batch runs at, about one question a
// minute whatever its size (the spec's "Run throughput"): what
// estimated_minutes is worked out from.
const QuestionsPerMinute = 1

// Quote is what a launch costs and how long it takes.
type Quote struct {
	// Total is the questions the batch runs.
	Total int `json:"total"`
	// Buckets prices each bucket the plan asks for.
	Buckets map[Bucket]BucketQuote `json:"buckets"`
	// Cost is the whole price: what a real launch charges.
	Cost core.Micros `json:"cost_micros"`
	// Minutes is the estimated time to run, at QuestionsPerMinute.
	Minutes int `json:"minutes"`
}

// BucketQuote is one bucket's share of a quote.
type BucketQuote struct {
	Questions int `json:"questions"`
	// PerQuestion is one question's price; zero for a certification,
	// which is priced flat.
	PerQuestion core.Micros `json:"per_question_micros"`
	Cost        core.Micros `json:"cost_micros"`
}

// QuoteTest prices a test run of mode: each question at its bucket's
// standard price (the mode's surcharge for the band, core.Pricing.DepthPrice)
// 25% off (core.TestQuestionPrice). A bucket the mode has no API price for
// is price_unavailable.
func QuoteTest(mode *core.Mode, p *Plan) (*Quote, error) {
	q := &Quote{Total: p.Total(), Buckets: map[Bucket]BucketQuote{}, Minutes: minutes(p.Total())}
	for _, b := range Buckets {
		n := p.PerBucket(b)
		if n == 0 {
			continue
		}
		standard, ok := mode.Pricing.DepthPrice(b.Depth())
		if !ok {
			return nil, core.Errorf(core.CodePriceUnavailable,
				"Mode %s has no API price for %s questions (the %s band): set one in its pricing before testing them.",
				mode.ID, b, b.Depth()).WithParam("model")
		}
		price := core.TestQuestionPrice(standard)
		bq := BucketQuote{Questions: n, PerQuestion: price, Cost: price * core.Micros(n)}
		q.Buckets[b] = bq
		q.Cost += bq.Cost
	}
	return q, nil
}

// QuoteCertify prices a certification: core.CertificationPrice, flat.
func QuoteCertify(p *Plan) *Quote {
	q := &Quote{Total: p.Total(), Buckets: map[Bucket]BucketQuote{}, Cost: core.CertificationPrice, Minutes: minutes(p.Total())}
	for _, b := range Buckets {
		if n := p.PerBucket(b); n > 0 {
			q.Buckets[b] = BucketQuote{Questions: n}
		}
	}
	return q
}

func minutes(questions int) int {
	return (questions + QuestionsPerMinute - 1) / QuestionsPerMinute
}
