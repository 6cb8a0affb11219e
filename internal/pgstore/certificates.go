package pgstore

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/conclavehq/conclave/core"
	"github.com/conclavehq/conclave/core/bench/runs"
)

// The run pages' reads and the certificates' publication (runs.ListStore):
// none of it is on a billed call's path.

// listBatchesSQL reads an organisation's batches, newest first, without
// their plan, quote, result or per-bucket progress.
const listBatchesSQL = `SELECT id::text, kind, model, mode_id, mode_key, mode_version, status, total, answered, judged, failed,
       cancelled, billed_micros, refunded_micros, coalesce(attempt, 0), certification, coalesce(failure, ''), created_at,
       started_at, finished_at, person_id
  FROM batches WHERE org_id = $1 ORDER BY created_at DESC, id DESC LIMIT $2`

// ListBatches implements runs.ListStore.
func (s *Batches) ListBatches(ctx context.Context, orgID string, limit int) ([]*runs.Batch, error) {
	rows, err := s.pool.Query(ctx, listBatchesSQL, orgID, limit)
	if err != nil {
		return nil, translate(err)
	}
	defer rows.Close()
	var out []*runs.Batch
	for rows.Next() {
		b := &runs.Batch{OrgID: orgID}
		var cert []byte
		if err := rows.Scan(&b.ID, &b.Kind, &b.Model, &b.ModeID, &b.ModeKey, &b.ModeVersion, &b.Status, &b.Progress.Total,
			&b.Progress.Answered, &b.Progress.Judged, &b.Progress.Failed, &b.Progress.Cancelled, &b.Billed, &b.Refunded,
			&b.Attempt, &cert, &b.Failure, &b.CreatedAt, &b.StartedAt, &b.FinishedAt, &b.PersonID); err != nil {
			return nil, translate(err)
		}
		if cert != nil {
			if err := json.Unmarshal(cert, &b.Certification); err != nil {
				return nil, fmt.Errorf("reading batch %s: its certification: %w", b.ID, err)
			}
		}
		out = append(out, b)
	}
	return out, translate(rows.Err())
}

// CertificatePublicID implements runs.ListStore.
func (s *Batches) CertificatePublicID(ctx context.Context, orgID, batchID string) (string, error) {
	var id *string
	err := s.pool.QueryRow(ctx, `SELECT public_id FROM batches WHERE id = $1 AND org_id = $2 AND kind = 'certify'`,
		batchID, orgID).Scan(&id)
	if err != nil {
		return "", translate(err)
	}
	if id == nil {
		return "", nil
	}
	return *id, nil
}

// publishCertificateSQL sets (or, with $3 NULL, clears) a complete
// certification's public id and writes its audit row, in one statement:
// a certification that is not the organisation's, or not complete, changes
// nothing and writes no row.
const publishCertificateSQL = `WITH b AS (
  UPDATE batches SET public_id = $3 WHERE id = $2 AND org_id = $1 AND kind = 'certify' AND status = 'complete'
  RETURNING id::text)
INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
SELECT $1, $4, $5, $6, $7, b.id, $8 FROM b
RETURNING object`

// PublishCertificate implements runs.ListStore. It is audited as
// core.AuditOrgSettings, the owners' change it is.
func (s *Batches) PublishCertificate(ctx context.Context, orgID, batchID, publicID string) error {
	a := core.ActorOf(ctx)
	var id *string
	detail := "certificate unpublished"
	if publicID != "" {
		id, detail = &publicID, "certificate published at a public address"
	}
	var object string
	err := s.pool.QueryRow(ctx, publishCertificateSQL, orgID, batchID, id, a.Kind, a.ID, a.Address,
		core.AuditOrgSettings, detail).Scan(&object)
	return translate(err)
}

// PublishedCertificate implements runs.ListStore.
func (s *Batches) PublishedCertificate(ctx context.Context, publicID string) (*runs.Batch, error) {
	var id string
	err := s.pool.QueryRow(ctx, `SELECT id::text FROM batches WHERE public_id = $1`, publicID).Scan(&id)
	if err != nil {
		return nil, translate(err)
	}
	return s.batch(ctx, id, "")
}

var _ runs.ListStore = (*Batches)(nil)
