package runs

import (
	"math"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Pace is how fast the deployment works benchmark questions: Workers at a
// time on a replica (jobs.bench_workers), each in about QuestionTime (its
// two answers, then its slowest judgment). A launch's estimated_minutes is
// worked out from it.
type Pace struct {
	Workers      int
	QuestionTime time.Duration
}

// Minutes estimates how long a batch of total questions takes to finish
// when ahead questions of other batches are waiting in the queue before
// it: the questions are worked Workers at a time, in waves of about
// QuestionTime, by one replica (more replicas finish sooner). It is at
// least a minute.
func (p Pace) Minutes(ahead, total int) int {
	if p.Workers < 1 || p.QuestionTime <= 0 {
		return total // the spec's pace: about one question a minute
	}
	waves := (max(ahead, 0) + total + p.Workers - 1) / p.Workers
	return max(1, int(math.Ceil(float64(waves)*p.QuestionTime.Minutes())))
}

// Quote is what a launch costs and how long it takes.
type Quote struct {
	// Total is the questions the batch runs.
	Total int `json:"total"`
	// Buckets prices each bucket the plan asks for.
	Buckets map[Bucket]BucketQuote `json:"buckets"`
	// Cost is the whole price: what a real launch charges.
	Cost core.Micros `json:"cost_micros"`
	// Minutes is the estimated time to run (Pace.Minutes), set by the
	// Service from the deployment's pace and the queue ahead.
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
	q := &Quote{Total: p.Total(), Buckets: map[Bucket]BucketQuote{}}
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
	q := &Quote{Total: p.Total(), Buckets: map[Bucket]BucketQuote{}, Cost: core.CertificationPrice}
	for _, b := range Buckets {
		if n := p.PerBucket(b); n > 0 {
			q.Buckets[b] = BucketQuote{Questions: n}
		}
	}
	return q
}
