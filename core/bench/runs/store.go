package runs

import (
	"context"
	"errors"
	"time"

	"github.com/conclavehq/conclave/core"
)

// LaunchStore keeps launches: the Idempotency-Key claims of the launch
// endpoints, and each launch's one transaction. Its one implementation is
// PostgreSQL (internal/pgstore.Batches); runstest holds the conformance
// suite. Implementations are safe for concurrent use.
type LaunchStore interface {
	// ListStore is what the run pages read besides one batch.
	ListStore
	// ClaimLaunch claims an Idempotency-Key for a launch, in a transaction
	// of its own, or reports who holds it. A new key is claimed (Won) in
	// flight for p.Lease, for the batch p.BatchID. A key already held is
	// reported as its holder left it, except that a claim still in flight
	// past its lease — an attempt that stopped before its launch committed
	// — is moved to ClaimStopped for good, and that a claim launched or
	// stopped longer than p.Lapse ago (when p.Lapse is set) is claimed
	// again as if the key were new.
	ClaimLaunch(ctx context.Context, p *ClaimLaunchParams) (*LaunchClaim, error)
	// Launch runs a launch in one transaction: under the organisation's
	// balance row, the daily limit (ErrDailyLimit), the spend rules
	// (core.ErrQuotaExceeded, core.ErrVerificationRequired) and the
	// balance (core.ErrInsufficientFunds, or core.ErrNoBilling) are
	// checked; the price is charged as one posting of the batch's kind
	// (core.PostingTestCharge, core.PostingCertifyCharge), counted by the
	// spend rules as a call's settled bill is; the batch and its questions
	// are written and one job per question enqueued; and the launch's
	// claim, when it has one, moves to ClaimLaunched (ErrClaimLost when it
	// is no longer in flight for this batch). Any refusal leaves nothing
	// written. A certification's Attempt is numbered here. Each question's
	// Price (SharePrices) is kept, for its refund; prices that do not add
	// up to the batch's Billed are refused. It returns the batch as stored.
	Launch(ctx context.Context, p *LaunchParams) (*Batch, error)
	// ReleaseLaunch deletes a claim still in flight for batchID, after a
	// launch refused without charging: a retry with the key runs again.
	ReleaseLaunch(ctx context.Context, orgID, key, batchID string) error
	// Batch reads one of orgID's batches with its progress; another
	// organisation's batch, or none, is core.ErrNotFound.
	Batch(ctx context.Context, orgID, batchID string) (*Batch, error)
	// CancelBatch cancels one of orgID's batches, in one transaction: a
	// queued batch, or a running one with a pending question that nothing
	// was answered to, moves to cancelled; each pending question without
	// the mode's answer or the baseline's moves to cancelled, its job is
	// cancelled, and their prices are refunded in one posting of the
	// batch's kind (core.PostingTestRefund, core.PostingCertifyRefund). A
	// question with an answer is finished and charged: it stays pending,
	// its job runs it to its end and it is judged (or, given up on,
	// refunded then), but the batch stays cancelled and is never scored.
	// Questions already judged stay paid; those failed were refunded
	// already. A batch already cancelled is left as it is (nothing more is
	// refunded); a complete or failed one, or one running whose every
	// question is done or answered, is ErrBatchFinished; another
	// organisation's, or none, core.ErrNotFound. It returns the batch as it
	// then stands.
	CancelBatch(ctx context.Context, orgID, batchID string) (*Batch, error)
	// QueuedQuestions counts the questions waiting to be worked, by
	// organisation: those of batches queued or running that are neither
	// judged, given up on nor cancelled; an organisation with none is
	// absent. A launch's estimate counts, ahead of it, those fair sharing
	// works first (Waiting.Ahead).
	QueuedQuestions(ctx context.Context) (Waiting, error)
}

// ClaimState is the state of a launch's Idempotency-Key claim.
type ClaimState string

// Launch claim states.
const (
	// ClaimInFlight: the attempt that claimed the key has not launched yet.
	ClaimInFlight ClaimState = "in_flight"
	// ClaimLaunched: the key launched its batch; a repeat answers it.
	ClaimLaunched ClaimState = "launched"
	// ClaimStopped: the attempt stopped before its launch committed (its
	// process died, or lost the database). Its launch is one transaction
	// with its charge, so nothing was charged; but the attempt's caller
	// cannot know that, and the key is retired so that nobody relaunches on
	// it unawares: a repeat is reconciliation_required.
	ClaimStopped ClaimState = "stopped"
)

// ClaimLaunchParams are the inputs of LaunchStore.ClaimLaunch.
type ClaimLaunchParams struct {
	OrgID string
	Key   string
	Kind  Kind
	// RequestHash tells a repeat of the request from another request on
	// the key (32 bytes).
	RequestHash []byte
	// BatchID is the id the batch launched on the key will have.
	BatchID string
	// Lease is how long an attempt may take to launch before its claim
	// counts as stopped.
	Lease time.Duration
	// Lapse, when positive, is how long a claim that is no longer in
	// flight holds the key after it last changed (its launch, or its
	// stop): past it the key is free again. Zero holds it for good, as an
	// Idempotency-Key sent by the caller is held.
	Lapse time.Duration
}

// LaunchClaim is the state of a key after ClaimLaunch: who holds it.
type LaunchClaim struct {
	// Won is true when this request claimed the key.
	Won         bool
	State       ClaimState
	Kind        Kind
	RequestHash []byte
	BatchID     string
	// LockedUntil is when an in-flight claim's lease ends.
	LockedUntil time.Time
}

// LaunchParams are the inputs of LaunchStore.Launch.
type LaunchParams struct {
	// Batch is the batch to write: its id, organisation, kind, mode, plan,
	// seed, bank version and price (Billed). Its status is queued.
	Batch *Batch
	// Questions are its questions, indexed 0…n−1.
	Questions []*Question
	// IdempotencyKey is the key the launch claimed; "" for none.
	IdempotencyKey string
	// DailyLimit is how many batches of the kind the organisation may
	// launch in 24 hours, this one included.
	DailyLimit int
	// MonthlyQuota and ActivationAllowance are the organisation's spend
	// rules, as core.PlaceHoldParams has them.
	MonthlyQuota        *core.Micros
	ActivationAllowance core.Micros
}

// Refusals of LaunchStore.Launch, beside the ledger's.
var (
	// ErrDailyLimit: the organisation launched its daily limit of batches
	// of the kind in the last 24 hours.
	ErrDailyLimit = errors.New("daily launch limit reached")
	// ErrClaimLost: the launch's claim is no longer in flight for it (a
	// repeat found it past its lease and stopped it).
	ErrClaimLost = errors.New("the launch's idempotency claim is no longer its own")
)

// RunStore keeps what running a batch records: its questions' answers and
// judgments, their progress and the batch's outcome. Every write is
// idempotent, so a question's job may run twice, or on two replicas at
// once, and record each thing once: the first answer of a side, the first
// judgment of a judge and repeat, the first finish of a question and the
// first move of the batch's status win, and later ones change nothing.
// Implementations are safe for concurrent use.
type RunStore interface {
	// RunBatch reads a batch by id, whichever organisation's.
	RunBatch(ctx context.Context, batchID string) (*Batch, error)
	// StartBatch moves a queued batch to running; any other status is left
	// as it is.
	StartBatch(ctx context.Context, batchID string) error
	// Question reads one question with its answers and judgments.
	Question(ctx context.Context, batchID string, index int) (*Question, error)
	// Questions reads every question of the batch, in index order, with
	// their answers and judgments.
	Questions(ctx context.Context, batchID string) ([]*Question, error)
	// RecordAnswer records side's answer to a pending question unless one
	// is recorded already; it returns the question as it now stands. A
	// question no longer pending (its batch was cancelled) records nothing.
	RecordAnswer(ctx context.Context, batchID string, index int, side Side, a *Answer) (*Question, error)
	// RecordJudgment records a judgment of a pending question unless the
	// question already has one for its judge and repeat.
	RecordJudgment(ctx context.Context, j *Judgment) error
	// FinishQuestion marks a pending question judged (failure "") or
	// failed (with why), once, and returns the batch's progress after it. A
	// question that fails is refunded its price in the same transaction,
	// as CancelBatch refunds; a question no longer pending (finished
	// already, or cancelled with its batch) is left as it is, and nothing
	// is refunded again.
	FinishQuestion(ctx context.Context, batchID string, index int, failure string) (Progress, error)
	// FinishBatch moves a running batch to o.Status (complete or failed)
	// with its outcome; a batch not running (cancelled, say) is left as it
	// is, and false returned. A batch moved to failed is refunded, in the
	// same transaction, whatever of its charge was not refunded yet.
	FinishBatch(ctx context.Context, batchID string, o *Outcome) (bool, error)
}

// Outcome is how a batch ended.
type Outcome struct {
	Status        Status // StatusComplete or StatusFailed
	Result        []byte // the scorer's figures (JSON), when complete
	Certification *Certification
	Failure       string // why it failed
}
