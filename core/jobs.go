package core

import "time"

// The background jobs' part of the domain: the trial credit's expiry and the
// outcome recorded for a call whose process died before it settled.

// TrialPeriod is how long a new organisation's trial credit lasts: after it,
// the unused part is deducted (spec: "unused amount deducted after 30 days").
const TrialPeriod = 30 * 24 * time.Hour

// PostingTrialExpiry is the posting that deducts the unused trial credit:
// AccountOrgBalance −amount, AccountTrialIssued +amount. It is the reverse of
// the PostingTrialGrant for the part never spent.
const PostingTrialExpiry = "trial_expiry"

// OutcomeAbandoned is the status of the CallOutcome the hold sweeper records
// for a call whose hold expired while still held: its process stopped
// (crashed, was killed, lost the database) before it settled, so the caller
// never got an answer and nothing is billed. Holds are placed by chat
// completions only.
const OutcomeAbandoned OutcomeStatus = "abandoned"

// The reason and endpoint of an OutcomeAbandoned outcome.
const (
	OutcomeAbandonedReason   = "the call's process stopped before it settled; nothing was billed"
	OutcomeAbandonedEndpoint = "/v1/chat/completions"
)
