package genie

import (
	"context"
	"encoding/json"
	"time"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/access"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// Quotes: when the assistant recommends a run it attaches a quote — the
// run's kind and exact launch parameters, the price the launch endpoints'
// own rule gives it, the payer (the principal that asked: a key, or a
// person), and an expiry. approve_quote launches the quoted run once, at no
// more than the quoted price.

// QuoteStatus is where a quote stands. An open quote past its expiry is
// expired (Quote.StatusAt); the spec names launched, expired and already
// used.
type QuoteStatus string

// Quote statuses.
const (
	// QuoteOpen: made, not yet approved.
	QuoteOpen QuoteStatus = "open"
	// QuoteLaunched: approved, and its run launched (BatchID).
	QuoteLaunched QuoteStatus = "launched"
	// QuoteUsed: approved, and the approval ended without a run (the
	// launch was refused); approving it again is quote_already_used.
	QuoteUsed QuoteStatus = "used"
	// QuoteExpired: open past its expiry.
	QuoteExpired QuoteStatus = "expired"
)

// DefaultQuoteTTL is how long a quote may be approved unless configured.
const DefaultQuoteTTL = 15 * time.Minute

// Quote is a priced run the assistant recommended to one principal.
type Quote struct {
	// ID is "qt_" and a random part (core.NewID("qt")).
	ID    string
	OrgID string
	// Payer names the principal the quote was made for, who alone may
	// approve it: PayerOf(p).
	Payer string
	// Kind is test or certify; Request the launch body exactly as it will
	// be sent (a runs.TestRequest or runs.CertifyRequest as JSON, without
	// dry_run); Model the mode it names.
	Kind    runs.Kind
	Request json.RawMessage
	Model   string
	// Price is the quoted price: the dry run's Quote.Cost when it was made.
	Price core.Micros
	// Questions and Minutes are the dry run's, for the answer.
	Questions int
	Minutes   int
	Status    QuoteStatus
	// BatchID is the run an approval launched.
	BatchID string
	// ApprovedAt is when an approval was first recorded (QuoteStore.
	// ApproveQuote); zero while none was. An approved quote does not
	// expire: approving it again finds the run its first approval
	// launched, if it did (launch_failed).
	ApprovedAt time.Time
	CreatedAt  time.Time
	ExpiresAt  time.Time
}

// StatusAt is the quote's status at now: an open quote past its expiry,
// never approved, is expired.
func (q *Quote) StatusAt(now time.Time) QuoteStatus {
	if q.Status == QuoteOpen && q.ApprovedAt.IsZero() && !now.Before(q.ExpiresAt) {
		return QuoteExpired
	}
	return q.Status
}

// PayerOf names the principal p pays as: its API key ("key:ID"), else its
// person ("person:ID") — a person's sessions and connected apps are one
// payer, whose runs are charged to the organisation's balance.
func PayerOf(p *access.Principal) string {
	if p.Key != nil {
		return "key:" + p.Key.ID
	}
	if p.Person != nil {
		return "person:" + p.Person.ID
	}
	return ""
}

// QuoteStore keeps quotes in PostgreSQL.
type QuoteStore interface {
	// CreateQuote stores a new open quote.
	CreateQuote(ctx context.Context, q *Quote) error
	// Quote reads one of orgID's quotes; core.ErrNotFound for none.
	Quote(ctx context.Context, orgID, id string) (*Quote, error)
	// ApproveQuote records an approval of one of orgID's quotes at at: an
	// open quote not expired at at (or approved before) gets its
	// ApprovedAt, once. It returns the quote as it then stands, whatever
	// its status; core.ErrNotFound for none.
	ApproveQuote(ctx context.Context, orgID, id string, at time.Time) (*Quote, error)
	// SettleQuote records an approval's end on an open (or launched)
	// quote: launched with its batch, or used when the launch was refused.
	// A quote already launched keeps its batch.
	SettleQuote(ctx context.Context, orgID, id string, status QuoteStatus, batchID string) error
}

// Turn is one message of a conversation with the assistant.
type Turn struct {
	// Role is "user" (the caller's message) or "assistant" (the answer).
	Role    string
	Content string
	At      time.Time
}

// HistoryStore keeps the conversations with the assistant in PostgreSQL:
// one per organisation, payer (PayerOf) and mode — never shared with
// another key or person of the organisation.
type HistoryStore interface {
	// AppendTurns adds turns to the conversation of orgID, payer and
	// modeID, in order.
	AppendTurns(ctx context.Context, orgID, payer, modeID string, turns []Turn) error
	// Turns reads the newest limit turns of that conversation, oldest
	// first.
	Turns(ctx context.Context, orgID, payer, modeID string, limit int) ([]Turn, error)
	// ReapHistory deletes the turns written before before, and says how
	// many.
	ReapHistory(ctx context.Context, before time.Time) (int64, error)
}
