package genie

import (
	"encoding/json"
	"math"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// The assistant's facts: the figures of a mode's runs, taken from the
// stored batches and never from a model, and the figures computed from
// them (how many more questions would narrow an interval to a width). The
// assistant's answer may state only these (the guard, guard.go).

// RunFacts are one batch's figures as the assistant may state them.
type RunFacts struct {
	BatchID string `json:"batch_id"`
	Kind    string `json:"kind"`
	Status  string `json:"status"`
	Version int    `json:"mode_version"`
	// Questions counts the batch's questions, Done those judged, failed
	// or cancelled.
	Questions int `json:"questions"`
	Done      int `json:"done"`
	Judged    int `json:"judged"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	// BilledUSD and RefundedUSD are what the launch charged and gave back.
	BilledUSD   core.Dollars `json:"billed_usd"`
	RefundedUSD core.Dollars `json:"refunded_usd"`
	// Result is the scorer's figures once the batch is complete.
	Result *ResultFacts `json:"result,omitempty"`
}

// ResultFacts are a complete batch's figures.
type ResultFacts struct {
	Verdict string `json:"verdict"`
	// W, Lower and Upper are the win rate and its 95% interval; nil where
	// undefined. N counts the scorable questions.
	W     *float64 `json:"w"`
	Lower *float64 `json:"lower"`
	Upper *float64 `json:"upper"`
	N     int      `json:"n"`
	// CertifyLower and ProvisionalLower are the thresholds the verdict
	// reads the lower bound against.
	CertifyLower     float64         `json:"certify_lower"`
	ProvisionalLower float64         `json:"provisional_lower"`
	Buckets          []BucketFacts   `json:"buckets"`
	Gates            []GateFacts     `json:"gates"`
	Narrowing        []NarrowingFact `json:"narrowing,omitempty"`
}

// BucketFacts are one bucket's figures.
type BucketFacts struct {
	Bucket string   `json:"bucket"`
	N      int      `json:"n"`
	W      *float64 `json:"w"`
	Lower  *float64 `json:"lower"`
	Upper  *float64 `json:"upper"`
}

// GateFacts is one gate's outcome.
type GateFacts struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
}

// NarrowingFact is how many more questions of a bucket (or of the whole
// run, Bucket "") would bring its interval's half-width down to
// HalfWidth, computed from the run's own standard error.
type NarrowingFact struct {
	Bucket string `json:"bucket,omitempty"`
	// Now is the half-width today; HalfWidth the one asked for; More the
	// questions to add.
	Now       float64 `json:"half_width_now"`
	HalfWidth float64 `json:"half_width"`
	More      int     `json:"more_questions"`
}

// FactsOf is batch b's facts; narrowTo, when positive, adds how many more
// questions would bring the run's and each bucket's 95% half-width down to
// it.
func FactsOf(b *runs.Batch, narrowTo float64) *RunFacts {
	f := &RunFacts{BatchID: b.ID, Kind: string(b.Kind), Status: string(b.Status), Version: b.ModeVersion,
		Questions: b.Progress.Total, Done: b.Progress.Judged + b.Progress.Failed + b.Progress.Cancelled, Judged: b.Progress.Judged, Failed: b.Progress.Failed, Cancelled: b.Progress.Cancelled,
		BilledUSD: core.Dollars(b.Billed), RefundedUSD: core.Dollars(b.Refunded)}
	var rep bench.Report
	if b.Status != runs.StatusComplete || len(b.Result) == 0 || json.Unmarshal(b.Result, &rep) != nil {
		return f
	}
	cfg := rep.Config.WithDefaults()
	r := &ResultFacts{Verdict: string(rep.Verdict), W: stat(rep.W), Lower: stat(rep.Lower), Upper: stat(rep.Upper), N: rep.N,
		CertifyLower: cfg.CertifyLower, ProvisionalLower: cfg.ProvisionalLower}
	if c := b.Certification; c != nil {
		r.Verdict = string(c.Verdict)
	}
	for _, bk := range rep.Buckets {
		r.Buckets = append(r.Buckets, BucketFacts{Bucket: string(bk.Bucket), N: bk.N, W: stat(bk.W), Lower: stat(bk.Lower), Upper: stat(bk.Upper)})
	}
	for _, g := range rep.Gates {
		r.Gates = append(r.Gates, GateFacts{ID: g.ID, Name: g.Name, Passed: g.Passed})
	}
	if narrowTo > 0 {
		if m, ok := MoreQuestions(rep.N, rep.Lower, rep.Upper, narrowTo); ok {
			r.Narrowing = append(r.Narrowing, NarrowingFact{Now: halfWidth(rep.Lower, rep.Upper), HalfWidth: narrowTo, More: m})
		}
		for _, bk := range rep.Buckets {
			if m, ok := MoreQuestions(bk.N, bk.Lower, bk.Upper, narrowTo); ok {
				r.Narrowing = append(r.Narrowing, NarrowingFact{Bucket: string(bk.Bucket), Now: halfWidth(bk.Lower, bk.Upper),
					HalfWidth: narrowTo, More: m})
			}
		}
	}
	f.Result = r
	return f
}

// MoreQuestions is how many questions to add to n scorable ones whose 95%
// interval is [lower, upper] for its half-width to fall to target. A
// clustered standard error falls as 1/√n with the questions (the clusters
// growing with them), so n questions of half-width h reach target at
// n·(h/target)² — rounded up, the critical value taken as it is (it only
// shrinks with more questions, so the figure is an upper bound). ok is
// false when the interval is undefined or n is zero; 0 when the interval
// is already that narrow.
func MoreQuestions(n int, lower, upper bench.Stat, target float64) (int, bool) {
	h := halfWidth(lower, upper)
	if n <= 0 || target <= 0 || math.IsNaN(h) || h <= 0 {
		return 0, false
	}
	if h <= target {
		return 0, true
	}
	// Rounded up, past the float's last bits: 20 × (0.15/0.05)² is 180.
	need := math.Ceil(float64(n)*(h/target)*(h/target) - 1e-9)
	return int(need) - n, true
}

// halfWidth is half an interval's width, to four decimals (the figures it
// is worked from are stored to more, and shown to two); NaN when
// undefined.
func halfWidth(lower, upper bench.Stat) float64 {
	if !lower.Defined() || !upper.Defined() {
		return math.NaN()
	}
	return math.Round((float64(upper)-float64(lower))/2*1e4) / 1e4
}

// stat is a figure, nil where undefined.
func stat(s bench.Stat) *float64 {
	if !s.Defined() {
		return nil
	}
	v := float64(s)
	return &v
}
