// Package jobs runs Conclave's durable background jobs on River
// (riverqueue/river), in the same PostgreSQL as everything else:
//
//   - trial expiry: deducts the unused part of an organisation's trial
//     credit once its trial period (30 days) is over, never taking money a
//     live hold reserved;
//   - hold sweep: releases the holds of calls whose process died (their
//     lease expired), frees those calls' concurrency slots and in-flight
//     idempotency claims, records an "abandoned" outcome, and deletes other
//     expired slot and claim leases;
//   - idempotency reap: deletes finished idempotency claims past their
//     retention;
//   - oauth sweep (oauth.go): deletes apps that registered themselves and
//     went unused past their retention, expired sign-in requests and
//     expired refresh tokens of the embedded authorization server;
//   - alert check and webhook deliveries (alerts.go): every
//     organisation's spend and balance against its alert thresholds, each
//     crossing recorded once a month and posted to its webhook by a job
//     of its own, retried with back-off;
//   - benchmark questions (bench.go): one job per question of a launched
//     test run or certification, inserted in the launch's transaction
//     (QuestionQueue) and worked on a queue of its own through
//     core/bench/runs.Executor, one organisation after another.
//
// The first three are periodic River jobs. Every replica runs a Runner;
// River elects one leader through Postgres to enqueue the periodic jobs,
// and any replica may work them. The work itself (internal/pgstore: ExpireTrials,
// SweepHolds, ReapIdempotencyKeys) is safe to run concurrently and twice, so
// a job retried after a crash, or run by hand (SweepNow, SweepHolds) while
// River runs it too, does no harm.
package jobs

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/conclavehq/conclave/internal/pgstore"
)

// SweepHolds runs the hold sweeper once, now, in this process: it releases
// every hold still held whose expiry is before at (zero: the database's
// clock) with its call's slots and in-flight claim, recording the call as
// abandoned, and deletes expired slot and claim leases. No grace is given.
// It is what the periodic hold-sweep job does, for tests and operators.
func SweepHolds(ctx context.Context, pool *pgxpool.Pool, at time.Time) (*pgstore.SweepResult, error) {
	return pgstore.New(pool).SweepHolds(ctx, &pgstore.SweepParams{At: at})
}

// ExpireTrials runs trial expiry once, now, in this process, as of at (zero:
// the database's clock) with the given trial period (zero:
// core.TrialPeriod).
func ExpireTrials(ctx context.Context, pool *pgxpool.Pool, at time.Time, period time.Duration) (*pgstore.ExpireTrialsResult, error) {
	return pgstore.New(pool).ExpireTrials(ctx, &pgstore.ExpireTrialsParams{At: at, Period: period})
}

// ReapIdempotencyKeys runs the idempotency reaper once, now, in this
// process: it deletes the finished claims last updated more than retention
// before at (zero: the database's clock) and returns how many.
func ReapIdempotencyKeys(ctx context.Context, pool *pgxpool.Pool, at time.Time, retention time.Duration) (int, error) {
	return pgstore.New(pool).ReapIdempotencyKeys(ctx, &pgstore.ReapParams{At: at, Retention: retention})
}
