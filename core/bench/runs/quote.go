package runs

import (
	"math"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/modes"
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
// when ahead questions of other batches are worked before its last
// (Waiting.Ahead): the questions are worked Workers at a time, in waves of about
// QuestionTime, by one replica (more replicas finish sooner). It is at
// least a minute.
func (p Pace) Minutes(ahead, total int) int {
	if p.Workers < 1 || p.QuestionTime <= 0 {
		return total // the spec's pace: about one question a minute
	}
	waves := (max(ahead, 0) + total + p.Workers - 1) / p.Workers
	return max(1, int(math.Ceil(float64(waves)*p.QuestionTime.Minutes())))
}

// Waiting is the questions of unfinished batches not yet judged, given up
// on or cancelled (waiting for a worker, or being worked), by organisation
// id: LaunchStore.QueuedQuestions.
type Waiting map[string]int

// Ahead is how many of the waiting questions are worked before the last of
// total questions orgID launches now, counted for Pace.Minutes. The
// workers are shared fairly: the bench queue (internal/jobs) is fetched
// one organisation after another, a question of each organisation with
// questions waiting per round, and a launch's questions take the rounds
// after its organisation's own waiting ones. With w its organisation's
// waiting questions, the launch's last is in round w+total, and by then
// each other organisation with w′ waiting has had min(w′, w+total) worked:
// so ahead is w + Σ min(w′, w+total). A question being worked is counted
// as waiting (it holds a worker), so the estimate errs long by at most
// one wave.
func (w Waiting) Ahead(orgID string, total int) int {
	own := max(w[orgID], 0)
	ahead := own
	for org, n := range w {
		if org != orgID {
			ahead += min(max(n, 0), own+total)
		}
	}
	return ahead
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
	// PerQuestion is one question's price when the bucket's questions all
	// cost the same — always, at one tier; zero for a certification, which
	// is priced flat, and for a test run whose tiers price the bucket
	// differently (Tiers has each).
	PerQuestion core.Micros `json:"per_question_micros"`
	Cost        core.Micros `json:"cost_micros"`
	// Tiers prices a test run's questions of the bucket at each tier it
	// asks them at.
	Tiers map[core.Tier]TierQuote `json:"tiers,omitempty"`
}

// TierQuote is the share of a bucket's quote of its questions at one tier.
type TierQuote struct {
	Questions   int         `json:"questions"`
	PerQuestion core.Micros `json:"per_question_micros"`
	Cost        core.Micros `json:"cost_micros"`
}

// Price is the price of one of the bucket's questions at tier t: its
// tier's price, or PerQuestion for a quote that has none by tier.
func (bq BucketQuote) Price(t core.Tier) core.Micros {
	if tq, ok := bq.Tiers[t]; ok {
		return tq.PerQuestion
	}
	return bq.PerQuestion
}

// QuoteTest prices a test run of mode: each question at the mode's
// standard price for its band at its tier, 25% off (core.TestQuestionPrice
// of modes.StandardPrice) — what a call of that depth to the mode at that
// tier is projected to bill: its surcharge for the band, the projected
// token charge of its deliberation on engines' prices, and the platform
// fee on it — and never below what the question costs the service: its
// deliberation and baseline (modes.QuestionCost) and the judging the run
// asks (judgingPerRead, the reference cost of one reading by every judge,
// times the plan's repeats). An organisation's mode is floored so that the
// first is always the larger (modes.TestFloor); a configured mode, priced
// by its operator, may not be. A bucket the mode has no API price for is
// price_unavailable. A dry run and a launch quote alike: both call it.
func QuoteTest(mode *core.Mode, p *Plan, engines map[string]*core.Engine, judgingPerRead core.Micros) (*Quote, error) {
	q := &Quote{Total: p.Total(), Buckets: map[Bucket]BucketQuote{}}
	for _, b := range Buckets {
		if p.Counts[b] == 0 {
			continue
		}
		bq, alike := BucketQuote{Tiers: map[core.Tier]TierQuote{}}, true
		for i, t := range p.Tiers {
			standard, ok := modes.StandardPrice(mode, t, b.Depth(), engines)
			if !ok {
				return nil, core.Errorf(core.CodePriceUnavailable,
					"Mode %s has no API price for %s questions (the %s band): set one in its pricing before testing them.",
					mode.ID, b, b.Depth()).WithParam("model")
			}
			cost, _ := modes.QuestionCost(mode, t, b.Depth(), engines)
			cost += judgingPerRead * core.Micros(max(p.Repeats, 1))
			tq := TierQuote{Questions: p.Counts[b], PerQuestion: max(core.TestQuestionPrice(standard), cost)}
			tq.Cost = tq.PerQuestion * core.Micros(tq.Questions)
			bq.Tiers[t] = tq
			bq.Questions += tq.Questions
			bq.Cost += tq.Cost
			alike = alike && (i == 0 || tq.PerQuestion == bq.PerQuestion)
			bq.PerQuestion = tq.PerQuestion
		}
		if !alike {
			bq.PerQuestion = 0
		}
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
