package core

import (
	"context"
	"time"
)

// OutcomeStatus is the status of a CallOutcome: one short word, shown to
// the caller.
type OutcomeStatus string

// Statuses of a CallOutcome (see also OutcomeAbandoned).
const (
	// OutcomeEstimated: POST /v1/estimate classified the prompt; no panel
	// was convened.
	OutcomeEstimated OutcomeStatus = "estimated"
	// OutcomeFailed: the call was admitted but ended before it could be
	// billed (no seat could run, the deliberation failed, or it could not be
	// recorded); nothing was billed.
	OutcomeFailed OutcomeStatus = "failed"
	// OutcomeRefused: the call was admitted but refused before any seat
	// fired (the balance could not cover its ceiling, say).
	OutcomeRefused OutcomeStatus = "refused"
)

// CallOutcome is what became of a call that has no receipt: an estimate, or
// a call that ended before a panel was convened or billed. GET
// /v1/receipts answers such a request id with the receipt-unavailable form
// (status and reason) instead of 404.
type CallOutcome struct {
	RequestID string
	OrgID     string
	// Endpoint is the route the call came in on, e.g. "/v1/estimate".
	Endpoint string
	// Status is OutcomeEstimated, OutcomeFailed, OutcomeRefused,
	// OutcomeAbandoned or another short word; it is shown to the caller.
	Status OutcomeStatus
	// Reason is one sentence for the caller on why there is no receipt.
	Reason    string
	CreatedAt time.Time
}

// Outcomes holds what became of calls that have no receipt (CallOutcome).
// Every method is safe for concurrent use.
type Outcomes interface {
	// RecordOutcome stores o unless an outcome for o.RequestID is already
	// stored, in which case it changes nothing and returns nil: the first
	// outcome of a request stands. An outcome without its request id,
	// organisation, endpoint, status or reason, or of an organisation that
	// does not exist, is refused with an error.
	RecordOutcome(ctx context.Context, o *CallOutcome) error
	// GetOutcome returns the organisation's outcome for a request; an id
	// with none, or another organisation's, returns ErrNotFound.
	GetOutcome(ctx context.Context, orgID, requestID string) (*CallOutcome, error)
}
