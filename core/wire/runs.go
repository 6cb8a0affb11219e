package wire

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// Acceptance is the answer to POST /v1/tests and POST /v1/certify (the
// run_test and certify_mode tools' results): a dry run's quote, or the
// batch launched. docs/tests.md describes every field.
type Acceptance struct {
	OK             bool                   `json:"ok"`
	DryRun         bool                   `json:"dry_run"`
	BatchID        string                 `json:"batch_id,omitempty"`
	Model          string                 `json:"model"`
	ModeKey        string                 `json:"mode_key"`
	TotalQuestions int                    `json:"total_questions"`
	PerBucket      map[string]BucketQuote `json:"per_bucket"`
	// TotalCostUSD is a dry run's price; BilledUSD what a real launch
	// charged, up front.
	TotalCostUSD     *core.Dollars `json:"total_cost_usd,omitempty"`
	BilledUSD        *core.Dollars `json:"billed_usd,omitempty"`
	EstimatedMinutes int           `json:"estimated_minutes"`
	StatusURL        string        `json:"status_url,omitempty"`
	Note             string        `json:"note"`
	RequiresListing  *bool         `json:"requires_listing,omitempty"`
}

// BucketQuote is one bucket of an acceptance: its questions and, for a
// test run, their price — one price per question at one tier; at several,
// whose prices differ, PerTier prices each tier's questions.
type BucketQuote struct {
	Questions           int                  `json:"questions"`
	PricePerQuestionUSD *core.Dollars        `json:"price_per_question_usd,omitempty"`
	CostUSD             *core.Dollars        `json:"cost_usd,omitempty"`
	PerTier             map[string]TierQuote `json:"per_tier,omitempty"`
}

// TierQuote is a test run's questions of one bucket at one tier: how many,
// their price each and their cost.
type TierQuote struct {
	Questions           int          `json:"questions"`
	PricePerQuestionUSD core.Dollars `json:"price_per_question_usd"`
	CostUSD             core.Dollars `json:"cost_usd"`
}

// StatusURL is where a batch of kind is polled: a path under the API's
// base URL.
func StatusURL(kind runs.Kind, batchID string) string {
	path := "/v1/tests"
	if kind == runs.KindCertify {
		path = "/v1/certify"
	}
	return path + "?batch_id=" + url.QueryEscape(batchID)
}

// AcceptanceOf is a launch's answer on the wire.
func AcceptanceOf(a *runs.Acceptance) *Acceptance {
	q := a.Quote
	out := &Acceptance{
		OK: true, DryRun: a.DryRun, Model: a.Model, ModeKey: a.ModeKey, TotalQuestions: q.Total,
		PerBucket: map[string]BucketQuote{}, EstimatedMinutes: q.Minutes, RequiresListing: a.RequiresListing,
	}
	for b, bq := range q.Buckets {
		w := BucketQuote{Questions: bq.Questions}
		if a.Kind == runs.KindTest {
			w.CostUSD = dollars(bq.Cost)
			if len(bq.Tiers) <= 1 {
				w.PricePerQuestionUSD = dollars(bq.PerQuestion)
			} else {
				w.PerTier = map[string]TierQuote{}
				for t, tq := range bq.Tiers {
					w.PerTier[string(t)] = TierQuote{Questions: tq.Questions, PricePerQuestionUSD: core.Dollars(tq.PerQuestion),
						CostUSD: core.Dollars(tq.Cost)}
				}
			}
		}
		out.PerBucket[string(b)] = w
	}
	what := "test run"
	if a.Kind == runs.KindCertify {
		what = "certification"
	}
	if a.DryRun {
		out.TotalCostUSD = dollars(q.Cost)
		out.Note = fmt.Sprintf("Dry run: nothing was started or charged. Launched, this %s costs total_cost_usd, charged up front.", what)
		if a.RequiresListing != nil && *a.RequiresListing {
			out.Note += " The mode must be listed in the marketplace before it can be certified."
		}
		return out
	}
	b := a.Batch
	out.BatchID, out.BilledUSD, out.StatusURL = b.ID, dollars(b.Billed), StatusURL(b.Kind, b.ID)
	minutes := "minutes"
	if q.Minutes == 1 {
		minutes = "minute"
	}
	out.Note = fmt.Sprintf("The %s is queued: %d questions, each judged blind by %d judges × %d repeats, in about %d %s. Poll status_url for its progress.",
		what, q.Total, len(b.Plan.Judges), b.Plan.Repeats, q.Minutes, minutes)
	return out
}

func dollars(m core.Micros) *core.Dollars {
	d := core.Dollars(m)
	return &d
}

// BatchAnswer is the answer to GET /v1/tests and GET /v1/certify: the
// batch, and a complete certification's verdict.
type BatchAnswer struct {
	OK            bool           `json:"ok"`
	Batch         *Batch         `json:"batch"`
	Certification *Certification `json:"certification,omitempty"`
}

// Batch is a batch on the wire (docs/tests.md, "The batch object").
type Batch struct {
	ID             string              `json:"id"`
	Object         string              `json:"object"`
	Kind           runs.Kind           `json:"kind"`
	Status         runs.Status         `json:"status"`
	Model          string              `json:"model"`
	Mode           string              `json:"mode"`
	ModeKey        string              `json:"mode_key"`
	ModeVersion    int                 `json:"mode_version"`
	ModeConfigHash string              `json:"mode_config_hash"`
	Request        BatchRequest        `json:"request"`
	Progress       Progress            `json:"progress"`
	PerBucket      map[string]Progress `json:"per_bucket"`
	BilledUSD      core.Dollars        `json:"billed_usd"`
	RefundedUSD    core.Dollars        `json:"refunded_usd"`
	Attempt        *int                `json:"attempt"`
	QuestionSeed   string              `json:"question_seed"`
	BankVersion    string              `json:"bank_version"`
	CreatedAt      time.Time           `json:"created_at"`
	StartedAt      *time.Time          `json:"started_at"`
	FinishedAt     *time.Time          `json:"finished_at"`
	Result         json.RawMessage     `json:"result"`
	Failure        *string             `json:"failure"`
}

// BatchRequest is a batch's request as accepted, in its form's terms:
// buckets (light, medium, hard) or questions (easy, medium, hard).
type BatchRequest struct {
	Buckets         map[string]int `json:"buckets,omitempty"`
	Questions       map[string]int `json:"questions,omitempty"`
	Tiers           []core.Tier    `json:"tiers"`
	PunchUp         bool           `json:"punch_up"`
	Judges          []runs.Judge   `json:"judges"`
	JudgeRepeats    int            `json:"judge_repeats"`
	JudgingProtocol runs.Protocol  `json:"judging_protocol"`
}

// Progress counts a batch's (or a bucket's) questions.
type Progress struct {
	Total     int `json:"total"`
	Answered  int `json:"answered"`
	Judged    int `json:"judged"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
}

// Certification is a complete certification's verdict on the wire.
type Certification struct {
	Verdict        runs.CertVerdict `json:"verdict"`
	W              float64          `json:"w"`
	L              float64          `json:"l"`
	U              float64          `json:"u"`
	Gates          []runs.Gate      `json:"gates"`
	ModeVersion    int              `json:"mode_version"`
	ModeConfigHash string           `json:"mode_config_hash"`
	Attempt        int              `json:"attempt"`
	ModeCertified  bool             `json:"mode_certified"`
	RecordRefusal  string           `json:"record_refusal,omitempty"`
}

// BatchAnswerOf is a batch on the wire, with its certification once a
// certification is complete.
func BatchAnswerOf(b *runs.Batch) *BatchAnswer {
	out := &BatchAnswer{OK: true, Batch: batchOf(b)}
	if c := b.Certification; c != nil && b.Kind == runs.KindCertify && b.Status == runs.StatusComplete {
		gates := c.Gates
		if gates == nil {
			gates = []runs.Gate{}
		}
		out.Certification = &Certification{
			Verdict: c.Verdict, W: c.W, L: c.L, U: c.U, Gates: gates,
			ModeVersion: b.ModeVersion, ModeConfigHash: b.ModeConfigHash, Attempt: b.Attempt,
			ModeCertified: c.ModeCertified, RecordRefusal: c.RecordRefusal,
		}
	}
	return out
}

func batchOf(b *runs.Batch) *Batch {
	out := &Batch{
		ID: b.ID, Object: "batch", Kind: b.Kind, Status: b.Status, Model: b.Model, Mode: b.ModeID, ModeKey: b.ModeKey,
		ModeVersion: b.ModeVersion, ModeConfigHash: b.ModeConfigHash, Request: requestOf(b.Plan),
		Progress: progressOf(b.Progress), PerBucket: map[string]Progress{}, BilledUSD: core.Dollars(b.Billed),
		RefundedUSD:  core.Dollars(b.Refunded),
		QuestionSeed: strconv.FormatInt(b.Seed, 10), BankVersion: b.BankVersion,
		CreatedAt: b.CreatedAt.UTC(), StartedAt: utc(b.StartedAt), FinishedAt: utc(b.FinishedAt), Result: b.Result,
	}
	for bucket, p := range b.Buckets {
		out.PerBucket[string(bucket)] = progressOf(p)
	}
	if b.Kind == runs.KindCertify {
		attempt := b.Attempt
		out.Attempt = &attempt
	}
	if b.Failure != "" {
		f := b.Failure
		out.Failure = &f
	}
	if len(out.Result) == 0 {
		out.Result = json.RawMessage("null")
	}
	return out
}

// requestOf is a plan as its form names it.
func requestOf(p *runs.Plan) BatchRequest {
	out := BatchRequest{Tiers: p.Tiers, PunchUp: p.PunchUp, Judges: p.Judges, JudgeRepeats: p.Repeats, JudgingProtocol: p.Protocol}
	counts := map[string]int{}
	for b, n := range p.Counts {
		name := string(b)
		if p.Form == runs.FormQuestions && b == runs.BucketLight {
			name = "easy"
		}
		counts[name] = n
	}
	if p.Form == runs.FormQuestions {
		out.Questions = counts
	} else {
		out.Buckets = counts
	}
	return out
}

func progressOf(p runs.Progress) Progress {
	return Progress{Total: p.Total, Answered: p.Answered, Judged: p.Judged, Failed: p.Failed, Cancelled: p.Cancelled}
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
