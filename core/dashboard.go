package core

import (
	"context"
	"time"
)

// The dashboard's reads: lists that page newest first by a cursor (never
// an offset), spend by day from the aggregates the spend job writes, and
// the money state of an organisation. Nothing here is read or written by a
// billed call.

// Dashboard is what the dashboard reads from the store. Its methods are
// safe for concurrent use.
type Dashboard interface {
	// ListReceipts returns up to q.Limit receipts of q.OrgID matching q,
	// newest first, after q.After when set.
	ListReceipts(ctx context.Context, q *ReceiptQuery) ([]*ReceiptRow, error)
	// ListJournal returns up to q.Limit of q.OrgID's postings that moved
	// its balance, newest first, before q.Before when set.
	ListJournal(ctx context.Context, q *JournalQuery) ([]*JournalRow, error)
	// DailySpend returns the spend aggregates of q.OrgID's days in
	// [q.From, q.To), oldest first.
	DailySpend(ctx context.Context, q *SpendQuery) ([]*DaySpend, error)
	// SpendSeries sums the same aggregates by mode or by key
	// (SpendByMode, SpendByKey): each label's total, and each day's sum
	// for the q.Top labels that spent most (every other label's in one
	// point of label "").
	SpendSeries(ctx context.Context, q *SpendQuery) (*SpendSeries, error)
	// MoneyState reads an organisation's balance, trial and activation.
	MoneyState(ctx context.Context, orgID string) (*MoneyState, error)
	// SetKeyLimits changes a key's rate, concurrency and input limits
	// (nil leaves one as it is), audited as key.changed with the actor on
	// ctx. Another organisation's key is ErrNotFound.
	SetKeyLimits(ctx context.Context, orgID, keyID string, l *KeyLimits) (*Key, error)
	// ListAudit returns a page of q.OrgID's audit trail, newest first.
	ListAudit(ctx context.Context, q *AuditFilter) ([]*AuditEntry, error)
	// TouchKeys records when keys were last used (never moving a time
	// back).
	TouchKeys(ctx context.Context, used map[string]time.Time) error
}

// ReceiptCursor is where a page of receipts ends: the next page starts
// after it.
type ReceiptCursor struct {
	CreatedAt time.Time
	RequestID string
}

// ReceiptQuery filters an organisation's receipts. Zero fields do not
// filter.
type ReceiptQuery struct {
	OrgID string
	// PersonID keeps the receipts of calls made by this person or with
	// their keys (a member's own usage).
	PersonID     string
	From, To     time.Time // created in [From, To)
	Mode         string
	KeyID        string
	Lane         Lane
	FinishReason string
	Capped       *bool
	Substituted  *bool
	After        *ReceiptCursor
	Limit        int
}

// ReceiptRow is one line of the receipts list.
type ReceiptRow struct {
	RequestID        string
	Mode             string
	ModeVersion      int
	Status           string
	Billed           Micros
	PromptTokens     int
	CompletionTokens int
	Rounds           *int
	Lane             Lane
	KeyID            string
	PayerKind        string
	PersonID         string
	FinishReason     string
	Substituted      bool
	LatencyMS        *int64
	CreatedAt        time.Time
}

// Capped reports whether the call was capped at its ceiling.
func (r *ReceiptRow) Capped() bool { return r.Status == "capped" }

// JournalQuery filters an organisation's journal. Zero fields do not
// filter.
type JournalQuery struct {
	OrgID    string
	Kind     string
	From, To time.Time
	// Before is the posting id a page starts below; 0 for the newest.
	Before int64
	Limit  int
}

// JournalRow is one posting as the organisation's balance saw it.
type JournalRow struct {
	PostingID int64
	Kind      string
	Memo      string
	// Amount is what the posting moved into (positive) or out of
	// (negative) the organisation's balance.
	Amount    Micros
	CreatedAt time.Time
}

// SpendQuery selects spend aggregates.
type SpendQuery struct {
	OrgID    string
	From, To time.Time // days, UTC
	// PersonID keeps one person's spend (their keys' and sessions').
	PersonID string
	// By is SpendByMode or SpendByKey, and Top how many labels a
	// SpendSeries keeps apart, for SpendSeries.
	By  string
	Top int
}

// What a SpendSeries sums by. By key, a test run's or certification's
// spend has the label SpendTest or SpendCertify, and a call made without
// a key (signed in) the label "".
const (
	SpendByMode = "mode"
	SpendByKey  = "key"
)

// SpendSeries is spend summed by one label (a mode, a key) over days.
type SpendSeries struct {
	// Totals are every label's sums, largest first.
	Totals []*SpendPoint
	// Days are the sums per day of the top labels, and of the rest under
	// Other true, oldest first.
	Days []*SpendPoint
}

// SpendPoint is a label's charges and spend, on a Day or in total.
type SpendPoint struct {
	Day     time.Time
	Label   string
	Other   bool
	Charges int64
	Billed  Micros
}

// Kinds of spend in the aggregates.
const (
	SpendCall    = "call"
	SpendTest    = "test"
	SpendCertify = "certify"
)

// DaySpend is the spend of one day (UTC) by one key, mode, person and
// kind: how many charges and their sum net of refunds.
type DaySpend struct {
	Day      time.Time
	KeyID    string
	Mode     string
	PersonID string
	Kind     string
	Charges  int64
	Billed   Micros
}

// MoneyState is an organisation's money as its owners see it.
type MoneyState struct {
	Balance
	// ToppedUp is true once money was ever added; TrialExpiredAt is when
	// the unused trial credit was deducted (nil while it lasts), and
	// TrialEnds when it will be.
	ToppedUp       bool
	TrialExpiredAt *time.Time
	TrialEnds      time.Time
	// Verified organisations spend freely; an unverified one only up to
	// the activation allowance, of which Spent is used.
	Verified bool
	Spent    Micros
}

// KeyLimits are a key's limits a person may lower: nil leaves one as it
// is; zero means the deployment's default.
type KeyLimits struct {
	RPM            *int
	Concurrency    *int
	MaxInputTokens *int
}

// AuditCursor is where a page of the audit trail ends.
type AuditCursor struct {
	At time.Time
	ID int64
}

// AuditFilter selects a page of an organisation's audit trail, newest
// first. Zero fields do not filter.
type AuditFilter struct {
	OrgID    string
	Action   string
	ActorID  string
	From, To time.Time
	After    *AuditCursor
	Limit    int
}
