package pgstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// riverLockKey is the advisory lock taken while River's schema is migrated,
// so that replicas starting together apply each River migration once.
const riverLockKey int64 = 0x636c72697665726d // "clriverm"

// MigrateRiver applies the migrations of River (the durable job queue,
// internal/jobs) that the database lacks, beside Conclave's own (Migrate).
// River runs each migration in its own transaction (one adds an enum value
// the next uses); a session advisory lock, held on a connection of its own
// meanwhile, makes replicas starting together apply each exactly once. The
// pool needs two connections. It is idempotent.
func MigrateRiver(ctx context.Context, pool *pgxpool.Pool) error {
	migrator, err := riverMigrator(riverpgxv5.New(pool))
	if err != nil {
		return err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrating the job queue's schema: acquiring a connection: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", riverLockKey); err != nil {
		return fmt.Errorf("migrating the job queue's schema: taking the lock: %w", err)
	}
	defer func() {
		// A fresh context: the lock must be given back even when ctx is done.
		_, _ = conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", riverLockKey)
	}()
	if _, err := migrator.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("migrating the job queue's schema: %w", err)
	}
	return nil
}

// RiverMigrationsDigest is the hex SHA-256 of River's embedded migrations,
// in order. Test harnesses key their template databases by it, beside
// MigrationsDigest.
func RiverMigrationsDigest() string {
	migrator, err := riverMigrator(riverpgxv5.New(nil))
	if err != nil {
		panic(err)
	}
	h := sha256.New()
	for _, m := range migrator.AllVersions() {
		fmt.Fprintf(h, "%d\x00%s\x00%s\x00", m.Version, m.Name, m.SQLUp)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func riverMigrator(d *riverpgxv5.Driver) (*rivermigrate.Migrator[pgx.Tx], error) {
	m, err := rivermigrate.New(d, &rivermigrate.Config{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("preparing the job queue's migrations: %w", err)
	}
	return m, nil
}
