package runs

import (
	"encoding/json"
	"time"

	"github.com/conclavehq/conclave/core"
)

// Kind is what a batch is: a test run or a certification.
type Kind string

// Batch kinds.
const (
	KindTest    Kind = "test"
	KindCertify Kind = "certify"
)

// Bucket is a question's difficulty band. The questions form's "easy" is
// the light bucket.
type Bucket string

// Buckets, lightest first.
const (
	BucketLight  Bucket = "light"
	BucketMedium Bucket = "medium"
	BucketHard   Bucket = "hard"
)

// Buckets lists every bucket, lightest first.
var Buckets = []Bucket{BucketLight, BucketMedium, BucketHard}

// Depth is the band's depth in a mode's pricing: hard is deep.
func (b Bucket) Depth() core.Depth {
	switch b {
	case BucketLight:
		return core.DepthLight
	case BucketMedium:
		return core.DepthMedium
	}
	return core.DepthDeep
}

// Judge names one engine of the judge panel, as the spec names them.
type Judge string

// The judges, from three vendor families.
const (
	JudgeNovaPro        Judge = "nova_pro"
	JudgeMistralLarge   Judge = "mistral_large"
	JudgeLlama4Maverick Judge = "llama4_maverick"
)

// Judges lists every judge in the spec's order, which is the order a batch
// keeps them in.
var Judges = []Judge{JudgeNovaPro, JudgeMistralLarge, JudgeLlama4Maverick}

// Protocol is how the judges compare the answers.
type Protocol string

// Judging protocols.
const (
	// ProtocolPairwise: each judge says which of two answers is better, or
	// that they tie. The default.
	ProtocolPairwise Protocol = "pairwise"
	// ProtocolPlurality: each judge votes for the best of the answers.
	ProtocolPlurality Protocol = "plurality"
)

// Side is whose answer: the mode's or the baseline's.
type Side string

// Sides.
const (
	SideMode     Side = "mode"
	SideBaseline Side = "baseline"
)

// Verdict is one judgment's outcome.
type Verdict string

// Verdicts.
const (
	VerdictMode     Verdict = "mode"     // the mode's answer is better
	VerdictBaseline Verdict = "baseline" // the baseline's answer is better
	VerdictTie      Verdict = "tie"
	// VerdictMissing: the judge's answer could not be read, even after the
	// panel's retry; the judgment counts as missing, and is not asked for
	// again.
	VerdictMissing Verdict = "missing"
)

// Valid reports whether v is one of the four verdicts.
func (v Verdict) Valid() bool {
	switch v {
	case VerdictMode, VerdictBaseline, VerdictTie, VerdictMissing:
		return true
	}
	return false
}

// Batch is one launched run as stored: what was asked, what ran, where it
// stands and, once complete, its result.
type Batch struct {
	ID    string // a UUID
	OrgID string
	// PersonID is the person who launched it, directly or through a key
	// they created; "" when no person did. A member may cancel only the
	// runs they launched (the policy's "own" grant of tests.cancel).
	PersonID string
	Kind     Kind
	// Model is the mode as the launch named it; ModeID, ModeKey,
	// ModeVersion and ModeConfigHash the mode version it runs.
	Model          string
	ModeID         string
	ModeKey        string
	ModeVersion    int
	ModeConfigHash string
	// Plan is the request as accepted.
	Plan *Plan
	// Seed drew the questions from the bank at BankVersion; it also orders
	// the answers each judge reads (Order).
	Seed        int64
	BankVersion string
	Status      Status
	// Progress counts the batch's questions, over all and per bucket.
	Progress Progress
	Buckets  map[Bucket]Progress
	// Billed is what the launch charged; Quote how it was priced.
	Billed core.Micros
	Quote  *Quote
	// Refunded is what of Billed was given back: the prices of the
	// questions given up on or cancelled, or, once the batch failed, all
	// of it. It never passes Billed.
	Refunded core.Micros
	// Attempt numbers a certification among those of its mode version,
	// from 1; 0 for a test run.
	Attempt int
	// Result is the scorer's figures once the batch is complete.
	Result json.RawMessage
	// Certification is a complete certification's verdict.
	Certification *Certification
	// Failure says why a failed batch failed.
	Failure    string
	CreatedAt  time.Time
	StartedAt  *time.Time
	FinishedAt *time.Time
}

// Progress counts questions: Total of them, Answered by both the mode and
// the baseline, Judged by every judge and repeat, Failed (given up on after
// their job's last attempt), Cancelled (pending and without an answer when
// their batch was cancelled). Judged + Failed + Cancelled is the questions
// done.
type Progress struct {
	Total     int
	Answered  int
	Judged    int
	Failed    int
	Cancelled int
}

// Done reports whether every question is judged, failed or cancelled.
func (p Progress) Done() bool { return p.Judged+p.Failed+p.Cancelled >= p.Total }

// Question is one question of a batch: the bank's question asked of the
// mode at Tier, its answers and its judgments.
type Question struct {
	BatchID    string
	Index      int
	Bucket     Bucket
	Tier       core.Tier
	QuestionID string
	// Answers holds the recorded answers by side; a side not yet answered
	// is absent.
	Answers   map[Side]*Answer
	Judgments []*Judgment
	State     QuestionState
	Failure   string
	// Price is the question's share of the launch's charge: what it is
	// refunded when it is given up on or cancelled (SharePrices).
	Price core.Micros
}

// QuestionState is where a question stands.
type QuestionState string

// Question states: pending until every judgment is stored (judged), its
// job gave up (failed) or its batch was cancelled before anything was
// answered to it (cancelled). A failed or cancelled question is refunded
// its price.
const (
	QuestionPending   QuestionState = "pending"
	QuestionJudged    QuestionState = "judged"
	QuestionFailed    QuestionState = "failed"
	QuestionCancelled QuestionState = "cancelled"
)

// Answer is one side's answer to a question, with what it cost to get.
type Answer struct {
	Text string `json:"text"`
	// Engine names what answered: the mode's id, or the baseline engine's.
	Engine    string        `json:"engine"`
	TokensIn  int           `json:"tokens_in"`
	TokensOut int           `json:"tokens_out"`
	Cost      core.Micros   `json:"cost_micros"`
	Latency   time.Duration `json:"latency_ns"`
}

// Judgment is one judge's ruling on one question in one repeat.
type Judgment struct {
	BatchID string
	Index   int
	Judge   Judge
	Repeat  int // from 1
	// Order is the order the judge read the answers in: Answer 1 is
	// Order[0]'s.
	Order []Side
	Ruling
}

// Ruling is what a judge's panel call returns.
type Ruling struct {
	Verdict Verdict
	// Detail is the panel's own record of the judgment (scores, the
	// judge's reasons), kept as it gave it.
	Detail  json.RawMessage
	Cost    core.Micros
	Latency time.Duration
}

// Certification is a certification's verdict as the scorer reached it
// (Verdict, W, L, U, Gates), with the mode version it certifies, the
// attempt and whether the version was recorded as the mode's certified one.
type Certification struct {
	Verdict CertVerdict `json:"verdict"`
	W       float64     `json:"w"`
	L       float64     `json:"l"`
	U       float64     `json:"u"`
	Gates   []Gate      `json:"gates"`
	// ModeCertified: the version is now the mode's certified version
	// (core.ModeStore.RecordCertified). False for any other verdict, and
	// for a certified verdict the mode's lifecycle refused (its listing was
	// taken down meanwhile, say; RecordRefusal says why).
	ModeCertified bool   `json:"mode_certified"`
	RecordRefusal string `json:"record_refusal,omitempty"`
}

// CertVerdict is the three-state ladder's verdict, driven by the lower
// bound L of the clustered 95% interval of the mode's win rate: L ≥ 0.50
// with every gate passing certifies (docs/tests.md).
type CertVerdict string

// Certification verdicts.
const (
	CertCertified    CertVerdict = "certified"
	CertProvisional  CertVerdict = "provisional"
	CertNotCertified CertVerdict = "not_certified"
)

// Gate is one of the certification's gates and whether it passed.
type Gate struct {
	Name   string `json:"name"`
	Passed bool   `json:"passed"`
	Detail string `json:"detail,omitempty"`
}
