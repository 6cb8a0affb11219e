package pgstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/conclavehq/conclave/core"
)

// The outcome queries live here rather than in queries.sql so that this
// file is self-contained; they are ordinary named queries otherwise.
const (
	insertOutcomeSQL = `INSERT INTO call_outcomes (request_id, org_id, endpoint, status, reason)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (request_id) DO NOTHING`

	getOutcomeSQL = `SELECT request_id, org_id, endpoint, status, reason, created_at
  FROM call_outcomes WHERE request_id = $1 AND org_id = $2`
)

// RecordOutcome implements core.Outcomes.
func (s *Store) RecordOutcome(ctx context.Context, o *core.CallOutcome) error {
	switch {
	case o.RequestID == "":
		return errors.New("recording outcome: request id is empty")
	case o.OrgID == "":
		return errors.New("recording outcome: organisation is empty")
	case o.Endpoint == "" || o.Status == "" || o.Reason == "":
		return fmt.Errorf("recording outcome of %s: endpoint, status and reason are required", o.RequestID)
	}
	if _, err := s.pool.Exec(ctx, insertOutcomeSQL, o.RequestID, o.OrgID, o.Endpoint, string(o.Status), o.Reason); err != nil {
		return fmt.Errorf("recording outcome of %s: %w", o.RequestID, translate(err))
	}
	return nil
}

// GetOutcome implements core.Outcomes. The organisation is part of the
// query, so another organisation's outcome is never read.
func (s *Store) GetOutcome(ctx context.Context, orgID, requestID string) (*core.CallOutcome, error) {
	var o core.CallOutcome
	err := s.pool.QueryRow(ctx, getOutcomeSQL, requestID, orgID).Scan(&o.RequestID, &o.OrgID, &o.Endpoint, &o.Status, &o.Reason, &o.CreatedAt)
	if err != nil {
		return nil, translate(err)
	}
	return &o, nil
}

var _ core.Outcomes = (*Store)(nil)
