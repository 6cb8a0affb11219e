package pgstore

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/conclavehq/conclave/core"
)

// insertAuditSQL writes one audit row: org, actor kind, actor id, address,
// action, object, detail.
const insertAuditSQL = `INSERT INTO audit_log (org_id, actor_kind, actor_id, address, action, object, detail)
VALUES ($1, $2, $3, $4, $5, $6, $7)`

// queueAudit queues the audit row of a change, made by core.ActorOf(ctx),
// into b: sent with the change's own statements in one batch, it costs the
// change no round trip of its own, and commits or rolls back with it.
func queueAudit(ctx context.Context, b *pgx.Batch, orgID, action, object, detail string) {
	a := core.ActorOf(ctx)
	b.Queue(insertAuditSQL, orgID, a.Kind, a.ID, a.Address, action, object, detail)
}
