package pgstore

import (
	"context"
	"github.com/conclavehq/conclave/core"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// SetDurableMarks replaces the statements SettleCall makes a settlement
// durable with (settle: in its own batch; confirm: when that one failed
// after the commit) and how long it tries to confirm, so tests can make a
// mark fail. Empty values keep the defaults.
func SetDurableMarks(s *Store, settle, confirm string, confirmFor time.Duration) {
	s.marks = durableMarks{settle: settle, confirm: confirm, confirmFor: confirmFor}
}

// JobQuery is the job statement of that name, for tests that look at its
// plan.
func JobQuery(name string) string { return jq(name) }

// Query is the statement of that name in queries.sql, for tests that look
// at its plan.
func Query(name string) string { return q(name) }

// MigrateTo applies the embedded migrations up to version and no further,
// as Migrate does, for tests of what a later migration does to the rows
// an earlier schema kept.
func MigrateTo(ctx context.Context, pool *pgxpool.Pool, version int) error {
	return migrate(ctx, pool, version)
}

// LostModeWrites is how many of s's mode changes found, at their
// conditional write, that another writer had changed the mode since read.
func LostModeWrites(s *Store) int64 { return s.lostModeWrites.Load() }

// SetAfterModeRead makes every mode change of s call f after it read the
// mode and before it writes, so a test can hold two writers at that point.
func SetAfterModeRead(s *Store, f func()) { s.afterModeRead = f }

// ReceiptsQuery and JournalQuery are the lists' queries and arguments
// (without the exec mode), for plan tests.
func ReceiptsQuery(q *core.ReceiptQuery) (string, []any) {
	sql, args := receiptsQuery(q)
	return sql, args[1:]
}

func JournalQuery(q *core.JournalQuery) (string, []any) {
	sql, args := journalQuery(q)
	return sql, args[1:]
}
